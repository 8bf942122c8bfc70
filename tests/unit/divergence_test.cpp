// The divergence locator (value_check.h) on hand-built traces: which node a
// wrong value is blamed on, and which of its named strategies found it.
#include "checkers/value_check.h"

#include <gtest/gtest.h>

#include <string>

using namespace shardproof;
using checkers::Layout;
using terms::TermId;

namespace {
ir::NodeId add(ir::Trace &trace, std::string op, ir::OpCategory category, int line,
               std::vector<ir::NodeId> inputs, ir::Shape shape,
               std::vector<TermId> elements) {
  ir::Node n;
  n.op = std::move(op);
  n.category = category;
  n.loc = {"model.py", line, 0, {}};
  n.inputs = std::move(inputs);
  n.shape = std::move(shape);
  n.elements = std::move(elements);
  return trace.add_node(std::move(n));
}

ir::Leaf leaf(ir::LeafRole role, std::string name, ir::Shape shape,
              std::vector<TermId> elements, int shard = 0, int shards = 1) {
  ir::Leaf l;
  l.role = role;
  l.name = std::move(name);
  l.shape = std::move(shape);
  l.elements = std::move(elements);
  if (shards > 1) {
    l.partition_dim = 0;
    l.shard_index = shard;
    l.shard_count = shards;
  }
  return l;
}

// y = 2 * sum(x * w) over x, w of shape [2], the reference and two ranks
// that each hold one element of x and w (line 1: x, 2: w, 3: x * w, 4: sum,
// 5: 2 * sum). `reduce` adds, on every rank, line 6: an all_reduce of y with
// that op, which the reference does not have.
struct Program {
  terms::TermStore store;
  ir::Trace reference;
  std::vector<ir::Trace> ranks;
  std::unique_ptr<ir::LinkedProgram> linked;
  ir::NodeId out = 0; // every rank's last node

  explicit Program(std::optional<ir::ReduceOp> reduce) {
    trace(reference, 1, 0, std::nullopt);
    for (int r = 0; r < 2; ++r)
      out = trace(ranks.emplace_back(), 2, r, reduce);
    linked = std::make_unique<ir::LinkedProgram>(store, reference, ranks);
  }

  ir::NodeId trace(ir::Trace &t, int world, int rank,
                   std::optional<ir::ReduceOp> reduce) {
    t.world = world;
    t.rank = rank;
    const auto kind = world == 1 ? terms::VarKind::Reference : terms::VarKind::RankLocal;
    const int n = world == 1 ? 2 : 1;
    const std::string tag = world == 1 ? "" : "@" + std::to_string(rank);
    std::vector<TermId> x, w, xw;
    for (int i = 0; i < n; ++i) {
      x.push_back(store.var("x" + std::to_string(i) + tag, kind));
      w.push_back(store.var("w" + std::to_string(i) + tag, kind));
      xw.push_back(store.mul(x[i], w[i]));
    }
    t.leaves.push_back(leaf(ir::LeafRole::Input, "input#0", {n}, x, rank, world));
    t.leaves.push_back(leaf(ir::LeafRole::Parameter, "w", {n}, w, rank, world));
    ir::NodeId nx = add(t, "input", ir::OpCategory::Leaf, 1, {}, {n}, x);
    ir::NodeId nw = add(t, "parameter", ir::OpCategory::Leaf, 2, {}, {n}, w);
    ir::NodeId nxw = add(t, "mul", ir::OpCategory::Elementwise, 3, {nx, nw}, {n}, xw);
    TermId sum = n == 1 ? xw[0] : store.add(xw[0], xw[1]);
    ir::NodeId nsum = add(t, "sum", ir::OpCategory::Reduction, 4, {nxw}, {}, {sum});
    TermId y = store.mul(store.constant(2), sum);
    ir::NodeId last = add(t, "mul", ir::OpCategory::Elementwise, 5, {nsum}, {}, {y});
    if (reduce) {
      ir::Collective c;
      c.op = *reduce;
      c.group = {0, 1};
      c.input_shape = c.output_shape = {1};
      c.inputs = {y};
      c.outputs = {
          store.var("all_reduce@" + std::to_string(rank), terms::VarKind::Placeholder)};
      c.loc = {"model.py", 6, 0, {}};
      c.node = last =
          add(t, "all_reduce", ir::OpCategory::Collective, 6, {last}, {}, c.outputs);
      t.collectives.push_back(c);
    }
    return last;
  }

  // y as the reference and every rank hold it.
  checkers::DistributedValue value() {
    checkers::DistributedValue v;
    v.reference_shape = {};
    v.reference = reference.nodes.back().elements;
    for (int r = 0; r < 2; ++r) {
      v.rank_shapes.push_back({});
      v.ranks.push_back(linked->linked(r, ranks[r].node(out).elements));
    }
    return v;
  }

