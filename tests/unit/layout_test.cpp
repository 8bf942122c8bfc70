// Layout inference over parallel axes: shards over one axis's groups, shards
// of shards over two axes, and the rows relation the divergence locator uses.
#include "checkers/layout.h"

#include <gtest/gtest.h>

#include <string>

using namespace shardproof;
using checkers::DistributedValue;
using checkers::Layout;

namespace {
// A reference value of `shape` whose elements are fresh variables x0, x1, ...
DistributedValue reference_value(terms::TermStore &store, ir::Shape shape) {
  DistributedValue value;
  value.reference_shape = shape;
  std::int64_t n = 1;
  for (auto d : shape)
    n *= d;
  for (std::int64_t i = 0; i < n; ++i)
    value.reference.push_back(
        store.var("x" + std::to_string(i), terms::VarKind::Reference));
  return value;
}

// Adds a rank holding the reference elements at `indices`, in that order.
void add_rank(DistributedValue &value, ir::Shape shape,
              const std::vector<std::size_t> &indices) {
  value.rank_shapes.push_back(shape);
  auto &elements = value.ranks.emplace_back();
  for (std::size_t i : indices)
    elements.push_back(value.reference[i]);
}

// World 4, tensor-parallel groups {0,1},{2,3}, data-parallel groups {0,2},{1,3}.
void add_tp_dp_groups(DistributedValue &value) {
  value.axis_groups[Layout::Over::TensorParallel] = {{0, 1}, {2, 3}};
  value.axis_groups[Layout::Over::DataParallel] = {{0, 2}, {1, 3}};
}
} // namespace

TEST(Layouts, BatchShardedOverDataParallelGroupsAndReplicatedOverTensorParallel) {
  terms::TermStore store;
  auto value = reference_value(store, {2, 2}); // [batch 2, hidden 2]
  add_tp_dp_groups(value);
  // Ranks 0 and 1 hold batch row 0; ranks 2 and 3 batch row 1.
  for (std::vector<std::size_t> rows :
       {std::vector<std::size_t>{0, 1}, {0, 1}, {2, 3}, {2, 3}})
    add_rank(value, {1, 2}, rows);
  Layout layout = checkers::infer_layout(store, value, prover::Seeds{});
  EXPECT_EQ(layout.kind, Layout::Kind::Sharded);
  EXPECT_EQ(layout.over, Layout::Over::DataParallel);
  EXPECT_EQ(layout.dim, 0);
  EXPECT_EQ(layout.str(), "sharded along dim 0 over the data-parallel group");
}

TEST(Layouts, ShardOfAShardOverTwoAxes) {
  terms::TermStore store;
  auto value = reference_value(store, {2, 2}); // [sequence 2, batch 2]
  add_tp_dp_groups(value);
  // Sequence row by tensor-parallel rank, batch column by data-parallel rank:
  // rank 1 (tp 1, dp 0) holds [1, 0], rank 2 (tp 0, dp 1) holds [0, 1].
  for (std::size_t i : {0u, 2u, 1u, 3u})
    add_rank(value, {1, 1}, {i});
  Layout layout = checkers::infer_layout(store, value, prover::Seeds{});
  ASSERT_EQ(layout.kind, Layout::Kind::Sharded) << layout.str();
  EXPECT_EQ(layout.str(), "sharded along dim 0 over the tensor-parallel group and along "
                          "dim 1 over the data-parallel group");
  // Ranks swapped along the batch: no layout explains it.
  std::swap(value.ranks[0], value.ranks[2]);
  EXPECT_EQ(checkers::infer_layout(store, value, prover::Seeds{}).kind,
            Layout::Kind::None);
}

TEST(Layouts, PartialSumOverDataParallelGroups) {
  terms::TermStore store;
  auto value = reference_value(store, {1});
  add_tp_dp_groups(value);
  // Within each data-parallel group the two ranks' values add up to x0.
  terms::TermId half = store.mul(store.constant(mpq_class(1, 2)), value.reference[0]);
  for (int r = 0; r < 4; ++r) {
    value.rank_shapes.push_back({1});
    value.ranks.push_back({half});
  }
  Layout layout = checkers::infer_layout(store, value, prover::Seeds{});
  EXPECT_EQ(layout.kind, Layout::Kind::Scaled); // each rank: the reference times 1/2
  value.ranks[0] = {store.mul(store.constant(mpq_class(1, 3)), value.reference[0])};
  value.ranks[2] = {store.mul(store.constant(mpq_class(2, 3)), value.reference[0])};
  value.ranks[1] = {store.zero()};
  value.ranks[3] = {value.reference[0]};
  layout = checkers::infer_layout(store, value, prover::Seeds{});
  EXPECT_EQ(layout.kind, Layout::Kind::PartialSum);
  EXPECT_EQ(layout.over, Layout::Over::DataParallel);
}

TEST(Layouts, ShardsOfLocalMeansThatNoDataParallelAllReduceSummed) {
  terms::TermStore store;
  auto value = reference_value(store, {2});
  add_tp_dp_groups(value);
  auto times = [&](long num, long den, std::size_t i) {
    return store.mul(store.constant(mpq_class(num, den)), value.reference[i]);
  };
  // Tensor-parallel rank t holds element t; the two data-parallel ranks of
  // each shard add up to twice the reference (means over half the batch).
  value.ranks = {
      {times(1, 2, 0)}, {value.reference[1]}, {times(3, 2, 0)}, {value.reference[1]}};
  value.rank_shapes.assign(4, {1});
  Layout layout = checkers::infer_layout(store, value, prover::Seeds{});
  ASSERT_EQ(layout.kind, Layout::Kind::PartialSum) << layout.str();
  EXPECT_EQ(layout.str(),
            "a partial sum over each data-parallel group of the rank's shard "
            "along dim 0 over the tensor-parallel group (the sum is 2 times "
            "the reference)");
}

TEST(Layouts, RowsInAnotherOrderAndABlockAtTheWrongOffset) {
  terms::TermStore store;
  auto value = reference_value(store, {4, 1});
  add_rank(value, {2, 1}, {1, 0}); // rank 0: its rows swapped (a permutation)
  add_rank(value, {2, 1}, {2, 3});
  auto rows = checkers::rows_of_reference(store, value, prover::Seeds{});
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->rows, (std::vector<std::vector<std::size_t>>{{1, 0}, {2, 3}}));
  EXPECT_TRUE(rows->reordered());

  auto shifted = reference_value(store, {4, 1});
  add_rank(shifted, {2, 1}, {2, 3}); // the next rank's block
  add_rank(shifted, {2, 1}, {0, 1});
  rows = checkers::rows_of_reference(store, shifted, prover::Seeds{});
  ASSERT_TRUE(rows.has_value());
  EXPECT_FALSE(rows->reordered());

  auto mixed = reference_value(store, {2, 1});
  mixed.rank_shapes.push_back({1, 1});
  mixed.ranks.push_back({store.add(mixed.reference[0], mixed.reference[1])});
  EXPECT_FALSE(checkers::rows_of_reference(store, mixed, prover::Seeds{}).has_value());
}
