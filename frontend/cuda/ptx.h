// The inline PTX the lifter models (issue 13): loads and stores of one, two
// or four 16- to 64-bit words through a pointer operand, as DeepSpeed's
// mem_access::load_global / store_global write them
//   ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];
//   st.global.wb.v2.u32 [%0], {%1, %2};
// and its predicated load: a predicate set from an operand, the outputs
// zeroed, the load under the predicate
//   .reg .pred p; setp.ne.b32 p, %5, 0; mov.b32 %0, 0; ... @p ld.global...
// Anything else is not modelled. No clang here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardproof::frontend::cuda {

struct PtxInstruction {
  enum class Op { Load, Store, Zero, SetPredicate };
  Op op = Op::Load;
  int bytes = 4;           // Load, Store: each word's size
  std::vector<int> values; // Load, Store: the words' operands; Zero: the operand
  int address = -1;        // Load, Store: the pointer operand
  int tested = -1;         // SetPredicate: the operand compared with 0 (p = op != 0)
  bool predicated = false; // @p: runs where the predicate is set
};

// The instructions of an asm statement's text, or nullopt with `why`.
std::optional<std::vector<PtxInstruction>> parse_ptx(std::string_view text,
                                                     std::string &why);

} // namespace shardproof::frontend::cuda
