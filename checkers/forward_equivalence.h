// SP001 forward-mismatch and SP002 missing-reduction: every output of the
// entry equals the reference output, replicated or sharded, for all inputs.
#pragma once

#include "checkers/check.h"
#include "checkers/layout.h"

#include <optional>

namespace shardproof::checkers {

std::unique_ptr<Check> make_forward_equivalence_check();

// Where a wrong output first went wrong: walking back from rank 0's output
// node, the operation that produced a partial sum which is never reduced, or
// else the first operation whose value no longer relates to the reference.
struct Divergence {
  ir::SourceLoc loc;
  std::string op;
  ir::OpCategory category = ir::OpCategory::Other;
  Layout layout;
};
std::optional<Divergence> locate_divergence(terms::TermStore &store,
                                            frontend::LinkedProgram &program,
                                            const std::string &output_path);

} // namespace shardproof::checkers
