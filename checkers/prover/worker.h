// Runs a job in a forked child under a hard wall-clock and address-space
// limit. Z3 4.8.12 does not always honour its own timeout, so the only limit
// we trust is the one the parent enforces by killing the child.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace shardproof::prover {

struct WorkerLimits {
  std::chrono::milliseconds wall{10000};
  std::size_t memory_bytes = std::size_t{4} << 30; // on top of the parent's
};

struct WorkerOutcome {
  enum class Status { Finished, TimedOut, OutOfMemory, Crashed };
  Status status = Status::Crashed;
  std::string output; // what the job returned, when Finished
  double seconds = 0;
  std::string detail; // why, when not Finished
};

// The job runs in the child; its return value travels back through a pipe.
// The child never returns into the caller's code: it exits after the job.
WorkerOutcome run_in_worker(const std::function<std::string()> &job,
                            const WorkerLimits &limits);

} // namespace shardproof::prover
