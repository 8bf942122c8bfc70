// What every equivalence obligation shares: a value as the reference and
// each rank hold it, the layout it must have, the proof, and — when the proof
// is refuted — a finding that says where the value went wrong (localised on
// rank 0's graph), why, and with which inputs (Alive2-style).
#pragma once

#include "checkers/check.h"
#include "checkers/layout.h"

#include <optional>
#include <string_view>

namespace shardproof::checkers {

struct ValueObligation {
  std::string name;           // "forward: 'out' is replicated"
  std::string subject;        // "output 'out'", "the gradient of parameter 'w'"
  std::string element_prefix; // names elements: "out", "grad(w)"
  ir::Output::Role role = ir::Output::Role::Forward;
  DistributedValue value;
  Layout layout;            // what the value must be
  ir::SourceLoc loc;        // where rank 0 returns it, or the parameter is made
  std::string loc_note;     // what happens at loc, for the finding's note
  int home_rank = 0;        // the first rank holding the value:
  ir::NodeId home_node = 0; // localisation starts at its node
  bool must_agree = false;  // its ranks' values must all agree
};

// Proves `eq`, first with every proved value abstracted (see lemmas.h; an
// obligation equal up to renaming to one proved before is proved at once),
// then whole. `obligation` names it for later memoized proofs.
prover::Verdict prove_layout(CheckContext &context, const LayoutEquation &eq,
                             const std::string &obligation);

// Proves the obligation and records the verdict; a refutation also becomes a
// finding. Returns whether it was proved.
bool check_value(CheckContext &context, const ValueObligation &obligation);

// The value of `ref_out`'s path on each of `members` (global ranks, in
// order), or nullopt after reporting `missing_rule` when one lacks it.
std::optional<DistributedValue> gather(CheckContext &context, const ir::Output &ref_out,
                                       RuleCode missing_rule, const std::string &subject,
                                       const std::vector<int> &members);

// 0, 1, ..., world - 1.
std::vector<int> all_ranks(const ir::LinkedProgram &program);

// Where a wrong value first went wrong: walking back from the home rank's node, the
// operation that produced a partial sum which is never reduced, or else the
// first operation whose value no longer relates to the reference.
struct Divergence {
  ir::SourceLoc loc;
  std::string op;
  ir::OpCategory category = ir::OpCategory::Other;
  Layout layout;
  bool off_reference_path = false; // made on a line the reference never ran
  std::optional<ir::NodeId> node;  // the home rank's node, where one was located
  // Two operands whose rows are the reference's in different orders: row
  // `row` pairs the reference's row `first` of one with its row `second` of
  // the other (a token's value with another token's routing weight).
  struct MisalignedRows {
    std::size_t row, first, second;
  };
  std::optional<MisalignedRows> misaligned_rows;
  // The strategy that located it (value_check.cpp's kStrategies): "scaled-chain",
  // "misplaced-rows", "unreduced-partial-sum", "misaligned-rows",
  // "misreduced-partial-sum" or "first-unrelated-value".
  std::string_view strategy;
};
// Relates every ancestor of the home rank's node to the reference (one made
// on a line the reference never ran and only some ranks ran, a pipeline
// stage's own, on the home rank alone), then tries named strategies in a
// fixed order; the first that locates a divergence wins. A built-in gradient
// formula is never the cause when its input is wrong too: the search goes on
// to that input (a custom backward's, a hook's).
// `value_layout` is the layout of the value itself, used when its node has
// no counterpart in the reference run.
std::optional<Divergence> locate_divergence(terms::TermStore &store,
                                            ir::LinkedProgram &program, int home_rank,
                                            ir::NodeId start_node,
                                            const Layout &value_layout,
                                            const prover::Seeds &seeds);

// A divergence located in the recipe that drives an analysed tree (its
// loc.harness) moves to the first operation of the tree that its value
// reaches on the way to node `to` of `home`, or, when the tree takes it no
// more, to the tree's last operation it is made of: findings point into
// the tree.
void move_into_analysed_code(const ir::Trace &home, Divergence &divergence,
                             ir::NodeId to);

// The last operation of the analysed tree among the producers of node `of`
// of `home` (the node itself when it is the tree's): where a value the
// recipe finished (a ZeRO partition it gathers) was last made by the tree.
// None when the tree made none of it.
std::optional<ir::NodeId> last_made_in_analysed_code(const ir::Trace &home,
                                                     ir::NodeId of);

// The entry's tensor- and data-parallel groups, when smaller than the world.
using AxisGroups = std::map<Layout::Over, std::vector<std::vector<int>>>;
AxisGroups axis_groups(const ir::LinkedProgram &program);

const ir::Output *find_output(const ir::Trace &trace, const std::string &path);

} // namespace shardproof::checkers
