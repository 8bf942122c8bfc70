// Whether the paths of value-dependent decisions checked so far are all
// there are (checkers/decision_paths.h).
#include "checkers/decision_paths.h"

#include <gtest/gtest.h>

using namespace shardproof;
using namespace shardproof::terms;
using checkers::PathDecisions;
using prover::Verdict;

namespace {
// A reference run whose leaves are `vars` (coverage matches runs by name).
ir::Trace run_of(std::vector<TermId> vars) {
  ir::Trace trace;
  ir::Leaf leaf;
  leaf.elements = std::move(vars);
  trace.leaves.push_back(std::move(leaf));
  return trace;
}

Verdict coverage(TermStore &s, const std::vector<PathDecisions> &paths) {
  prover::WorkerProver prover({});
  return checkers::prove_coverage(s, paths, prover, prover);
}

TEST(DecisionPaths, BothSidesOfABranchCoverEveryInput) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference);
  ir::Trace run = run_of({x});
  TermId positive = s.lt(s.zero(), x);
  Verdict v = coverage(s, {{&run, {{positive, true}}}, {&run, {{positive, false}}}});
  EXPECT_EQ(v.kind, Verdict::Kind::Proved) << v.why;
  EXPECT_TRUE(v.method.starts_with("orderings of the compared values")) << v.method;
}

TEST(DecisionPaths, OneSideIsNotAllAndTheCounterexampleTakesTheOther) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference);
  ir::Trace run = run_of({x});
  Verdict v = coverage(s, {{&run, {{s.lt(s.zero(), x), true}}}});
  ASSERT_EQ(v.kind, Verdict::Kind::Refuted);
  ASSERT_TRUE(v.counterexample);
  auto point = checkers::uncovered_point(s, *v.counterexample, 7);
  ASSERT_TRUE(point.contains("x"));
  EXPECT_LT(point.at("x"), 1e-3); // on the other side (nudged off a tie by 1e-6)
}

// argmax of three keys: each path says which key is largest. Two winners
// are not every input; the third completes them (ties excluded).
TEST(DecisionPaths, EveryWinnerOfAnArgmaxIsNeeded) {
  TermStore s;
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference),
         c = s.var("c", VarKind::Reference);
  ir::Trace run = run_of({a, b, c});
  auto wins = [&](TermId w, TermId o1, TermId o2) {
    return PathDecisions{&run, {{s.lt(o1, w), true}, {s.lt(o2, w), true}}};
  };
  std::vector<PathDecisions> paths{wins(a, b, c), wins(b, a, c)};
  EXPECT_NE(coverage(s, paths).kind, Verdict::Kind::Proved);
  paths.push_back(wins(c, a, b));
  EXPECT_EQ(coverage(s, paths).kind, Verdict::Kind::Proved);
}

// Each run of a target has variables of its own: the same name is the same
// input.
TEST(DecisionPaths, RunsAreMatchedByTheirVariablesNames) {
  TermStore s;
  TermId x1 = s.var("x", VarKind::Reference), x2 = s.var("x", VarKind::Reference);
  ir::Trace first = run_of({x1}), second = run_of({x2});
  Verdict v = coverage(s, {{&first, {{s.lt(s.zero(), x1), true}}},
                           {&second, {{s.lt(s.zero(), x2), false}}}});
  EXPECT_EQ(v.kind, Verdict::Kind::Proved) << v.why;
}

// A rank's own variable (created at a shape the reference has none of) is no
// input of the reference, even when it is named as one: deciding over it on
// one path and over the reference's input on another covers nothing.
TEST(DecisionPaths, ARanksOwnVariableIsNotTheReferenceInputOfItsName) {
  TermStore s;
  TermId x1 = s.var("x", VarKind::Reference), x2 = s.var("x", VarKind::Reference);
  TermId own = s.var("x", VarKind::RankLocal);
  ir::Trace first = run_of({x1}), second = run_of({x2});
  Verdict v = coverage(s, {{&first, {{s.lt(s.zero(), x1), true}}},
                           {&second, {{s.lt(s.zero(), own), false}}}});
  EXPECT_NE(v.kind, Verdict::Kind::Proved);
}
} // namespace

// Two tokens, each routed to the larger of two exps: three of the four
// routings checked. The one left is found by sampling with exp's meaning
// (the solver's counterexample treats exp as uninterpreted), and once all
// four are checked no point is outside them.
TEST(DecisionPaths, SamplingFindsTheRoutingNoCheckedPathTakes) {
  TermStore s;
  std::vector<TermId> vars;
  for (const char *name : {"x0", "y0", "x1", "y1"})
    vars.push_back(s.var(name, VarKind::Reference));
  ir::Trace run = run_of(vars);
  auto picks_x = [&](int token) {
    return s.lt(s.app(Fn::Exp, vars[2 * token + 1]), s.app(Fn::Exp, vars[2 * token]));
  };
  auto routing = [&](bool first, bool second) {
    return PathDecisions{&run, {{picks_x(0), first}, {picks_x(1), second}}};
  };
  std::vector<PathDecisions> paths{routing(true, true), routing(true, false),
                                   routing(false, false)};
  auto point = checkers::sampled_uncovered_point(s, paths, 3, 256);
  ASSERT_TRUE(point);
  EXPECT_LT(point->at("x0"), point->at("y0"));
  EXPECT_GT(point->at("x1"), point->at("y1"));
  paths.push_back(routing(false, true));
  EXPECT_FALSE(checkers::sampled_uncovered_point(s, paths, 3, 256));
}

// Megatron's gradient clipping: `norm == -1` (no rank has a norm) is never
// taken, since a norm is never negative; `clip_coeff < 1` and its other side
// are both checked. The free real standing for the norm keeps its sign.
TEST(DecisionPaths, AValueOfKnownSignNeedsNoPathBelowZero) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  ir::Trace run = run_of({x, y});
  TermId norm = s.app(Fn::Sqrt, s.add(s.mul(x, x), s.mul(y, y)));
  TermId coeff = s.inv(s.add(norm, s.constant(mpq_class(1, 1000000))));
  TermId not_missing = s.lt(s.constant(-1), norm);
  TermId clipped = s.lt(coeff, s.one());
  Verdict v = coverage(s, {{&run, {{not_missing, true}, {clipped, true}}},
                           {&run, {{not_missing, true}, {clipped, false}}}});
  EXPECT_EQ(v.kind, Verdict::Kind::Proved) << v.why;
  EXPECT_TRUE(v.method.starts_with("orderings of the compared values")) << v.method;

  // Without the sign (x itself compared), x < -1 is an input no path takes.
  TermId x_not_missing = s.lt(s.constant(-1), x);
  Verdict unsigned_value =
      coverage(s, {{&run, {{x_not_missing, true}, {clipped, true}}},
                   {&run, {{x_not_missing, true}, {clipped, false}}}});
  EXPECT_EQ(unsigned_value.kind, Verdict::Kind::Refuted);
}
