#include "checkers/prover/prover.h"

#include <gtest/gtest.h>

using namespace shardproof;
using namespace shardproof::terms;
using prover::Verdict;

namespace {
Verdict prove(TermStore &s, TermId lhs, TermId rhs, int wall_ms = 10000) {
  prover::ProverOptions options;
  options.limits.wall = std::chrono::milliseconds(wall_ms);
  return prover::prove_equal(s, std::span(&lhs, 1), std::span(&rhs, 1), options);
}

// Sum over pairs of Motzkin polynomials, which is >= 0 everywhere but only
// by a real-algebraic argument: nlsat proves one pair quickly and six slowly.
TermId motzkin_sum(TermStore &s, int pairs) {
  TermId acc = s.zero();
  for (int i = 0; i < pairs; ++i) {
    TermId x = s.var("x" + std::to_string(i), VarKind::Reference);
    TermId y = s.var("y" + std::to_string(i), VarKind::Reference);
    TermId x2 = s.mul(x, x), y2 = s.mul(y, y);
    TermId m = s.add(s.add(s.mul(s.mul(x2, x2), y2), s.mul(x2, s.mul(y2, y2))),
                     s.add(s.mul(s.constant(-3), s.mul(x2, y2)), s.one()));
    acc = s.add(acc, m);
  }
  return s.ite(s.lt(acc, s.zero()), s.one(), s.zero());
}
} // namespace

TEST(Prover, NormalFormProvesPolynomialIdentity) {
  TermStore s;
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  Verdict v =
      prove(s, s.mul(s.add(a, b), s.add(a, b)),
            s.add(s.add(s.mul(a, a), s.mul(s.constant(2), s.mul(a, b))), s.mul(b, b)));
  EXPECT_EQ(v.kind, Verdict::Kind::Proved);
  EXPECT_EQ(v.method, "normal form");
}

TEST(Prover, EvaluationRefutesWithMinimisedCounterexample) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId z = s.var("z", VarKind::Reference);
  // x + y*z vs x: differs exactly when y*z != 0
  Verdict v = prove(s, s.add(x, s.mul(y, z)), x);
  ASSERT_EQ(v.kind, Verdict::Kind::Refuted);
  ASSERT_TRUE(v.counterexample);
  const auto &values = v.counterexample->values;
  EXPECT_EQ(values.at(x), 0.0); // shrunk away: it does not matter
  EXPECT_NE(values.at(y), 0.0);
  EXPECT_NE(values.at(z), 0.0);
  EXPECT_TRUE(std::abs(values.at(y)) == 1.0 && std::abs(values.at(z)) == 1.0);
  EXPECT_NE(v.counterexample->lhs, v.counterexample->rhs);
}

TEST(Prover, CounterexampleNamesThePairInTheCallersList) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  // Pair 0 is proved by its normal form, pair 1 is refuted: the
  // counterexample must say 1, not its index among the unproved pairs.
  std::vector<TermId> lhs{s.add(x, y), s.mul(x, y)};
  std::vector<TermId> rhs{s.add(y, x), s.add(x, y)};
  prover::ProverOptions options;
  Verdict v = prover::prove_equal(s, lhs, rhs, options);
  ASSERT_EQ(v.kind, Verdict::Kind::Refuted);
  EXPECT_EQ(v.counterexample->element, 1u);
}

TEST(Prover, Z3ProvesPiecewiseIdentity) {
  TermStore s;
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  // max(a, b) = -min(-a, -b): different atoms, so only the solver can tell.
  Verdict v = prove(s, s.max(a, b), s.neg(s.min(s.neg(a), s.neg(b))));
  EXPECT_EQ(v.kind, Verdict::Kind::Proved);
  EXPECT_EQ(v.method, "z3");
}

TEST(Prover, Z3FindsTheCaseRandomPointsMiss) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  // x * (1/x) * y = y fails only at x = 0, which random points never hit.
  Verdict v = prove(s, s.mul(s.mul(x, s.inv(x)), y), y);
  ASSERT_EQ(v.kind, Verdict::Kind::Refuted);
  EXPECT_EQ(v.counterexample->values.at(x), 0.0);
}

TEST(Prover, UninterpretedModelThatRealSemanticsRejectIsUnknown) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference);
  // relu(x) = max(x, 0) holds for the real relu, but not for an arbitrary
  // function the solver may pick: the answer must be "could not prove".
  Verdict v = prove(s, s.app(Fn::Relu, x), s.max(x, s.zero()));
  EXPECT_EQ(v.kind, Verdict::Kind::Unknown);
  EXPECT_NE(v.why.find("real semantics"), std::string::npos) << v.why;
}

