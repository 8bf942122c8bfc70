// The linker: shard index arithmetic, and collectives resolved over their
// groups (or reported as mismatched) on hand-built traces.
#include "models/ir/linker.h"
#include "models/terms/evaluate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

using shardproof::ir::shard_to_reference_index;

TEST(ShardIndex, ContiguousShardsAlongRows) {
  // reference [4, 3], two ranks, dim 0: rank 1 holds rows 2..3
  EXPECT_EQ(shard_to_reference_index({2, 3}, 0, 1, 1, 2, 0), 6u);
  EXPECT_EQ(shard_to_reference_index({2, 3}, 0, 1, 1, 2, 5), 11u);
}

TEST(ShardIndex, ContiguousShardsAlongColumns) {
  // reference [2, 4], two ranks, dim 1: rank 1 holds columns 2..3
  EXPECT_EQ(shard_to_reference_index({2, 2}, 1, 1, 1, 2, 0), 2u);
  EXPECT_EQ(shard_to_reference_index({2, 2}, 1, 1, 1, 2, 3), 7u);
}

TEST(ShardIndex, MegatronPartitionStride) {
  // reference rows 0..7, two ranks, stride 2: pieces of 2 rows interleave,
  // rank 0 holds rows {0,1,4,5} and rank 1 rows {2,3,6,7}.
  std::vector<std::size_t> rank1;
  for (std::size_t i = 0; i < 4; ++i)
    rank1.push_back(shard_to_reference_index({4}, 0, 2, 1, 2, i));
  EXPECT_EQ(rank1, (std::vector<std::size_t>{2, 3, 6, 7}));
}

namespace {
shardproof::ir::Leaf leaf_of(shardproof::ir::LeafRole role, std::string name,
                             shardproof::ir::Shape shape, int partition_dim = -1,
                             int shard = 0, int shards = 1) {
  shardproof::ir::Leaf leaf;
  leaf.role = role;
  leaf.name = std::move(name);
  leaf.elements.resize(static_cast<std::size_t>(shape[0] * shape[1]));
  leaf.shape = std::move(shape);
  leaf.partition_dim = partition_dim;
  leaf.shard_index = shard;
  leaf.shard_count = shards;
  return leaf;
}
} // namespace

TEST(LeafCounterpart, ARankLeafStandsForTheReferenceElementsTheLinkerBindsItTo) {
  using shardproof::ir::LeafRole;
  shardproof::ir::Trace reference;
  reference.leaves = {leaf_of(LeafRole::Input, "tensor#0", {2, 2}),
                      leaf_of(LeafRole::Parameter, "fc.weight", {4, 2})};
  // An input of the reference's shape: element for element, whatever the
  // rank does with it (its slice is a view of the same elements).
  auto input = counterpart_in(reference, leaf_of(LeafRole::Input, "tensor#0", {2, 2}));
  EXPECT_EQ(input.reference, &reference.leaves[0]);
  EXPECT_EQ(input.positions, (std::vector<std::size_t>{0, 1, 2, 3}));
  // Rank 1's shard of rows: the reference's rows 2..3.
  auto shard = counterpart_in(reference,
                              leaf_of(LeafRole::Parameter, "fc.weight", {2, 2}, 0, 1, 2));
  EXPECT_EQ(shard.positions, (std::vector<std::size_t>{4, 5, 6, 7}));
  // Created at a rank-local shape, or with no leaf of its name: no elements.
  auto local = counterpart_in(reference, leaf_of(LeafRole::Input, "tensor#0", {1, 2}));
  EXPECT_EQ(local.reference, &reference.leaves[0]);
  EXPECT_FALSE(local.positions);
  EXPECT_EQ(
      counterpart_in(reference, leaf_of(LeafRole::Input, "fc.weight", {4, 2})).reference,
      nullptr);
}

namespace {
using namespace shardproof;
using terms::TermId;

// Rank traces of `world` ranks with no nodes, only collectives.
std::vector<ir::Trace> empty_ranks(int world) {
  std::vector<ir::Trace> ranks(world);
  for (int r = 0; r < world; ++r) {
    ranks[r].rank = r;
    ranks[r].world = world;
  }
  return ranks;
}

// Adds to `trace` its next collective on `group`: `inputs` as given, and
// `outputs` fresh placeholders, which it returns.
std::vector<TermId> add_collective(terms::TermStore &store, ir::Trace &trace,
                                   ir::CollectiveKind kind, ir::ReduceOp op,
                                   std::vector<int> group, std::vector<TermId> inputs,
                                   std::size_t outputs, int line) {
  ir::Collective c;
  c.kind = kind;
  c.op = op;
  c.group = std::move(group);
  for (const ir::Collective &earlier : trace.collectives)
    c.sequence += earlier.group == c.group;
  c.input_shape = {static_cast<std::int64_t>(inputs.size())};
  c.output_shape = {static_cast<std::int64_t>(outputs)};
  c.inputs = std::move(inputs);
  for (std::size_t e = 0; e < outputs; ++e)
    c.outputs.push_back(store.var(fmt::format("c{}#{}@{}", c.sequence, e, trace.rank),
                                  terms::VarKind::Placeholder));
  c.loc = {"model.py", line, 0, {}};
  trace.collectives.push_back(c);
  return c.outputs;
}

// The exact value of `term` with every variable named in `values`.
mpq_class exact(const terms::TermStore &store, TermId term,
                const std::map<TermId, long> &values) {
  terms::ExactEvaluator eval(store, [&](TermId v) { return mpq_class(values.at(v)); });
  return eval(term).value();
}
} // namespace

