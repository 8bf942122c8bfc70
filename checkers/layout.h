// How a distributed value relates to its reference value: replicated (every
// rank holds it whole), sharded along a dim (rank r holds chunk r), a partial
// sum (the ranks' values add up to it), or none of these.
#pragma once

#include "checkers/prover/prover.h"
#include "models/ir/trace.h"
#include "models/terms/term_store.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::checkers {

using terms::TermId;

struct Layout {
  // Scaled: every rank holds what a replicated (dim < 0) or sharded layout
  // would give, times a constant other than 1 (summed where it should be
  // averaged, or the reverse).
  // Rows: each row (along dim 0) of every rank's value is some row of the
  // reference, in another order or selection (tokens permuted for an MoE
  // dispatch); never acceptable for an output, and only the divergence
  // locator infers it (rows_of_reference), for values inside a module.
  enum class Kind { Replicated, Sharded, Scaled, PartialSum, Rows, None };
  Kind kind = Kind::None;
  // Sharded and PartialSum over the whole world, or over each group of one
  // parallel axis (and replicated across the other axes): a weight sharded
  // over each tensor-parallel group, a batch sharded over each data-parallel
  // group.
  enum class Over { World, TensorParallel, DataParallel };
  Over over = Over::World;
  int dim = -1;   // for Sharded, and Scaled of a shard
  int stride = 1; // Megatron's partition_stride
  // A shard of a shard: also split along `second_dim` over the groups of
  // `second_over` (a sequence-parallel slice of a data-parallel batch).
  int second_dim = -1;
  Over second_over = Over::World;
  // For a PartialSum with dim >= 0: the summands are the ranks' shards along
  // `dim` over the groups of `shard_over` (tensor-parallel gradients that no
  // data-parallel all-reduce summed).
  Over shard_over = Over::World;
  mpq_class factor = 1; // for Scaled
  // For Rows: the reference row each row of each rank's value is.
  std::vector<std::vector<std::size_t>> rows = {};
  bool acceptable() const { return kind == Kind::Replicated || kind == Kind::Sharded; }
  // Rows in another order on some rank (tokens permuted for a dispatch), not
  // just a block of consecutive rows (a shard taken at the wrong offset).
  bool reordered() const;
  std::string str() const;
  bool operator==(const Layout &) const = default;
};

// One value as the reference and every rank hold it, over linked terms.
struct DistributedValue {
  ir::Shape reference_shape;
  std::vector<TermId> reference;
  std::vector<ir::Shape> rank_shapes;
  std::vector<std::vector<TermId>> ranks;
  // The groups (global ranks) of each parallel axis that is smaller than the
  // world: a rank's shard index is its position in its group.
  std::map<Layout::Over, std::vector<std::vector<int>>> axis_groups = {};
  // The global rank of each entry of `ranks` when only some ranks hold the
  // value (an expert's parameter lives on its expert-parallel ranks); empty
  // when every rank does, in order.
  std::vector<int> members;
  // Of each entry of `ranks`, which elements it answers for (a distributed
  // optimizer's shard of a gradient, ir::Output::owned); empty: every
  // element of every entry. Layout equations hold only those.
  std::vector<std::vector<bool>> owned;
  bool owns(int k, std::size_t i) const { return owned.empty() || owned[k][i]; }
  int rank_id(int k) const { return members.empty() ? k : members[k]; }
  int world() const { return static_cast<int>(ranks.size()); }
  bool has_axis(Layout::Over over) const { return axis_groups.count(over) > 0; }
  // The world, then every axis that has groups.
  std::vector<Layout::Over> groupings() const;
  // The groups of `over` as entries of `ranks` (the world: one group of
  // all); nullopt when a group has a member that does not hold the value.
  std::optional<std::vector<std::vector<int>>> summand_groups(Layout::Over over) const;
  // (shard index, shard count) of entry k under `over`.
  std::pair<int, int> shard_of(int rank, Layout::Over over) const;
};

// "rank elements == the reference elements they stand for", row by row, with
// where each row comes from so a counterexample can be explained.
struct LayoutEquation {
  std::vector<TermId> lhs, rhs;
  struct Row {
    int rank = -1; // entry of DistributedValue::ranks; -1 for a partial-sum row
    std::size_t local = 0, reference = 0;
  };
  std::vector<Row> rows;
};

// Layouts the shapes allow, most specific first. A Scaled candidate needs
// its factor, which only infer_layout measures.
std::vector<Layout> candidate_layouts(const DistributedValue &value);

// The small fraction a double stands for (denominator up to 1024), if any.
std::optional<mpq_class> small_fraction(double value);

// The layout a correct program would give this value: replicated when the
// shapes agree, sharded when exactly one dim is split evenly.
std::optional<Layout> expected_layout(const DistributedValue &value);

// The Rows layout when every rank's value is rows of the reference, with the
// same rows matched at two pseudo-random points (seeds.rows).
std::optional<Layout> rows_of_reference(terms::TermStore &store,
                                        const DistributedValue &value,
                                        const prover::Seeds &seeds);

LayoutEquation layout_equation(terms::TermStore &store, const DistributedValue &value,
                               Layout layout);

// The first candidate that holds at `points` pseudo-random points (a guess to
// be proved, not a proof; seeds.layout, and seeds.scale for a Scaled factor).
Layout infer_layout(terms::TermStore &store, const DistributedValue &value,
                    const prover::Seeds &seeds, unsigned points = 2);

} // namespace shardproof::checkers
