// The lifter's values and memory: what a register or a buffer element
// holds, the buffers, and the record of accesses that tells a race (two
// threads, one writing, with nothing ordering them). No clang here.
#pragma once

#include "frontend/cuda/cuda_frontend.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::frontend::cuda {

// What a register or a buffer element holds: a concrete integer, a real
// term, a pointer into a buffer, a data-dependent comparison, or nothing
// defined (never read into a term), or a cooperative group (groups.h).
struct Value {
  enum class Kind : std::uint8_t { Undef, Int, Float, Pointer, SymBool, Group };
  Kind kind = Kind::Undef;
  std::int64_t i = 0;     // Int (and concrete booleans)
  terms::TermId term = 0; // Float; SymBool (a comparison term)
  bool negated = false;   // SymBool: the comparison's negation
  int buffer = -1;        // Pointer
  std::int64_t offset = 0;

  static Value integer(std::int64_t v) { return {Kind::Int, v}; }
  static Value real(terms::TermId t) { return {Kind::Float, 0, t}; }
  static Value pointer(int buffer, std::int64_t offset) {
    return {Kind::Pointer, 0, 0, false, buffer, offset};
  }
};

enum class Space { Global, Shared, Local };

// One access of a memory element, with what orders it against others: the
// block's barrier phase and, within a phase, the warp's __syncwarp phase.
struct Access {
  int block = -1, thread = -1, phase = -1, warp = -1, warp_phase = -1;
  bool atomic = false;
  ir::SourceLoc loc;
  ThreadId id; // for reports
};

struct Buffer {
  std::string name;
  Space space = Space::Global;
  std::vector<Value> cells;
  std::vector<std::optional<Access>> last_write;
  // Reads since the element's block phase began, in time order (one per
  // thread in a row), and one read of an earlier block: enough to find a
  // read that a later write conflicts with.
  std::vector<std::vector<Access>> reads;
  std::vector<std::optional<Access>> earlier_block_read;
  std::vector<std::optional<ElementWrite>> writes;
};

// The earlier access a new one races with.
struct Race {
  Access other;
  bool other_write = false;
};

// Whether `a` happens before `b` whatever the scheduling: program order, a
// barrier between, or a __syncwarp between two lanes of one warp (threads
// of different blocks are never ordered).
bool ordered(const Access &a, const Access &b);

// Records `now`, a read or a write of element `i` of `buffer`, and returns
// the earlier access it races with: another thread's, one of them a write,
// neither ordered before the other, not both atomic.
std::optional<Race> record_access(Buffer &buffer, std::int64_t i, const Access &now,
                                  bool write);

} // namespace shardproof::frontend::cuda
