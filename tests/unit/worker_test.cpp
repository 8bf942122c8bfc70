#include "checkers/prover/worker.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

using namespace shardproof::prover;
using Status = WorkerOutcome::Status;

TEST(Worker, ReturnsTheJobsOutput) {
  std::string big(200000, 'x'); // larger than a pipe buffer
  auto outcome = run_in_worker([&] { return big; }, {});
  EXPECT_EQ(outcome.status, Status::Finished);
  EXPECT_EQ(outcome.output, big);
}

TEST(Worker, KillsAJobThatIgnoresTime) {
  WorkerLimits limits;
  limits.wall = std::chrono::milliseconds(200);
  auto outcome = run_in_worker(
      [] {
        volatile unsigned long spin = 0;
        for (;;)
          spin = spin + 1;
        return std::string();
      },
      limits);
  EXPECT_EQ(outcome.status, Status::TimedOut);
  EXPECT_LT(outcome.seconds, 10.0);
  EXPECT_TRUE(outcome.output.empty());
}

TEST(Worker, MemoryLimitStopsAGreedyJob) {
  WorkerLimits limits;
  limits.memory_bytes = std::size_t{64} << 20;
  auto outcome = run_in_worker(
      [] {
        std::vector<std::vector<char>> hog;
        for (int i = 0; i < 1024; ++i)
          hog.emplace_back(std::size_t{1} << 20, 'x');
        return std::string("unreachable");
      },
      limits);
  EXPECT_EQ(outcome.status, Status::OutOfMemory);
}

TEST(Worker, AJobThatThrowsIsReportedNotPropagated) {
  auto outcome =
      run_in_worker([]() -> std::string { throw std::runtime_error("boom"); }, {});
  EXPECT_EQ(outcome.status, Status::Crashed);
  EXPECT_NE(outcome.detail.find("boom"), std::string::npos);
}