  std::optional<checkers::Divergence> locate(const Layout &value_layout) {
    return checkers::locate_divergence(store, *linked, 0, out, value_layout,
                                       prover::Seeds{});
  }
};
} // namespace

TEST(DivergenceLocator, MissingReductionIsBlamedOnTheSumThatMadeThePartialValue) {
  Program p(std::nullopt);
  ASSERT_TRUE(p.linked->mismatches().empty());
  Layout layout = checkers::infer_layout(p.store, p.value(), prover::Seeds{});
  ASSERT_EQ(layout.kind, Layout::Kind::PartialSum);
  auto d = p.locate(layout);
  ASSERT_TRUE(d.has_value());
  // Not line 5, which only carried the partial value on.
  EXPECT_EQ(d->loc.line, 4);
  EXPECT_EQ(d->op, "sum");
  EXPECT_EQ(d->category, ir::OpCategory::Reduction);
  EXPECT_EQ(d->layout.kind, Layout::Kind::PartialSum);
  EXPECT_FALSE(d->off_reference_path);
  EXPECT_EQ(d->strategy, "unreduced-partial-sum");
}

TEST(DivergenceLocator, ReducedValueHasNoDivergence) {
  Program p(ir::ReduceOp::Sum);
  ASSERT_TRUE(p.linked->mismatches().empty());
  Layout layout = checkers::infer_layout(p.store, p.value(), prover::Seeds{});
  ASSERT_EQ(layout.kind, Layout::Kind::Replicated);
  EXPECT_FALSE(p.locate(layout).has_value());
}

TEST(DivergenceLocator, AveragedSumIsBlamedOnTheCollectiveThatScaledIt) {
  // all_reduce(avg) of a partial sum: every rank holds half the reference.
  Program p(ir::ReduceOp::Avg);
  Layout layout = checkers::infer_layout(p.store, p.value(), prover::Seeds{});
  ASSERT_EQ(layout.kind, Layout::Kind::Scaled);
  EXPECT_EQ(layout.factor, mpq_class(1, 2));
  auto d = p.locate(layout);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->loc.line, 6);
  EXPECT_EQ(d->op, "all_reduce");
  EXPECT_EQ(d->layout.kind, Layout::Kind::Scaled);
  EXPECT_EQ(d->layout.factor, mpq_class(1, 2));
  EXPECT_EQ(d->strategy, "scaled-chain");
}

TEST(DivergenceLocator, AValueMadeInTheRecipeIsReportedWhereTheTreeFirstTakesIt) {
  // recipe.py:1 slices an input (harness); tree.py:2 uses another value,
  // tree.py:3 reshapes the slice, tree.py:4 returns the result.
  ir::Trace trace;
  auto node = [&](std::string file, int line, std::string op,
                  std::vector<ir::NodeId> inputs, bool harness) {
    ir::Node n;
    n.op = std::move(op);
    n.loc = {std::move(file), line, 0, {}, harness};
    n.inputs = std::move(inputs);
    return trace.add_node(std::move(n));
  };
  ir::NodeId slice = node("recipe.py", 1, "narrow", {}, true);
  ir::NodeId other = node("tree.py", 2, "ones", {}, false);
  ir::NodeId reshape = node("tree.py", 3, "reshape", {slice}, false);
  ir::NodeId out = node("tree.py", 4, "add", {reshape, other}, false);
  checkers::Divergence d{
      trace.node(slice).loc, "narrow", ir::OpCategory::Other, Layout{}, true, slice, {}};
  checkers::move_into_analysed_code(trace, d, out);
  EXPECT_EQ(d.loc.str(), "tree.py:3");
  EXPECT_EQ(d.op, "reshape");
  EXPECT_EQ(d.node, reshape);

  // A divergence in the tree stays where it is.
  checkers::Divergence in_tree{
      trace.node(other).loc, "ones", ir::OpCategory::Other, Layout{}, false, other, {}};
  checkers::move_into_analysed_code(trace, in_tree, out);
  EXPECT_EQ(in_tree.loc.line, 2);
}

