// The kernel profiles (frontend/cuda/profiles.h): which launches a host
// gives they cover.
#include "frontend/cuda/profiles.h"

#include <gtest/gtest.h>

namespace cuda = shardproof::frontend::cuda;

namespace {

// apex's fused_rope_forward as its dispatcher calls it: [s, b, h, d] src and
// dst with the given strides (input's, then output's).
struct Rope {
  cuda::KernelSignature kernel{"fused_rope_forward",
                               {},
                               {"scalar_t"},
                               {"h", "d", "d2", "stride_s", "stride_b", "stride_h",
                                "stride_d", "o_stride_s", "o_stride_b", "o_stride_h",
                                "o_stride_d", "src", "freqs", "dst"}};

  std::optional<cuda::KernelLaunch> at(int s, int b, int h, int d, int d2,
                                       std::array<int, 4> strides, std::string &why) {
    const cuda::KernelProfile *profile = cuda::profile_for(kernel);
    EXPECT_NE(profile, nullptr);
    cuda::HostChoice choice;
    choice.template_args = {"c10::Half"};
    choice.grid = {s, b, 1};
    choice.block = {32, 4, 1};
    std::vector<std::int64_t> ints{h, d, d2};
    for (int copy = 0; copy < 2; ++copy)
      ints.insert(ints.end(), strides.begin(), strides.end());
    for (std::size_t i = 0; i < ints.size(); ++i)
      choice.ints[kernel.params[i]] = ints[i];
    return profile->complete(kernel, choice, why);
  }
};

TEST(CudaProfiles, RopeTakesAnyStrideOfADimensionOfSizeOne) {
  // As the dispatcher is run: s = b = h = 1 with their strides 1, d = d2 = 2.
  std::string why;
  auto launch = Rope{}.at(1, 1, 1, 2, 2, {1, 1, 1, 1}, why);
  ASSERT_TRUE(launch) << why;
  EXPECT_EQ(launch->output, "dst");
}

TEST(CudaProfiles, RopeRefusesAStrideThatLeavesGaps) {
  std::string why;
  EXPECT_FALSE(Rope{}.at(1, 1, 2, 2, 2, {1, 1, 1, 1}, why)); // stride_h 1 for h = 2
  EXPECT_NE(why.find("contiguous"), std::string::npos) << why;
  EXPECT_FALSE(Rope{}.at(1, 1, 1, 2, 2, {1, 1, 1, 2}, why)); // stride_d 2
}

TEST(CudaProfiles, RopeRefusesAnOddRotaryDimension) {
  std::string why;
  EXPECT_FALSE(Rope{}.at(1, 1, 1, 2, 1, {1, 1, 1, 1}, why));
  EXPECT_NE(why.find("even d2"), std::string::npos) << why;
}

} // namespace
