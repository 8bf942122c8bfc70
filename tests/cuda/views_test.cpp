// Views of memory through another scalar type (frontend/cuda/memory.h), the
// inline PTX the lifter models (ptx.h) and the reference device the host
// code's queries answer for (device.h), apart from any kernel.
#include "frontend/cuda/device.h"
#include "frontend/cuda/memory.h"
#include "frontend/cuda/ptx.h"

#include <gtest/gtest.h>

using namespace shardproof::frontend::cuda;

TEST(CudaViews, AViewCoversWholeElementsOrIsNotModelled) {
  Buffer halves;
  halves.format = "float16";
  halves.element_bytes = 2;
  EXPECT_EQ(cells_covered(halves, 8), 4);  // a float2
  EXPECT_EQ(cells_covered(halves, 16), 8); // a uint4
  Buffer floats;
  floats.format = "float32";
  floats.element_bytes = 4;
  EXPECT_FALSE(cells_covered(floats, 2)); // a half of a float
  EXPECT_FALSE(cells_covered(floats, 6));
  EXPECT_FALSE(misaligned(halves, 4, 8)); // byte 8
  EXPECT_TRUE(misaligned(halves, 2, 8));  // byte 4 for an 8-byte float2
  EXPECT_TRUE(misaligned(floats, 3, 16));
}

TEST(CudaViews, ALocalTakesTheFormatOfWhatIsCopiedIntoItWhole) {
  Buffer local;
  local.format = "float32";
  local.element_bytes = 4;
  local.cells.resize(4);
  retype(local, "float16", 2, 8);
  EXPECT_EQ(local.format, "float16");
  EXPECT_EQ(local.cells.size(), 8u);
  EXPECT_EQ(local.writes.size(), 8u);
  Bits bits{"float16", "float", {"k.cu", 3, 5}, {Value{}, Value{}}};
  EXPECT_EQ(describe(bits), "the bits of 2 float16 elements read as 'float' at k.cu:3:5");
}

TEST(CudaPtx, DeepSpeedsVectorLoadsAndStoresParse) {
  std::string why;
  auto load = parse_ptx("ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];\n", why);
  ASSERT_TRUE(load) << why;
  ASSERT_EQ(load->size(), 1u);
  EXPECT_EQ((*load)[0].op, PtxInstruction::Op::Load);
  EXPECT_EQ((*load)[0].values, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((*load)[0].address, 4);
  EXPECT_EQ((*load)[0].bytes, 4);
  auto store = parse_ptx("st.global.wb.v2.u32 [%0], {%1, %2};\n", why);
  ASSERT_TRUE(store) << why;
  EXPECT_EQ((*store)[0].op, PtxInstruction::Op::Store);
  EXPECT_EQ((*store)[0].address, 0);
  EXPECT_EQ((*store)[0].values, (std::vector<int>{1, 2}));
  auto half = parse_ptx("ld.global.cg.u16 {%0}, [%1];\n", why);
  ASSERT_TRUE(half) << why;
  EXPECT_EQ((*half)[0].bytes, 2);
}

TEST(CudaPtx, ThePredicatedLoadZeroesItsOutputsFirst) {
  std::string why;
  auto program = parse_ptx("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %3, 0;\n"
                           "\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n"
                           "\t@p ld.global.v2.u32 {%0, %1}, [%2];\n}\n",
                           why);
  ASSERT_TRUE(program) << why;
  ASSERT_EQ(program->size(), 4u);
  EXPECT_EQ((*program)[0].op, PtxInstruction::Op::SetPredicate);
  EXPECT_EQ((*program)[0].tested, 3);
  EXPECT_EQ((*program)[1].op, PtxInstruction::Op::Zero);
  EXPECT_TRUE((*program)[3].predicated);
}

TEST(CudaPtx, OtherInstructionsAreNamed) {
  std::string why;
  EXPECT_FALSE(parse_ptx("mov.f32 %0, %1;", why));
  EXPECT_EQ(why, "the PTX instruction 'mov.f32 %0, %1'");
  EXPECT_FALSE(parse_ptx("ld.global.v4.u32 {%0, %1}, [%4];", why)); // 2 of 4 words
  EXPECT_FALSE(parse_ptx("", why));
}

TEST(CudaDevice, TheReferenceDeviceIsAnH100Sxm) {
  EXPECT_NE(reference_device_name().find("H100 SXM"), std::string_view::npos);
  EXPECT_EQ(device_property_triple("maxGridSize"),
            (std::array<std::int64_t, 3>{2147483647, 65535, 65535}));
  EXPECT_EQ(device_property("maxThreadsPerBlock"), 1024);
  EXPECT_EQ(device_property("multiProcessorCount"), 132);
  EXPECT_EQ(device_property("sharedMemPerBlockOptin"), 232448);
  EXPECT_EQ(device_property("major"), 9);
  EXPECT_FALSE(device_property("clockRate")); // not given: the host run says so
  EXPECT_EQ(device_attribute("cudaDevAttrMaxGridDimY"), 65535);
  EXPECT_EQ(device_attribute("cudaDevAttrMultiProcessorCount"), 132);
  EXPECT_FALSE(device_attribute("cudaDevAttrClockRate"));
}
