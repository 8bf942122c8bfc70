// The `// shardproof:` annotations of a .cu file (frontend/cuda/annotations.h).
#include "frontend/cuda/annotations.h"

#include <gtest/gtest.h>

using namespace shardproof;
using frontend::cuda::read_annotations;

namespace {
frontend::cuda::Annotations read(std::vector<std::string> lines) {
  return read_annotations("k.cu", lines);
}
} // namespace

TEST(CudaAnnotations, ReadsALaunchItsArgsAndItsReference) {
  auto a =
      read({"#include <cuda_runtime.h>",
            "// shardproof: launch softmax<float, 32> grid=(4,2) block=(32) shared=256",
            "//   shardproof: arg x = float32[4, 64]",
            "// shardproof: arg scale = 0.125f", "// shardproof: arg n = 64",
            "// shardproof: reference out = torch.softmax(x * scale, dim=-1)",
            "// shardproof: arg out = bfloat16[4,64]"});
  ASSERT_FALSE(a.error) << a.error->message;
  ASSERT_EQ(a.launches.size(), 1u);
  const auto &l = a.launches[0];
  EXPECT_EQ(l.callee(), "softmax<float, 32>");
  EXPECT_EQ(l.loc.line, 2);
  EXPECT_EQ(l.grid, (std::array<int, 3>{4, 2, 1}));
  EXPECT_EQ(l.block, (std::array<int, 3>{32, 1, 1}));
  EXPECT_EQ(l.shared_bytes, 256);
  ASSERT_EQ(l.args.size(), 4u);
  EXPECT_EQ(l.args[0].shape, (ir::Shape{4, 64}));
  EXPECT_EQ(l.args[0].buffer_type, ir::DType::Float32);
  EXPECT_EQ(l.args[1].scalar, "0.125");
  EXPECT_EQ(l.args[2].scalar, "64");
  EXPECT_EQ(l.args[3].buffer_type, ir::DType::BFloat16);
  EXPECT_EQ(l.output, "out");
  EXPECT_EQ(l.reference, "torch.softmax(x * scale, dim=-1)");
  EXPECT_EQ(l.reference_loc.line, 6);
}

TEST(CudaAnnotations, SeveralLaunchesEachTakeTheirOwnArgs) {
  auto a =
      read({"// shardproof: launch k1 grid=(1) block=(8)",
            "// shardproof: arg x = float32[8]", "// shardproof: reference x = x * 2",
            "// shardproof: launch k2 grid=(1) block=(8)",
            "// shardproof: arg y = float16[8]", "// shardproof: reference y = y"});
  ASSERT_FALSE(a.error) << a.error->message;
  ASSERT_EQ(a.launches.size(), 2u);
  EXPECT_EQ(a.launches[1].args.size(), 1u);
  EXPECT_EQ(a.launches[1].args[0].name, "y");
}

struct Malformed {
  std::vector<std::string> lines;
  int line;
  std::string message;
};

class CudaMalformedAnnotation : public ::testing::TestWithParam<Malformed> {};

TEST_P(CudaMalformedAnnotation, IsAnErrorAtItsLine) {
  auto a = read(GetParam().lines);
  ASSERT_TRUE(a.error);
  EXPECT_TRUE(a.launches.empty());
  EXPECT_EQ(a.error->loc.file, "k.cu");
  EXPECT_EQ(a.error->loc.line, GetParam().line);
  EXPECT_EQ(a.error->message, "malformed shardproof annotation: " + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaMalformedAnnotation,
    ::testing::Values(
        Malformed{{"", "// shardproof: launch k grid=(1) block=(32 threads)"},
                  2,
                  "block=(32 threads) is not (X[,Y[,Z]])"},
        Malformed{{"// shardproof: launch k grid=(1) block=(64,32)"},
                  1,
                  "block=(64,32) has 2048 threads (CUDA allows at most 1024, and at most "
                  "64 along z)"},
        Malformed{{"// shardproof: launch k grid=(0) block=(1)"},
                  1,
                  "grid '0' is not a positive integer"},
        Malformed{{"// shardproof: launch k block=(1)"},
                  1,
                  "expected 'launch KERNEL[<TEMPLATE ARGS>] grid=(X[,Y[,Z]]) "
                  "block=(X[,Y[,Z]]) [shared=BYTES]'"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: arg x = float8[4]"},
                  2,
                  "unknown buffer dtype 'float8' (float32, float16, bfloat16, int32 or "
                  "int64)"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: arg x = float32[4,-1]"},
                  2,
                  "buffer shape [4,-1] is not a list of positive integers"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: arg n = sixty"},
                  2,
                  "'sixty' is neither DTYPE[D0,...], a number, rank nor ptrs(BUFFER)"},
        Malformed{{"// shardproof: arg x = float32[4]"},
                  1,
                  "'arg' before any 'launch' annotation"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: arg x = float32[4]"},
                  1,
                  "kernel 'k' has no 'reference OUT = ...' annotation"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: arg n = 4", "// shardproof: reference n = n * 2"},
                  1,
                  "reference output 'n' is not a buffer arg of kernel 'k'"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: lunch k grid=(1) block=(1)"},
                  2,
                  "unknown annotation 'lunch' (launch, ranks, arg or reference)"},
        Malformed{
            {"// shardproof: launch k grid=(1) block=(1)", "// shardproof: ranks 9"},
            2,
            "ranks 9 is not between 2 and 8"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: arg x = float32[4] per-rank",
                   "// shardproof: reference x = x"},
                  1,
                  "arg 'x' is per rank, but kernel 'k' has no 'ranks N' annotation"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)", "// shardproof: ranks 2",
                   "// shardproof: arg x = float32[4]", "// shardproof: arg p = ptrs(x)",
                   "// shardproof: reference x = x"},
                  1,
                  "ptrs(x) of arg 'p' does not name a per-rank buffer arg"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: arg x = float32[4] zeros"},
                  2,
                  "'zeros' is for int32 or int64 buffers (flags)"},
        Malformed{{"// shardproof: launch k grid=(1) block=(1)",
                   "// shardproof: arg x = float32[4] per-ranks"},
                  2,
                  "unknown word 'per-ranks' after buffer 'x' (per-rank or zeros)"}));

TEST(CudaAnnotations, ReadsAMultiRankLaunch) {
  auto a = read(
      {"// shardproof: launch all_reduce<2> grid=(1) block=(4)", "// shardproof: ranks 2",
       "// shardproof: arg data = float32[6] per-rank",
       "// shardproof: arg peers = ptrs(data)",
       "// shardproof: arg flags = int32[2,2] per-rank zeros",
       "// shardproof: arg rank = rank", "// shardproof: arg out = float32[6] per-rank",
       "// shardproof: reference out = data.sum(0)"});
  ASSERT_FALSE(a.error) << a.error->message;
  const auto &l = a.launches.at(0);
  EXPECT_EQ(l.ranks, 2);
  EXPECT_TRUE(l.arg("data")->per_rank);
  EXPECT_EQ(l.reference_shape(*l.arg("data")), (ir::Shape{2, 6}));
  EXPECT_EQ(l.arg("peers")->pointers_to, "data");
  EXPECT_FALSE(l.arg("peers")->is_buffer());
  EXPECT_EQ(l.arg("flags")->concrete, std::vector<std::int64_t>(4, 0));
  EXPECT_TRUE(l.arg("flags")->per_rank);
  EXPECT_TRUE(l.arg("rank")->is_rank);
  EXPECT_EQ(l.reference_shape(*l.arg("flags")), (ir::Shape{2, 2, 2}));
}
