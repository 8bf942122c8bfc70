// The extended reals (-inf, inf, NaN) as PyTorch computes with them, and the
// rule that evaluation never invents a difference (overflow, rounding).
#include "checkers/prover/prover.h"
#include "models/terms/evaluate.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace shardproof;
using namespace shardproof::terms;
using prover::Verdict;

namespace {
struct Extended_ {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference);
  TermId y = s.var("y", VarKind::Reference);
  TermId neg_inf = s.extended(Extended::NegInf);
  TermId pos_inf = s.extended(Extended::PosInf);
  TermId nan = s.extended(Extended::NaN);
  TermId unmodelled = s.extended(Extended::Unmodelled);
};

Verdict prove(TermStore &s, TermId lhs, TermId rhs) {
  prover::ProverOptions options;
  options.limits.wall = std::chrono::milliseconds(10000);
  return prover::prove_equal(s, std::span(&lhs, 1), std::span(&rhs, 1), options);
}
} // namespace

TEST(ExtendedReals, NonFiniteDoublesBecomeExtendedConstants) {
  Extended_ e;
  EXPECT_EQ(e.s.constant_from_double(-INFINITY), e.neg_inf);
  EXPECT_EQ(e.s.constant_from_double(INFINITY), e.pos_inf);
  EXPECT_EQ(e.s.constant_from_double(NAN), e.nan);
  EXPECT_TRUE(e.s.is_concrete(e.neg_inf));
  EXPECT_FALSE(e.s.is_const(e.neg_inf)); // no rational value to read
  EXPECT_FALSE(e.s.is_concrete(e.unmodelled));
}

TEST(ExtendedReals, SumsAbsorbIntoInfinityAndOppositeInfinitiesAreNaN) {
  Extended_ e;
  auto &s = e.s;
  EXPECT_EQ(s.add(s.mul(e.x, e.y), e.neg_inf), e.neg_inf); // finite + -inf
  EXPECT_EQ(s.add(e.neg_inf, e.neg_inf), e.neg_inf);
  EXPECT_EQ(s.add(e.neg_inf, e.pos_inf), e.nan);
  EXPECT_EQ(s.sub(e.neg_inf, e.neg_inf), e.nan); // a fully masked row's x - max
  EXPECT_EQ(s.add(e.x, e.nan), e.nan);
  EXPECT_EQ(s.add(e.nan, e.unmodelled), e.unmodelled); // nothing hides it
}

TEST(ExtendedReals, ProductsAreDecidedOnlyForConcreteFactors) {
  Extended_ e;
  auto &s = e.s;
  EXPECT_EQ(s.mul(s.constant(2), e.neg_inf), e.neg_inf);
  EXPECT_EQ(s.mul(e.neg_inf, s.constant(mpq_class(-1, 8))), e.pos_inf);
  EXPECT_EQ(s.mul(s.zero(), e.neg_inf), e.nan); // 0 * inf
  EXPECT_EQ(s.mul(e.neg_inf, e.neg_inf), e.pos_inf);
  EXPECT_EQ(s.mul(s.zero(), e.nan), e.nan); // not 0: NaN absorbs
  // A symbolic factor may be 0 or of either sign: undecided, never a guess.
  EXPECT_EQ(s.mul(e.x, e.neg_inf), e.unmodelled);
  EXPECT_EQ(s.neg(e.pos_inf), e.neg_inf);
  EXPECT_EQ(s.inv(e.neg_inf), s.zero());
  EXPECT_EQ(s.div(e.x, e.pos_inf), s.zero()); // x * (1/inf) = x * 0
}

TEST(ExtendedReals, FunctionsAtInfinityTakeTheirLimits) {
  Extended_ e;
  auto &s = e.s;
  EXPECT_EQ(s.app(Fn::Exp, e.neg_inf), s.zero());
  EXPECT_EQ(s.app(Fn::Exp, e.pos_inf), e.pos_inf);
  EXPECT_EQ(s.app(Fn::Log, s.app(Fn::Exp, e.neg_inf)), s.app(Fn::Log, s.zero()));
  EXPECT_EQ(s.app(Fn::Log, e.neg_inf), e.nan);
  EXPECT_EQ(s.app(Fn::Tanh, e.neg_inf), s.constant(-1));
  EXPECT_EQ(s.app(Fn::Exp, e.nan), e.nan);
  // gelu(-inf) is -inf * 0 in some kernels: not decided here.
  EXPECT_EQ(s.app(Fn::Gelu, e.neg_inf), e.unmodelled);
}

