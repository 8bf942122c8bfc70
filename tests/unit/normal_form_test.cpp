#include "models/terms/evaluate.h"
#include "models/terms/normal_form.h"
#include "tests/unit/expression_generator.h"

#include <gtest/gtest.h>

#include <random>

using namespace shardproof::terms;
using shardproof::terms::testing::ExpressionGenerator;

// Soundness: normalisation never changes a term's value.
TEST(NormalForm, RandomExpressionsKeepTheirValue) {
  TermStore s;
  ExpressionGenerator gen(s, 42);
  Normalizer normalizer(s);
  std::mt19937 rng(7);
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    TermId t = gen.make(5);
    auto n = normalizer.normalize(t);
    ASSERT_TRUE(n.has_value());
    for (int point = 0; point < 4; ++point) {
      std::map<TermId, mpq_class> values;
      for (TermId v : gen.vars())
        values[v] = mpq_class(std::uniform_int_distribution<int>(-5, 5)(rng),
                              std::uniform_int_distribution<int>(1, 4)(rng));
      auto assign_d = [&](TermId v) { return values.at(v).get_d(); };
      auto assign_q = [&](TermId v) { return values.at(v); };
      ExactEvaluator exact_before(s, assign_q), exact_after(s, assign_q);
      auto qa = exact_before(t), qb = exact_after(*n);
      if (qa && qb) { // no transcendental function: compare exactly
        EXPECT_EQ(*qa, *qb) << s.to_string(t) << "  vs  " << s.to_string(*n);
      } else {
        DoubleEvaluator before(s, assign_d), after(s, assign_d);
        EXPECT_TRUE(nearly_equal(*before(t), *after(*n)))
            << s.to_string(t) << "  vs  " << s.to_string(*n);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 1600);
}

TEST(NormalForm, EqualPolynomialsBecomeTheSameTerm) {
  TermStore s;
  Normalizer n(s);
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  // (a + b)(a - b) = a*a - b*b
  TermId lhs = s.mul(s.add(a, b), s.sub(a, b));
  TermId rhs = s.sub(s.mul(a, a), s.mul(b, b));
  EXPECT_EQ(n.normalize(lhs), n.normalize(rhs));
  // commutativity and associativity
  EXPECT_EQ(n.normalize(s.add(a, b)), n.normalize(s.add(b, a)));
  // arguments of functions are normalised too
  EXPECT_EQ(n.normalize(s.app(Fn::Gelu, s.add(a, b))),
            n.normalize(s.app(Fn::Gelu, s.add(b, a))));
  // inverses distribute over products
  EXPECT_EQ(n.normalize(s.inv(s.mul(s.constant(2), a))),
            n.normalize(s.mul(s.constant(mpq_class(1, 2)), s.inv(a))));
}

TEST(NormalForm, DoesNotCancelAVariableAgainstItsInverse) {
  // x * inv(x) is 0 at x = 0, not 1: the normal form must keep them apart.
  TermStore s;
  Normalizer n(s);
  TermId x = s.var("x", VarKind::Reference);
  EXPECT_NE(n.normalize(s.mul(x, s.inv(x))), n.normalize(s.one()));
}

TEST(NormalForm, CancelsOnlyProvablyPositiveValuesAgainstTheirInverse) {
  TermStore s;
  Normalizer n(s);
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  TermId ea = s.app(Fn::Exp, a), eb = s.app(Fn::Exp, b);
  TermId sum = s.add(ea, eb);
  auto one = n.normalize(s.one());
  EXPECT_EQ(n.normalize(s.mul(ea, s.inv(ea))), one);
  EXPECT_EQ(n.normalize(s.mul(sum, s.inv(sum))), one);
  // A softmax sums to one.
  EXPECT_EQ(n.normalize(s.add(s.mul(ea, s.inv(sum)), s.mul(eb, s.inv(sum)))), one);
  // exp(a) - exp(b) may be 0, and a + exp(b) may be too: no cancellation.
  TermId difference = s.sub(ea, eb), mixed = s.add(a, eb);
  EXPECT_NE(n.normalize(s.mul(difference, s.inv(difference))), one);
  EXPECT_NE(n.normalize(s.mul(mixed, s.inv(mixed))), one);
}

TEST(NormalForm, CancellationKeepsTheValue) {
  // Random positive-coefficient sums of exps, their inverses, and products
  // with other terms: the normal form evaluates to what the term does.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    TermStore s;
    Normalizer n(s);
    std::vector<TermId> vars;
    for (int i = 0; i < 3; ++i)
      vars.push_back(s.var("v" + std::to_string(i), VarKind::Reference));
    auto pick = [&](int k) { return std::uniform_int_distribution<int>(0, k)(rng); };
    auto positive_sum = [&] {
      TermId sum = s.zero();
      for (int k = pick(2); k >= 0; --k)
        sum = s.add(sum, s.mul(s.constant(pick(3) + 1), s.app(Fn::Exp, vars[pick(2)])));
      return sum;
    };
    TermId normaliser = positive_sum();
    TermId term = s.zero();
    for (int k = pick(3); k >= 0; --k) {
      TermId factor =
          pick(1) ? positive_sum() : s.add(vars[pick(2)], s.constant(pick(2)));
      term = s.add(term, s.mul(factor, s.inv(pick(1) ? normaliser : positive_sum())));
    }
    auto canonical = n.normalize(term);
    ASSERT_TRUE(canonical);
    DoubleEvaluator eval(
        s, [&](TermId v) { return 0.3 * static_cast<double>(v % 7) - 0.8; });
    EXPECT_TRUE(nearly_equal(*eval(term), *eval(*canonical))) << trial;
  }
}

