// Multi-rank launches (frontend/cuda/ranks.h) without clang: what orders
// two units' accesses (flags after fences, barriers around them), and the
// scheduler that runs units one at a time until they wait.
#include "frontend/cuda/ranks.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace shardproof::frontend::cuda;

namespace {

constexpr int kData = 0, kFlags = 1;

Access at(int unit, int thread, int phase) {
  Access a;
  a.block = unit;
  a.thread = thread;
  a.phase = phase;
  return a;
}

// Unit `from` sets flag `flag` in phase `phase` by thread 0 (after a fence
// of `fence` scope, if any), and unit `to` reads it in phase `phase`.
void signal(RankOrder &order, int from, int to, int phase, std::int64_t flag,
            std::optional<bool> system_fence) {
  order.enter(from);
  if (system_fence)
    order.fence(0, phase, *system_fence);
  EXPECT_FALSE(order.access(kFlags, 8, flag, at(from, 0, phase), true, true));
  order.enter(to);
  EXPECT_FALSE(order.access(kFlags, 8, flag, at(to, 0, phase), false, true));
}

} // namespace

TEST(RankOrder, AWriteAndAPeersReadWithNoFlagRace) {
  RankOrder order(2, 1);
  order.enter(0);
  EXPECT_FALSE(order.access(kData, 4, 3, at(0, 1, 2), true, false));
  order.enter(1);
  auto race = order.access(kData, 4, 3, at(1, 2, 2), false, false);
  ASSERT_TRUE(race);
  EXPECT_EQ(race->other.block, 0);
  EXPECT_EQ(race->other.thread, 1);
  EXPECT_TRUE(race->other_write);
}

// Rank 0 writes an element in `write_phase`, sets a flag in phase 3 (after
// a fence of `fence` scope, if any), rank 1 waits for it in phase 3 and
// reads the element in `read_phase`.
struct FlagCase {
  const char *what;
  int write_phase;
  std::optional<bool> fence; // __threadfence_system() (true) or __threadfence()
  int read_phase;
  bool races;
};

class RankOrderFlag : public ::testing::TestWithParam<FlagCase> {};

TEST_P(RankOrderFlag, OrdersOnlyWhatCameBeforeTheBarrierForWhatComesAfter) {
  const FlagCase &c = GetParam();
  RankOrder order(2, 1);
  order.enter(0);
  EXPECT_FALSE(order.access(kData, 4, 3, at(0, 1, c.write_phase), true, false));
  signal(order, 0, 1, 3, 0, c.fence);
  EXPECT_EQ(order.access(kData, 4, 3, at(1, 2, c.read_phase), false, false).has_value(),
            c.races)
      << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RankOrderFlag,
    ::testing::Values(
        FlagCase{"the reader's phase after its barrier is ordered", 2, true, 4, false},
        FlagCase{"the reader's own phase is not ordered by the wait", 2, true, 3, true},
        FlagCase{"a write in the flag's own phase is not released", 3, true, 4, true},
        FlagCase{"a flag set without a fence orders nothing", 2, std::nullopt, 4, true},
        FlagCase{"a device fence does not order another rank", 2, false, 4, true}));

TEST(RankOrder, ADeviceFenceOrdersBlocksOfOneRankButNotRanks) {
  RankOrder order(2, 2); // units 0, 1: rank 0; units 2, 3: rank 1
  order.enter(0);
  EXPECT_FALSE(order.access(kData, 4, 3, at(0, 1, 2), true, false));
  signal(order, 0, 1, 3, 0, false);
  EXPECT_FALSE(order.access(kData, 4, 3, at(1, 2, 4), false, false));
  signal(order, 0, 2, 3, 1, false);
  EXPECT_TRUE(order.access(kData, 4, 3, at(2, 2, 4), false, false));
}

TEST(RankOrder, OrderIsTransitiveThroughAThirdRank) {
  RankOrder order(3, 1);
  order.enter(0);
  EXPECT_FALSE(order.access(kData, 4, 3, at(0, 1, 2), true, false));
  signal(order, 0, 1, 3, 0, true);
  signal(order, 1, 2, 5, 1, true); // rank 1 passes on what it acquired
  EXPECT_FALSE(order.access(kData, 4, 3, at(2, 0, 6), true, false));
}

TEST(RankOrder, AFlagsReadDoesNotRaceWithItsWriteAPlainOrSecondWriteDoes) {
  RankOrder order(2, 1);
  order.enter(0);
  EXPECT_FALSE(order.access(kFlags, 8, 0, at(0, 0, 1), true, true));
  order.enter(1);
  EXPECT_FALSE(order.access(kFlags, 8, 0, at(1, 0, 1), false, true));
  // A plain write of a flag races with a peer's flag write, and so does a
  // second flag write nothing orders (the value a spin sees would depend on
  // the schedule).
  EXPECT_TRUE(order.access(kFlags, 8, 0, at(1, 0, 1), true, false));
  auto race = order.access(kFlags, 8, 0, at(1, 0, 1), true, true);
  ASSERT_TRUE(race);
  EXPECT_TRUE(race->other_write);
  EXPECT_EQ(race->other.block, 0);
}

TEST(RankOrder, ThreadsOfOneUnitAreCheckedAsInOneBlock) {
  RankOrder order(2, 1);
  order.enter(1);
  EXPECT_FALSE(order.access(kData, 4, 0, at(1, 0, 0), true, false));
  EXPECT_TRUE(order.access(kData, 4, 0, at(1, 1, 0), false, false));
}

TEST(UnitScheduler, AWaitingUnitGoesOnAfterTheOthersRun) {
  UnitScheduler scheduler;
  std::uint64_t writes = 0;
  bool flag = false;
  std::vector<int> order;
  scheduler.run(
      2,
      [&](int unit) {
        order.push_back(unit);
        if (unit == 0)
          while (!flag)
            ASSERT_TRUE(scheduler.wait());
        else {
          flag = true;
          ++writes;
        }
        order.push_back(unit);
      },
      [&] { return writes; });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 1, 0}));
}

TEST(UnitScheduler, AWaitNoUnitCanEndIsReported) {
  UnitScheduler scheduler;
  std::uint64_t writes = 0;
  int waits = 0;
  auto run = [&] {
    scheduler.run(
        3,
        [&](int unit) {
          ++writes; // each unit writes once before it waits forever
          while (true) {
            ++waits;
            if (!scheduler.wait())
              throw std::runtime_error("unit " + std::to_string(unit) + " waits forever");
          }
        },
        [&] { return writes; });
  };
  EXPECT_THROW(run(), std::runtime_error);
  EXPECT_LE(waits, 6); // every unit looked once after the last write
}

TEST(UnitScheduler, AFailingUnitUnwindsTheWaitingOnes) {
  UnitScheduler scheduler;
  std::uint64_t writes = 0;
  int unwound = 0;
  struct Counted {
    int &n;
    ~Counted() { ++n; }
  };
  auto run = [&] {
    scheduler.run(
        3,
        [&](int unit) {
          Counted c{unwound};
          ++writes;
          if (unit == 2)
            throw std::logic_error("unit 2 fails");
          while (true)
            scheduler.wait();
        },
        [&] { return writes; });
  };
  EXPECT_THROW(run(), std::logic_error);
  EXPECT_EQ(unwound, 3);
}