TEST(ExtendedReals, MaximaAndComparisons) {
  Extended_ e;
  auto &s = e.s;
  EXPECT_EQ(s.max(e.x, e.neg_inf), e.x); // -inf is max's unit
  EXPECT_EQ(s.max(e.neg_inf, e.x), e.x);
  EXPECT_EQ(s.max(e.x, e.pos_inf), e.pos_inf);
  EXPECT_EQ(s.min(e.x, e.neg_inf), e.neg_inf);
  EXPECT_EQ(s.max(e.x, e.nan), e.nan); // torch.maximum propagates NaN
  EXPECT_EQ(s.max(e.neg_inf, e.neg_inf), e.neg_inf);
  EXPECT_EQ(s.lt(e.neg_inf, e.x), s.one());
  EXPECT_EQ(s.lt(e.x, e.neg_inf), s.zero());
  EXPECT_EQ(s.le(e.neg_inf, e.neg_inf), s.one());
  EXPECT_EQ(s.lt(e.neg_inf, e.neg_inf), s.zero());
  EXPECT_EQ(s.lt(e.nan, e.x), s.zero());
  EXPECT_EQ(s.le(e.nan, e.nan), s.zero());
}

TEST(ExtendedReals, ASymbolicChoiceOfAnInfinityIsUndecided) {
  Extended_ e;
  auto &s = e.s;
  TermId cond = s.lt(e.x, e.y);
  EXPECT_EQ(s.ite(cond, e.x, e.neg_inf), e.unmodelled);
  EXPECT_EQ(s.ite(s.one(), e.neg_inf, e.x), e.neg_inf); // a concrete mask
  EXPECT_EQ(s.ite(cond, e.neg_inf, e.neg_inf), e.neg_inf);
}

TEST(ExtendedReals, SoftmaxOfAFullyMaskedRowIsNaNAsPyTorchComputesIt) {
  Extended_ e;
  auto &s = e.s;
  // exp(x_i - max(x)) / sum_j exp(x_j - max(x)) over a row of -inf.
  TermId row[] = {e.neg_inf, e.neg_inf};
  TermId m = s.max(row[0], row[1]);
  TermId e0 = s.app(Fn::Exp, s.sub(row[0], m)), e1 = s.app(Fn::Exp, s.sub(row[1], m));
  EXPECT_EQ(s.div(e0, s.add(e0, e1)), e.nan);
  // A partly masked row: the masked position is exactly 0, the other 1.
  TermId part[] = {e.x, e.neg_inf};
  TermId mp = s.max(part[0], part[1]);
  TermId p0 = s.app(Fn::Exp, s.sub(part[0], mp)), p1 = s.app(Fn::Exp, s.sub(part[1], mp));
  EXPECT_EQ(p1, s.zero());
  EXPECT_EQ(s.div(p0, s.add(p0, p1)), s.div(p0, p0));
}

TEST(ExtendedReals, LinkingRebuildsThroughTheRules) {
  Extended_ e;
  auto &s = e.s;
  TermId p = s.var("all_reduce#0", VarKind::Placeholder);
  TermId t = s.app(Fn::Exp, s.sub(e.x, p));
  Substitution sub(s);
  sub.bind(p, e.pos_inf); // x - inf = -inf, exp(-inf) = 0
  EXPECT_EQ(sub.apply(t), s.zero());
  Substitution other(s);
  other.bind(p, e.neg_inf);
  EXPECT_EQ(other.apply(s.mul(e.y, p)), e.unmodelled);
}

TEST(ExtendedReals, EvaluationGivesIEEEValuesInDoublesAndNoneExactly) {
  Extended_ e;
  DoubleEvaluator doubles(e.s, [](TermId) { return 1.0; });
  EXPECT_EQ(*doubles(e.neg_inf), -INFINITY);
  EXPECT_TRUE(std::isnan(*doubles(e.nan)));
  EXPECT_FALSE(doubles(e.unmodelled));
  ExactEvaluator exact(e.s, [](TermId) { return mpq_class(1); });
  EXPECT_FALSE(exact(e.neg_inf));
  EXPECT_TRUE(nearly_equal(-INFINITY, -INFINITY));
  EXPECT_FALSE(nearly_equal(-INFINITY, INFINITY));
}

TEST(ExtendedReals, TheSameInfinityIsEqualAndNaNEqualsNothing) {
  Extended_ e;
  auto &s = e.s;
  EXPECT_EQ(prove(s, e.neg_inf, s.constant_from_double(-INFINITY)).kind,
            Verdict::Kind::Proved);
  Verdict nan = prove(s, e.nan, e.nan);
  EXPECT_EQ(nan.kind, Verdict::Kind::Unknown);
  EXPECT_NE(nan.why.find("NaN"), std::string::npos) << nan.why;
  EXPECT_EQ(prove(s, e.unmodelled, e.unmodelled).kind, Verdict::Kind::Unknown);
}

