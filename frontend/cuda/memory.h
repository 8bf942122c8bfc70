// The lifter's values and memory: what a register or a buffer element
// holds, the buffers, and the record of accesses that tells a race (two
// threads, one writing, with nothing ordering them). No clang here.
#pragma once

#include "frontend/cuda/cuda_frontend.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::frontend::cuda {

// What a register or a buffer element holds: a concrete integer, a real
// term, a pointer into a buffer, a data-dependent comparison, or nothing
// defined (never read into a term), or a cooperative group (groups.h), or
// the bits of elements read through a view of another scalar type (Bits).
struct Bits;
struct Value {
  enum class Kind : std::uint8_t { Undef, Int, Float, Pointer, SymBool, Group, Bits };
  Kind kind = Kind::Undef;
  std::int64_t i = 0;     // Int (and concrete booleans)
  terms::TermId term = 0; // Float; SymBool (a comparison term)
  bool negated = false;   // SymBool: the comparison's negation
  int buffer = -1;        // Pointer
  std::int64_t offset = 0;

  std::shared_ptr<const Bits> bits; // Bits

  static Value integer(std::int64_t v) { return {Kind::Int, v}; }
  static Value real(terms::TermId t) { return {Kind::Float, 0, t}; }
  static Value pointer(int buffer, std::int64_t offset) {
    return {Kind::Pointer, 0, 0, false, buffer, offset};
  }
  static Value packed(Bits bits);
};

// A value read through a view of another scalar type (four halves read as
// a float2, eight as a uint4's four words): the elements it covers, as the
// original elements. Stored through a view of elements of the same format
// it writes them back; any other use of it (arithmetic on the reinterpreted
// bits) is not modelled.
struct Bits {
  std::string format; // the elements' ("float16")
  std::string view;   // the type they were read as ("float2", "unsigned int")
  ir::SourceLoc loc;  // the read
  std::vector<Value> elements;
};

// "the bits of 2 float16 elements read as 'float' at f.cu:12:5"
std::string describe(const Bits &bits);

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
  // The format of its elements ("float32", "float16", "uint8", ...; its
  // cells hold one each) and their size. A local variable of a vector or
  // union type is `retypable`: a copy of a whole value of another format
  // into it makes its cells that format's elements.
  std::string format;
  int element_bytes = 0;
  bool retypable = false;
  std::vector<Value> cells;
  std::vector<std::optional<Access>> last_write;
  // Reads since the element's block phase began, in time order (one per
  // thread in a row), and one read of an earlier block: enough to find a
  // read that a later write conflicts with.
  std::vector<std::vector<Access>> reads;
  std::vector<std::optional<Access>> earlier_block_read;
  std::vector<std::optional<ElementWrite>> writes;
};

// How many elements of `buffer` an access of `bytes` bytes covers; nullopt
// when it covers part of one (a view narrower than the elements, or not a
// whole number of them).
std::optional<std::int64_t> cells_covered(const Buffer &buffer, std::int64_t bytes);

// Whether an access at element `offset` of `buffer` that needs `alignment`
// bytes starts off its alignment (the buffer's start is aligned).
bool misaligned(const Buffer &buffer, std::int64_t offset, std::int64_t alignment);

// Makes `buffer` hold `cells` elements of `format` (`element_bytes` each),
// none of them written.
void retype(Buffer &buffer, const std::string &format, int element_bytes,
            std::int64_t cells);

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