TEST(LinkerCollectives, AllReduceIsTheSumOfItsGroupsInputs) {
  // World 4 in tensor-parallel groups {0,1} and {2,3}; rank r contributes a_r.
  terms::TermStore store;
  ir::Trace reference;
  auto ranks = empty_ranks(4);
  std::vector<TermId> a;
  std::map<TermId, long> values;
  for (int r = 0; r < 4; ++r) {
    a.push_back(store.var(fmt::format("a{}", r), terms::VarKind::Reference));
    values[a[r]] = std::lround(std::pow(10, r));
  }
  std::vector<std::vector<TermId>> out;
  for (int r = 0; r < 4; ++r)
    out.push_back(
        add_collective(store, ranks[r], ir::CollectiveKind::AllReduce, ir::ReduceOp::Sum,
                       r < 2 ? std::vector{0, 1} : std::vector{2, 3}, {a[r]}, 1, 7));
  ir::LinkedProgram program(store, reference, ranks);
  EXPECT_TRUE(program.mismatches().empty());
  for (int r = 0; r < 4; ++r) {
    TermId sum = program.linked(r, out[r][0]);
    int first = r < 2 ? 0 : 2;
    EXPECT_EQ(sum, store.add(a[first], a[first + 1])) << "rank " << r;
    EXPECT_EQ(exact(store, sum, values), r < 2 ? 11 : 1100) << "rank " << r;
  }
}

TEST(LinkerCollectives, AllReduceAverageDividesBySize) {
  terms::TermStore store;
  ir::Trace reference;
  auto ranks = empty_ranks(2);
  TermId a0 = store.var("a0", terms::VarKind::Reference);
  TermId a1 = store.var("a1", terms::VarKind::Reference);
  auto out0 = add_collective(store, ranks[0], ir::CollectiveKind::AllReduce,
                             ir::ReduceOp::Avg, {0, 1}, {a0}, 1, 7);
  add_collective(store, ranks[1], ir::CollectiveKind::AllReduce, ir::ReduceOp::Avg,
                 {0, 1}, {a1}, 1, 7);
  ir::LinkedProgram program(store, reference, ranks);
  EXPECT_EQ(exact(store, program.linked(0, out0[0]), {{a0, 3}, {a1, 6}}),
            mpq_class(9, 2));
}

TEST(LinkerCollectives, AllGatherConcatenatesInRankOrder) {
  // Rank r holds [g(2r), g(2r+1)]; every rank gets g0 .. g5.
  terms::TermStore store;
  ir::Trace reference;
  auto ranks = empty_ranks(3);
  std::vector<TermId> g;
  for (int i = 0; i < 6; ++i)
    g.push_back(store.var(fmt::format("g{}", i), terms::VarKind::Reference));
  std::vector<std::vector<TermId>> out;
  for (int r = 0; r < 3; ++r)
    out.push_back(add_collective(store, ranks[r], ir::CollectiveKind::AllGather,
                                 ir::ReduceOp::Sum, {0, 1, 2}, {g[2 * r], g[2 * r + 1]},
                                 6, 9));
  ir::LinkedProgram program(store, reference, ranks);
  EXPECT_TRUE(program.mismatches().empty());
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(program.linked(r, out[r]), g) << "rank " << r;
}