TEST(ExtendedReals, AnInfinityAgainstARealValueIsADifference) {
  Extended_ e;
  auto &s = e.s;
  Verdict v = prove(s, s.add(e.x, e.y), e.neg_inf);
  ASSERT_EQ(v.kind, Verdict::Kind::Refuted);
  EXPECT_EQ(v.counterexample->rhs, -INFINITY);
  EXPECT_TRUE(std::isfinite(v.counterexample->lhs));
  EXPECT_EQ(prove(s, e.neg_inf, e.pos_inf).kind, Verdict::Kind::Refuted);
  EXPECT_EQ(prove(s, e.nan, e.x).kind, Verdict::Kind::Refuted);
}

TEST(ExtendedReals, AnUndecidedElementKeepsTheObligationFromBeingProved) {
  Extended_ e;
  auto &s = e.s;
  TermId lhs[] = {e.x, e.nan}, rhs[] = {e.x, e.nan};
  prover::ProverOptions options;
  Verdict v = prover::prove_equal(s, lhs, rhs, options);
  EXPECT_EQ(v.kind, Verdict::Kind::Unknown);
  // ... while a real difference elsewhere is still a refutation.
  TermId wrong[] = {e.y, e.nan};
  EXPECT_EQ(prover::prove_equal(s, lhs, wrong, options).kind, Verdict::Kind::Refuted);
}

// exp(b) sigmoid(-b) = sigmoid(b) for every real b (the normal form does not
// know it), but for b = 1000 e^x doubles give inf * 0 = NaN at every sample:
// the old falsifier called that a difference.
TEST(EvaluationNeverInventsADifference, OverflowToInfOrNaNIsNoCounterexample) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference);
  TermId big = s.mul(s.constant(1000), s.app(Fn::Exp, x));
  TermId product = s.mul(s.app(Fn::Exp, big), s.app(Fn::Sigmoid, s.neg(big)));
  Verdict v = prove(s, product, s.app(Fn::Sigmoid, big));
  EXPECT_NE(v.kind, Verdict::Kind::Refuted);
  EXPECT_NE(v.why.find("overflow"), std::string::npos) << v.why;
}

// (exp(x) exp(y) - exp(x + y)) * 1e12 + tanh(z) = tanh(z) over the reals;
// doubles leave ~1e-4 of rounding noise, far above the falsifier's 1e-7.
TEST(EvaluationNeverInventsADifference, RoundingNoiseIsNoCounterexample) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId z = s.var("z", VarKind::Reference);
  TermId noise =
      s.sub(s.mul(s.app(Fn::Exp, x), s.app(Fn::Exp, y)), s.app(Fn::Exp, s.add(x, y)));
  TermId lhs =
      s.add(s.mul(noise, s.constant(mpq_class("1000000000000"))), s.app(Fn::Tanh, z));
  Verdict v = prove(s, lhs, s.app(Fn::Tanh, z));
  EXPECT_NE(v.kind, Verdict::Kind::Refuted);
}

// A real difference hidden by overflow at the usual sample range shows at
// smaller values, and its counterexample evaluates finite.
TEST(EvaluationNeverInventsADifference, OverflowingPointsAreTriedNearerZero) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId huge = s.app(Fn::Exp, s.mul(s.constant(3000), s.mul(x, x)));
  Verdict v = prove(s, s.add(huge, y), huge);
  ASSERT_EQ(v.kind, Verdict::Kind::Refuted);
  EXPECT_TRUE(std::isfinite(v.counterexample->lhs));
  EXPECT_TRUE(std::isfinite(v.counterexample->rhs));
}

TEST(NormalForm, ExpOfASumIsAProductSoAShiftedSoftmaxIsTheUnshiftedOne) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId m = s.max(x, y);
  auto shifted = [&](TermId v) { return s.app(Fn::Exp, s.sub(v, m)); };
  TermId lhs = s.div(shifted(x), s.add(shifted(x), shifted(y)));
  TermId rhs = s.div(s.app(Fn::Exp, x), s.add(s.app(Fn::Exp, x), s.app(Fn::Exp, y)));
  Verdict v = prove(s, lhs, rhs);
  EXPECT_EQ(v.kind, Verdict::Kind::Proved);
  EXPECT_EQ(v.method, "normal form");
}