TEST(NormalForm, ScaledComparisonsShareAnAtom) {
  TermStore s;
  Normalizer n(s);
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId two = s.constant(2);
  EXPECT_EQ(n.normalize(s.lt(x, y)), n.normalize(s.lt(s.mul(two, x), s.mul(two, y))));
  EXPECT_EQ(n.normalize(s.max(x, x)), n.normalize(x));
}

TEST(NormalForm, MaximaAreFlattenedSortedAndDeduplicated) {
  TermStore s;
  Normalizer n(s);
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  TermId c = s.var("c", VarKind::Reference);
  // A max over ranks of maxima over shards is the max over everything.
  EXPECT_EQ(n.normalize(s.max(s.max(a, b), c)), n.normalize(s.max(c, s.max(b, a))));
  EXPECT_EQ(n.normalize(s.max(s.max(a, b), s.max(b, c))),
            n.normalize(s.max(a, s.max(b, c))));
  EXPECT_EQ(n.normalize(s.max(s.max(a, s.constant(1)), s.constant(3))),
            n.normalize(s.max(a, s.constant(3))));
  EXPECT_NE(n.normalize(s.max(a, b)), n.normalize(s.min(a, b)));
}

TEST(NormalForm, BudgetTurnsBlowUpIntoNoAnswer) {
  TermStore s;
  Normalizer n(s, /*monomial_budget=*/100);
  TermId sum = s.zero();
  for (int i = 0; i < 20; ++i)
    sum = s.add(sum, s.var("x" + std::to_string(i), VarKind::Reference));
  TermId big = s.mul(s.mul(sum, sum), sum); // 1540 monomials
  EXPECT_FALSE(n.normalize(big).has_value());
}

// A norm averaged over ranks and squared back (DeepSpeed's expert norms
// under ZeRO: each rank's norm / dp, summed, then squared in the global
// norm) is its sum of squares; a root of what may be negative stays.
TEST(NormalForm, ASquaredSquareRootInsideAProductIsItsNonnegativeArgument) {
  TermStore s;
  Normalizer n(s);
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId sum_of_squares = s.add(s.mul(x, x), s.mul(y, y));
  TermId norm = s.app(Fn::Sqrt, sum_of_squares);
  TermId half = s.constant(mpq_class(1, 2));
  TermId averaged = s.add(s.mul(norm, half), s.mul(norm, half));
  EXPECT_EQ(n.normalize(s.mul(averaged, averaged)), n.normalize(sum_of_squares));
  EXPECT_EQ(n.normalize(s.mul(s.mul(averaged, averaged), averaged)),
            n.normalize(s.mul(sum_of_squares, norm)));
  TermId root_of_x = s.app(Fn::Sqrt, x);
  TermId doubled = s.add(root_of_x, root_of_x);
  EXPECT_NE(n.normalize(s.mul(doubled, doubled)), n.normalize(s.mul(s.constant(4), x)));
}

TEST(NormalForm, ComparisonsDecidedBySignFold) {
  TermStore s;
  Normalizer n(s);
  TermId x = s.var("x", VarKind::Reference);
  TermId norm = s.app(Fn::Sqrt, s.mul(x, x));
  EXPECT_EQ(n.normalize(s.lt(s.constant(-1), norm)), s.one());
  EXPECT_EQ(n.normalize(s.le(norm, s.constant(mpq_class(-1, 2)))), s.zero());
  EXPECT_NE(n.normalize(s.lt(s.constant(-1), x)), s.one());
}