TEST(LinkerCollectives, ReduceScatterGivesEachRankItsSliceOfTheSum) {
  // Rank r holds b_r = [b_r0 .. b_r3]; rank 0 gets elements 0, 1 of b_0 + b_1
  // and rank 1 elements 2, 3.
  terms::TermStore store;
  ir::Trace reference;
  auto ranks = empty_ranks(2);
  std::vector<std::vector<TermId>> b(2), out;
  std::map<TermId, long> values;
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 4; ++i) {
      b[r].push_back(store.var(fmt::format("b{}{}", r, i), terms::VarKind::Reference));
      values[b[r].back()] = (r + 1) * std::lround(std::pow(10, i)); // b_0 + b_1 = 3*10^i
    }
  for (int r = 0; r < 2; ++r)
    out.push_back(add_collective(store, ranks[r], ir::CollectiveKind::ReduceScatter,
                                 ir::ReduceOp::Sum, {0, 1}, b[r], 2, 11));
  ir::LinkedProgram program(store, reference, ranks);
  EXPECT_TRUE(program.mismatches().empty());
  for (int r = 0; r < 2; ++r)
    for (int e = 0; e < 2; ++e) {
      TermId got = program.linked(r, out[r][e]);
      EXPECT_EQ(got, store.add(b[0][2 * r + e], b[1][2 * r + e]));
      EXPECT_EQ(exact(store, got, values), 3 * std::lround(std::pow(10, 2 * r + e)));
    }
}

TEST(LinkerCollectives, DifferentReduceOpsAreAMismatchAndStayUnresolved) {
  terms::TermStore store;
  ir::Trace reference;
  auto ranks = empty_ranks(2);
  TermId a0 = store.var("a0", terms::VarKind::Reference);
  TermId a1 = store.var("a1", terms::VarKind::Reference);
  auto out0 = add_collective(store, ranks[0], ir::CollectiveKind::AllReduce,
                             ir::ReduceOp::Sum, {0, 1}, {a0}, 1, 7);
  add_collective(store, ranks[1], ir::CollectiveKind::AllReduce, ir::ReduceOp::Max,
                 {0, 1}, {a1}, 1, 8);
  // A later call that matches is past the mismatch: unresolved too.
  auto later0 = add_collective(store, ranks[0], ir::CollectiveKind::AllReduce,
                               ir::ReduceOp::Sum, {0, 1}, {a0}, 1, 12);
  add_collective(store, ranks[1], ir::CollectiveKind::AllReduce, ir::ReduceOp::Sum,
                 {0, 1}, {a1}, 1, 12);
  ir::LinkedProgram program(store, reference, ranks);
  ASSERT_EQ(program.mismatches().size(), 1u);
  const ir::CollectiveMismatch &m = program.mismatches()[0];
  EXPECT_EQ(m.group, (std::vector<int>{0, 1}));
  EXPECT_EQ(m.sequence, 0);
  EXPECT_EQ(m.rank_a, 0);
  EXPECT_EQ(m.rank_b, 1);
  EXPECT_EQ(m.loc_a.line, 7);
  EXPECT_EQ(m.loc_b.line, 8);
  EXPECT_EQ(m.message, "collective #0 on group [0, 1] is all_reduce(sum) on rank 0 but "
                       "all_reduce(max) on rank 1");
  EXPECT_EQ(program.linked(0, out0[0]), out0[0]);
  EXPECT_EQ(program.linked(0, later0[0]), later0[0]);
}

TEST(LinkerCollectives, ACallOneRankDoesNotIssueIsAMismatch) {
  terms::TermStore store;
  ir::Trace reference;
  auto ranks = empty_ranks(2);
  TermId a1 = store.var("a1", terms::VarKind::Reference);
  auto out1 = add_collective(store, ranks[1], ir::CollectiveKind::AllReduce,
                             ir::ReduceOp::Sum, {0, 1}, {a1}, 1, 5);
  ir::LinkedProgram program(store, reference, ranks);
  ASSERT_EQ(program.mismatches().size(), 1u);
  const ir::CollectiveMismatch &m = program.mismatches()[0];
  EXPECT_EQ(m.rank_a, 1);
  EXPECT_EQ(m.rank_b, 0);
  EXPECT_EQ(m.loc_a.line, 5);
  EXPECT_EQ(m.loc_b, ir::SourceLoc{});
  EXPECT_EQ(m.message, "rank 1 issues collective #0 on group [0, 1] but rank 0 does not");
  EXPECT_EQ(program.linked(1, out1[0]), out1[0]);
}

TEST(LinkerCollectives, DifferentShapesAreAMismatch) {
  terms::TermStore store;
  ir::Trace reference;
  auto ranks = empty_ranks(2);
  TermId a = store.var("a", terms::VarKind::Reference);
  add_collective(store, ranks[0], ir::CollectiveKind::AllReduce, ir::ReduceOp::Sum,
                 {0, 1}, {a, a}, 2, 3);
  add_collective(store, ranks[1], ir::CollectiveKind::AllReduce, ir::ReduceOp::Sum,
                 {0, 1}, {a, a, a}, 3, 3);
  ir::LinkedProgram program(store, reference, ranks);
  ASSERT_EQ(program.mismatches().size(), 1u);
  EXPECT_EQ(program.mismatches()[0].message,
            "collective #0 on group [0, 1] carries float32 [2] on rank 0 but float32 [3] "
            "on rank 1");
}
