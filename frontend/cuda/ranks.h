// A multi-rank launch (`// shardproof: ranks N`, issue 13): the annotated
// launch run once per rank, as a custom all-reduce runs one launch per GPU,
// all of them sharing global memory (peer buffers through pointer arrays).
// Each block of each rank's launch is a "unit"; units run one at a time,
// each until it finishes or waits in a spin loop for a flag another unit
// has not written yet. What orders two units' accesses is a flag: a
// volatile store after a fence releases what its unit did before its last
// __syncthreads(), a volatile load of it acquires that for what its reader
// does after its next __syncthreads(). Accesses of two units that no chain
// of such flags orders race. No clang here: the lifter calls these.
#pragma once

#include "frontend/cuda/memory.h"

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace shardproof::frontend::cuda {

// Runs units one at a time, each on a thread of its own, so that a unit can
// stop in the middle of a spin loop and go on from there when the others
// have run. A unit runs until it finishes or calls wait(); the next unit
// in turn (round robin, those not started included) then runs.
class UnitScheduler {
public:
  // Runs body(u) for every u < units; returns when all have finished.
  // Rethrows the first exception a body throws (the waiting units are
  // then unwound). `progress` counts the writes made so far.
  void run(int units, const std::function<void(int)> &body,
           std::function<std::uint64_t()> progress);

  // Called by the running unit at a wait that cannot end now: lets the
  // others run until its turn comes again. False, without running any,
  // when none can make progress: every unfinished unit waits and nothing
  // was written since each last looked (the wait never ends).
  bool wait();

private:
  enum class State : std::uint8_t { Ready, Waiting, Done };
  struct Cancelled {};
  void unit_main(int unit, const std::function<void(int)> &body);
  // The next unfinished unit after `unit`, or -1. With the lock held.
  int next_after(int unit) const;

  std::mutex mutex_;
  std::condition_variable turn_changed_;
  std::vector<State> states_;
  int turn_ = -1; // the unit running
  bool cancel_ = false;
  std::exception_ptr error_;
  std::function<std::uint64_t()> progress_;
  std::uint64_t seen_ = 0; // progress() at the last wait
  int idle_ = 0;           // waits in a row with no write between
};

// What orders the units' accesses of global memory, and the races of
// accesses nothing orders. Unit u is block u % blocks of rank u / blocks.
class RankOrder {
public:
  RankOrder(int ranks, int blocks);

  void enter(int unit); // the unit that runs from now on
  int rank_of(int unit) const { return unit / blocks_; }

  // A fence by thread `thread` of the running unit in its block phase
  // `phase`: __threadfence_system() (`system`) or __threadfence().
  void fence(int thread, int phase, bool system);

  // Records an access of element `i` of global buffer `buffer` (`size`
  // elements) by the running unit, `now.block` naming it; returns the
  // earlier access it races with, of this unit (as within one block) or of
  // another unit no flag orders it after. A `flag` access (volatile) does
  // not race with another atomic or flag access, but two flag writes of
  // different units do (the flag's value would depend on the schedule); a
  // flag write releases and a flag read acquires.
  std::optional<Race> access(int buffer, std::int64_t size, std::int64_t i, Access now,
                             bool write, bool flag);

private:
  using Cell = std::pair<int, std::int64_t>; // buffer, element
  // What a flag write released: per unit, its phases below the bound.
  struct Release {
    std::vector<int> clock;
    int rank = 0;
    bool system = false; // after __threadfence_system(): seen by other ranks
  };
  struct Last {
    std::optional<Access> write, read;
    bool flag_write = false; // `write` is a flag's
  };
  struct Fence {
    int phase = -1;
    bool system = false;
  };

  void settle(int phase); // acquisitions of earlier phases take effect
  void release(const Cell &cell, const Access &now);
  void acquire(const Cell &cell, const Access &now);
  std::optional<Race> unordered(const Cell &cell, const Access &now, bool write,
                                bool flag);

  int units_, blocks_, current_ = 0;
  // known_[u][p]: the phases of unit p below it happen before what unit u
  // does now; pending_: what u acquired in phase pending_phase_[u].
  std::vector<std::vector<int>> known_, pending_;
  std::vector<int> pending_phase_;
  std::vector<std::map<int, Fence>> fences_; // per unit, by thread
  std::map<Cell, Release> released_;
  std::map<Cell, std::vector<Last>> last_;    // per unit: its latest accesses
  std::map<std::pair<int, int>, Buffer> own_; // (unit, buffer): within the unit
};

} // namespace shardproof::frontend::cuda