TEST(DivergenceLocator, AValueTheRecipeFinishesIsMadeWhereTheTreeLastTouchedIt) {
  // tree.py:1 averages a partition, tree.py:2 makes an unrelated value later,
  // recipe.py:3 gathers the partition and recipe.py:4 views it as .grad.
  ir::Trace trace;
  auto node = [&](std::string file, int line, std::vector<ir::NodeId> inputs,
                  bool harness) {
    ir::Node n;
    n.op = "op";
    n.loc = {std::move(file), line, 0, {}, harness};
    n.inputs = std::move(inputs);
    return trace.add_node(std::move(n));
  };
  ir::NodeId average = node("tree.py", 1, {}, false);
  node("tree.py", 2, {}, false);
  ir::NodeId gather = node("recipe.py", 3, {average}, true);
  ir::NodeId grad = node("recipe.py", 4, {gather}, true);
  EXPECT_EQ(checkers::last_made_in_analysed_code(trace, grad), average);
  EXPECT_EQ(checkers::last_made_in_analysed_code(trace, average), average);
  // A divergence at the gather: no tree operation takes it on the way to
  // .grad, so it moves back to the average.
  checkers::Divergence d{
      trace.node(gather).loc, "op", ir::OpCategory::Other, Layout{}, true, gather, {}};
  checkers::move_into_analysed_code(trace, d, grad);
  EXPECT_EQ(d.loc.str(), "tree.py:1");
  EXPECT_EQ(d.node, average);

  ir::NodeId input = node("recipe.py", 5, {}, true);
  EXPECT_EQ(
      checkers::last_made_in_analysed_code(trace, node("recipe.py", 6, {input}, true)),
      std::nullopt);
}

// out = take(x) * p over rows: x and p of shape [2, 1] (line 1: x, 2: p,
// 3: x's rows taken in `order`, 4: the product). The reference takes x's
// rows in order; each of two ranks holds all of x and p (replicated) and
// takes them in `rank_order`.
struct RowsProgram {
  terms::TermStore store;
  ir::Trace reference;
  std::vector<ir::Trace> ranks;
  std::unique_ptr<ir::LinkedProgram> linked;
  ir::NodeId out = 0;

  explicit RowsProgram(std::vector<int> rank_order) {
    trace(reference, 1, 0, {0, 1});
    for (int r = 0; r < 2; ++r)
      out = trace(ranks.emplace_back(), 2, r, rank_order);
    linked = std::make_unique<ir::LinkedProgram>(store, reference, ranks);
  }

  ir::NodeId trace(ir::Trace &t, int world, int rank, const std::vector<int> &order) {
    t.world = world;
    t.rank = rank;
    const auto kind = world == 1 ? terms::VarKind::Reference : terms::VarKind::RankLocal;
    const std::string tag = world == 1 ? "" : "@" + std::to_string(rank);
    std::vector<TermId> x, p, taken, product;
    for (int i = 0; i < 2; ++i) {
      x.push_back(store.var("x" + std::to_string(i) + tag, kind));
      p.push_back(store.var("p" + std::to_string(i) + tag, kind));
    }
    for (int i = 0; i < 2; ++i) {
      taken.push_back(x[order[i]]);
      product.push_back(store.mul(taken[i], p[i]));
    }
    t.leaves.push_back(leaf(ir::LeafRole::Input, "input#0", {2, 1}, x));
    t.leaves.push_back(leaf(ir::LeafRole::Input, "input#1", {2, 1}, p));
    ir::NodeId nx = add(t, "input", ir::OpCategory::Leaf, 1, {}, {2, 1}, x);
    ir::NodeId np = add(t, "input", ir::OpCategory::Leaf, 2, {}, {2, 1}, p);
    ir::NodeId nt = add(t, "index", ir::OpCategory::Index, 3, {nx}, {2, 1}, taken);
    return add(t, "mul", ir::OpCategory::Elementwise, 4, {nt, np}, {2, 1}, product);
  }

  std::optional<checkers::Divergence> locate() {
    checkers::DistributedValue v;
    v.reference_shape = {2, 1};
    v.reference = reference.nodes.back().elements;
    for (int r = 0; r < 2; ++r) {
      v.rank_shapes.push_back({2, 1});
      v.ranks.push_back(linked->linked(r, ranks[r].node(out).elements));
    }
    Layout layout = checkers::infer_layout(store, v, prover::Seeds{});
    return checkers::locate_divergence(store, *linked, 0, out, layout, prover::Seeds{});
  }
};

TEST(DivergenceLocator, OperandsInDifferentRowOrdersAreBlamedWhereTheyAreCombined) {
  RowsProgram p({1, 0}); // x's rows swapped, p's not: x1 * p0, x0 * p1
  ASSERT_TRUE(p.linked->mismatches().empty());
  auto d = p.locate();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->loc.line, 4);
  EXPECT_EQ(d->strategy, "misaligned-rows");
  ASSERT_TRUE(d->misaligned_rows.has_value());
  EXPECT_EQ(d->misaligned_rows->row, 0u);
  EXPECT_EQ(d->misaligned_rows->first, 1u);  // x's row 1 ...
  EXPECT_EQ(d->misaligned_rows->second, 0u); // ... with p's row 0
}

TEST(DivergenceLocator, OperandsInTheSameRowOrderAreNotMisaligned) {
  EXPECT_FALSE(RowsProgram({0, 1}).locate().has_value());
}
