// Links per-rank traces into one program over the reference's variables:
// every rank's leaves are rebound to the reference leaves they stand for
// (parameters by qualified name and shard, inputs by creation order), and
// every collective placeholder is replaced by its meaning over the group.
#pragma once

#include "models/ir/trace.h"
#include "models/terms/term_store.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace shardproof::ir {

// Collective sequences that do not match across a group: on hardware, a hang.
struct CollectiveMismatch {
  std::vector<int> group;
  int sequence = 0;
  int rank_a = 0, rank_b = 0;
  ir::SourceLoc loc_a, loc_b; // loc_b empty when rank_b issued nothing
  std::string message;
};

class LinkedProgram {
public:
  LinkedProgram(terms::TermStore &store, const ir::Trace &reference,
                const std::vector<ir::Trace> &ranks);
  ~LinkedProgram();

  // A rank's term over the reference variables, collectives resolved.
  terms::TermId linked(int rank, terms::TermId term);
  std::vector<terms::TermId> linked(int rank, std::span<const terms::TermId> terms);

  const std::vector<CollectiveMismatch> &mismatches() const { return mismatches_; }
  // Rank parameters that could not be rebound to the reference.
  struct Unbound {
    int rank = 0;
    ir::SourceLoc loc;
    std::string message;
  };
  const std::vector<Unbound> &unbound() const { return unbound_; }

  int world() const { return static_cast<int>(ranks_.size()); }
  const ir::Trace &reference() const { return reference_; }
  const ir::Trace &rank(int r) const { return ranks_[r]; }
  const std::vector<ir::Trace> &ranks() const { return ranks_; }

private:
  struct Impl;
  void bind_leaves(int rank);
  void match_collectives();
  terms::TermId resolve(int rank, terms::TermId placeholder);

  terms::TermStore &store_;
  const ir::Trace &reference_;
  const std::vector<ir::Trace> &ranks_;
  std::unique_ptr<Impl> impl_;
  std::vector<CollectiveMismatch> mismatches_;
  std::vector<Unbound> unbound_;
};

// Reference element that rank `shard` of `count` holds at local flat index
// `local`, for a tensor sharded along `dim` with Megatron's partition stride.
std::size_t shard_to_reference_index(const ir::Shape &local_shape, int dim, int stride,
                                     int shard, int count, std::size_t local);

// A shard of a whole tensor: split along `dim` into the leaf's shard count,
// with Megatron's interleaving `stride`.
struct ShardFit {
  int dim = 0, stride = 1;
};

// The (dim, stride) shards of `whole` that `leaf`'s shape fits: the shape
// alone does not say which one a rank holds when there are several.
std::vector<ShardFit> shards_fitting(const Leaf &leaf, const Shape &whole);

// How a rank's leaf stands for the reference's, as the linker binds it and
// the path's witness values it: the reference leaf of the same role and name,
// and the reference element each of the rank's elements is (the same
// position when the shapes agree, the shard's place in the whole by
// partition_dim and partition_stride when the shard count explains the
// difference).
struct LeafCounterpart {
  const Leaf *reference = nullptr; // none: no leaf of that role and name
  // nullopt: a shape the partition does not explain (created rank-local)
  std::optional<std::vector<std::size_t>> positions;
};
LeafCounterpart counterpart_in(const Trace &reference, const Leaf &leaf);

} // namespace shardproof::ir