TEST(Prover, HardQueryUnderTheWorkerLimitIsCouldNotProve) {
  TermStore easy_store;
  Verdict easy = prove(easy_store, motzkin_sum(easy_store, 1), easy_store.zero());
  ASSERT_EQ(easy.kind, Verdict::Kind::Proved) << easy.why; // the shape is provable

  TermStore s;
  auto start = std::chrono::steady_clock::now();
  Verdict hard = prove(s, motzkin_sum(s, 6), s.zero(), /*wall_ms=*/300);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(hard.kind, Verdict::Kind::Unknown);
  EXPECT_NE(hard.why.find("did not finish"), std::string::npos) << hard.why;
  EXPECT_LT(seconds, 30.0); // killed, not waited for
}

TEST(Prover, TargetBudgetCutsTheObligationAndSkipsTheRest) {
  using Clock = prover::BudgetedProver::Clock;
  prover::ProverOptions options; // 10 s per obligation
  auto budget = std::chrono::milliseconds(400);
  prover::BudgetedProver budgeted(options, Clock::now() + budget, budget);
  TermStore s;
  TermId hard = motzkin_sum(s, 6), zero = s.zero();
  auto start = Clock::now();
  Verdict first = budgeted.prove(s, std::span(&hard, 1), std::span(&zero, 1));
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(first.kind, Verdict::Kind::Unknown);
  EXPECT_NE(first.why.find("did not finish within 0."), std::string::npos) << first.why;
  EXPECT_LT(seconds, 5.0); // the budget's limit, not the obligation's 10 s

  // Spent: even an easy obligation is not tried, and says why.
  TermId easy = motzkin_sum(s, 1);
  Verdict next = budgeted.prove(s, std::span(&easy, 1), std::span(&zero, 1));
  EXPECT_EQ(next.kind, Verdict::Kind::Unknown);
  EXPECT_EQ(next.why, "the target's time budget (0.4 s, --target-timeout) was spent "
                      "before this obligation");
}

TEST(Prover, TargetBudgetLeftProvesAsBefore) {
  using Clock = prover::BudgetedProver::Clock;
  auto budget = std::chrono::milliseconds(60000);
  prover::BudgetedProver budgeted({}, Clock::now() + budget, budget);
  TermStore s;
  TermId easy = motzkin_sum(s, 1), zero = s.zero();
  EXPECT_EQ(budgeted.prove(s, std::span(&easy, 1), std::span(&zero, 1)).kind,
            Verdict::Kind::Proved);
}

TEST(Prover, OpaqueValuesBlockProofs) {
  TermStore s;
  TermId o = s.var("fused_op", VarKind::Opaque, "model.py:12");
  Verdict v = prove(s, o, o);
  EXPECT_EQ(v.kind, Verdict::Kind::Unknown);
  EXPECT_NE(v.why.find("model.py:12"), std::string::npos);
}

TEST(Prover, UnresolvedPlaceholdersBlockProofs) {
  TermStore s;
  TermId p = s.var("all_reduce#0", VarKind::Placeholder, "m.py:3");
  Verdict v = prove(s, p, p);
  EXPECT_EQ(v.kind, Verdict::Kind::Unknown);
}

// A path's obligations hold where its decisions come out as they did: |x| is
// x on the path where 0 < x was true, and not on the other, where the
// counterexample takes that path.
TEST(Prover, PathGuardProvesOnThePathAndRefutesOnlyAtAnInputThatTakesIt) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference);
  TermId abs_x = s.max(x, s.neg(x)), positive = s.lt(s.zero(), x);
  prover::WorkerProver inner({});
  std::pair<TermId, bool> taken[] = {{positive, true}}, not_taken[] = {{positive, false}};

  prover::PathProver on_path(inner, prover::path_guard(s, taken));
  EXPECT_EQ(on_path.prove(s, std::span(&abs_x, 1), std::span(&x, 1)).kind,
            Verdict::Kind::Proved);

  prover::PathProver off_path(inner, prover::path_guard(s, not_taken));
  Verdict v = off_path.prove(s, std::span(&abs_x, 1), std::span(&x, 1));
  ASSERT_EQ(v.kind, Verdict::Kind::Refuted);
  ASSERT_TRUE(v.counterexample);
  EXPECT_LT(v.counterexample->values.at(x), 0.0);
}

// A pair equal without the guard is proved whatever the path.
TEST(Prover, PathGuardKeepsAnUnguardedProof) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId lhs = s.add(x, y), rhs = s.add(y, x);
  prover::WorkerProver inner({});
  std::pair<TermId, bool> decisions[] = {{s.lt(x, y), false}};
  prover::PathProver guarded(inner, prover::path_guard(s, decisions));
  Verdict v = guarded.prove(s, std::span(&lhs, 1), std::span(&rhs, 1));
  EXPECT_EQ(v.kind, Verdict::Kind::Proved);
  EXPECT_EQ(v.method, "normal form");
}
