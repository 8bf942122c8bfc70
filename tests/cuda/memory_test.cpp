// The lifter's race rule (frontend/cuda/memory.h) and shuffle lanes
// (frontend/cuda/warp.h), apart from any kernel.
#include "frontend/cuda/memory.h"
#include "frontend/cuda/warp.h"

#include <gtest/gtest.h>

using namespace shardproof::frontend::cuda;

namespace {
Buffer buffer_of(std::size_t n) {
  Buffer b;
  b.name = "s";
  b.cells.resize(n);
  b.last_write.resize(n);
  b.reads.resize(n);
  b.earlier_block_read.resize(n);
  b.writes.resize(n);
  return b;
}

// Thread `thread` of block `block` in `phase` (warp phase 0 unless given).
Access at(int block, int thread, int phase, int warp_phase = 0, bool atomic = false) {
  Access a;
  a.block = block;
  a.thread = thread;
  a.phase = phase;
  a.warp = thread / kWarpSize;
  a.warp_phase = warp_phase;
  a.atomic = atomic;
  return a;
}
} // namespace

TEST(CudaMemory, OrderedByProgramOrderBarriersAndSyncwarpOnly) {
  EXPECT_TRUE(ordered(at(0, 3, 0), at(0, 3, 0)));         // one thread
  EXPECT_TRUE(ordered(at(0, 3, 0), at(0, 4, 1)));         // a barrier between
  EXPECT_TRUE(ordered(at(0, 3, 0, 0), at(0, 4, 0, 1)));   // __syncwarp, one warp
  EXPECT_FALSE(ordered(at(0, 3, 0, 0), at(0, 40, 0, 1))); // __syncwarp, two warps
  EXPECT_FALSE(ordered(at(0, 3, 0), at(0, 4, 0)));
  EXPECT_FALSE(ordered(at(0, 3, 0), at(1, 3, 5))); // blocks are never ordered
}

TEST(CudaMemory, AWriteThenAnotherThreadsReadInOnePhaseIsARace) {
  Buffer b = buffer_of(4);
  EXPECT_FALSE(record_access(b, 2, at(0, 1, 0), true));
  auto race = record_access(b, 2, at(0, 5, 0), false);
  ASSERT_TRUE(race);
  EXPECT_EQ(race->other.thread, 1);
  EXPECT_TRUE(race->other_write);
  EXPECT_FALSE(record_access(b, 2, at(0, 5, 1), false)) << "after a barrier";
}

TEST(CudaMemory, ManyReadersThenOneOfThemWritingIsARace) {
  Buffer b = buffer_of(1);
  for (int t = 0; t < 100; ++t)
    EXPECT_FALSE(record_access(b, 0, at(0, t, 0), false));
  auto race = record_access(b, 0, at(0, 0, 0), true);
  ASSERT_TRUE(race);
  EXPECT_NE(race->other.thread, 0);
  EXPECT_FALSE(race->other_write);
}

TEST(CudaMemory, AReadOfAnEarlierBlockRacesWithAWriteOfALaterOne) {
  Buffer b = buffer_of(1);
  EXPECT_FALSE(record_access(b, 0, at(0, 7, 0), false));
  EXPECT_FALSE(record_access(b, 0, at(1, 0, 0), false));
  EXPECT_FALSE(record_access(b, 0, at(1, 0, 3), false));
  auto race = record_access(b, 0, at(1, 0, 3), true);
  ASSERT_TRUE(race);
  EXPECT_EQ(race->other.block, 0);
}

TEST(CudaMemory, AtomicsRaceOnlyWithPlainAccesses) {
  Buffer b = buffer_of(1);
  EXPECT_FALSE(record_access(b, 0, at(0, 1, 0, 0, true), true));
  EXPECT_FALSE(record_access(b, 0, at(0, 2, 0, 0, true), true));
  EXPECT_TRUE(record_access(b, 0, at(0, 3, 0), false));
}

TEST(CudaWarp, ShuffleSourcesFollowTheProgrammingGuide) {
  EXPECT_EQ(shuffle_source(Shuffle::Xor, 9, 8, 8), 1); // an earlier segment: allowed
  EXPECT_EQ(shuffle_source(Shuffle::Xor, 1, 8, 8), 1); // a later one: its own value
  EXPECT_EQ(shuffle_source(Shuffle::Down, 6, 3, 8), 6);
  EXPECT_EQ(shuffle_source(Shuffle::Down, 4, 3, 8), 7);
  EXPECT_EQ(shuffle_source(Shuffle::Up, 10, 3, 8), 10);
  EXPECT_EQ(shuffle_source(Shuffle::Up, 31, 16, 32), 15);
  EXPECT_EQ(shuffle_source(Shuffle::Idx, 13, -1, 8), 15); // wraps within the segment
  EXPECT_EQ(shuffle_source(Shuffle::Idx, 13, 33, 32), 1);
}

TEST(CudaWarp, WidthsAndMasksOutsideTheGuideAreNotModelled) {
  EXPECT_TRUE(shuffle_modelled(Shuffle::Xor, 16, 32));
  EXPECT_FALSE(shuffle_modelled(Shuffle::Xor, 32, 32));
  EXPECT_FALSE(shuffle_modelled(Shuffle::Xor, -1, 32));
  EXPECT_FALSE(shuffle_modelled(Shuffle::Down, 1, 12));
  EXPECT_FALSE(shuffle_modelled(Shuffle::Idx, 1, 64));
  EXPECT_FALSE(shuffle_modelled(Shuffle::Up, -2, 8));
  EXPECT_EQ(shuffle_kind("__shfl_down_sync"), Shuffle::Down);
  EXPECT_EQ(shuffle_kind("__shfl_down"), std::nullopt);
}
