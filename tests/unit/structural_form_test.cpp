#include "models/terms/evaluate.h"
#include "models/terms/structural_form.h"
#include "tests/unit/expression_generator.h"

#include <gtest/gtest.h>

#include <random>

using namespace shardproof::terms;
using shardproof::terms::testing::ExpressionGenerator;

namespace {
// The value of `t` and of its structural form at random rational points:
// exact where no transcendental function occurs, else in doubles.
void expect_same_value(TermStore &s, TermId t, TermId normal,
                       const std::vector<TermId> &vars, std::mt19937 &rng) {
  for (int point = 0; point < 4; ++point) {
    std::map<TermId, mpq_class> values;
    for (TermId v : vars)
      values[v] = mpq_class(std::uniform_int_distribution<int>(-5, 5)(rng),
                            std::uniform_int_distribution<int>(1, 4)(rng));
    auto assign_q = [&](TermId v) { return values.at(v); };
    auto assign_d = [&](TermId v) { return values.at(v).get_d(); };
    ExactEvaluator exact_before(s, assign_q), exact_after(s, assign_q);
    auto qa = exact_before(t), qb = exact_after(normal);
    if (qa && qb) {
      EXPECT_EQ(*qa, *qb) << s.to_string(t) << "  vs  " << s.to_string(normal);
      continue;
    }
    DoubleEvaluator before(s, assign_d), after(s, assign_d);
    auto da = before(t), db = after(normal);
    ASSERT_TRUE(da && db);
    if (std::isfinite(*da) && std::isfinite(*db))
      EXPECT_TRUE(nearly_equal(*da, *db))
          << s.to_string(t) << "  vs  " << s.to_string(normal);
  }
}
} // namespace

// Soundness: the structural form never changes a term's value, including
// where its cancellations apply (exp against its inverse, a root squared).
TEST(StructuralForm, RandomExpressionsKeepTheirValue) {
  TermStore s;
  ExpressionGenerator gen(s, 1234);
  StructuralNormalizer normalizer(s);
  std::mt19937 rng(11);
  for (int i = 0; i < 400; ++i) {
    TermId t = gen.make(5);
    TermId e = s.app(Fn::Exp, gen.make(2));
    TermId square = s.mul(gen.make(2), gen.make(2));
    switch (i % 4) {
    case 1: // exp(u) * t / exp(u) with the inverse elsewhere in the product
      t = s.mul(s.mul(e, t), s.inv(s.mul(s.constant(3), e)));
      break;
    case 2: // sqrt(x)^2 only where x is a sum of squares
      t = s.mul(s.app(Fn::Sqrt, s.add(square, s.mul(t, t))),
                s.mul(t, s.app(Fn::Sqrt, s.add(square, s.mul(t, t)))));
      break;
    case 3: // a root of a value of unknown sign squared stays
      t = s.mul(s.app(Fn::Sqrt, t), s.mul(gen.make(1), s.app(Fn::Sqrt, t)));
      break;
    default:
      break;
    }
    auto n = normalizer.normalize(t);
    ASSERT_TRUE(n.has_value());
    expect_same_value(s, t, *n, gen.vars(), rng);
  }
}

TEST(StructuralForm, RegroupedAndRescaledSumsAreOneTerm) {
  TermStore s;
  StructuralNormalizer n(s);
  auto v = [&](const char *name) { return s.var(name, VarKind::Reference); };
  TermId a = v("a"), b = v("b"), c = v("c"), d = v("d"), x = v("x");
  auto half = s.constant(mpq_class(1, 2));
  // Micro-batch gradients summed per rank, then averaged over two ranks,
  // against all four summed and scaled by a quarter.
  TermId per_rank =
      s.mul(half, s.add(s.mul(half, s.add(a, c)), s.mul(half, s.add(b, d))));
  TermId whole = s.mul(s.constant(mpq_class(1, 4)), s.add(s.add(s.add(a, b), c), d));
  EXPECT_EQ(n.normalize(per_rank), n.normalize(whole));
  // A constant factor inside a product: (2a + 2b) x = 2 (a + b) x.
  EXPECT_EQ(
      n.normalize(s.mul(s.add(s.mul(s.constant(2), a), s.mul(s.constant(2), b)), x)),
      n.normalize(s.mul(s.constant(2), s.mul(x, s.add(b, a)))));
  // Inverses: inv(2 x a) = inv(x) inv(a) / 2, inv(inv(x)) = x.
  EXPECT_EQ(n.normalize(s.inv(s.mul(s.constant(2), s.mul(x, a)))),
            n.normalize(s.mul(s.mul(half, s.inv(a)), s.inv(x))));
  EXPECT_EQ(n.normalize(s.inv(s.inv(s.add(a, x)))), n.normalize(s.add(x, a)));
  // A mean over a sum scaled inside the inverse: 1 / (2 (a + b)).
  EXPECT_EQ(n.normalize(s.inv(s.add(s.mul(s.constant(2), a), s.mul(s.constant(2), b)))),
            n.normalize(s.mul(half, s.inv(s.add(b, a)))));
}

TEST(StructuralForm, NormalizesInsideFunctionsComparisonsAndLattices) {
  TermStore s;
  StructuralNormalizer n(s);
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  EXPECT_EQ(n.normalize(s.app(Fn::Gelu, s.add(a, b))),
            n.normalize(s.app(Fn::Gelu, s.add(b, a))));
  // 2a < 2b and a < b are one comparison.
  EXPECT_EQ(n.normalize(s.lt(s.mul(s.constant(2), a), s.mul(s.constant(2), b))),
            n.normalize(s.lt(a, b)));
  EXPECT_EQ(n.normalize(s.max(a, s.max(b, a))), n.normalize(s.max(b, a)));
  EXPECT_EQ(n.normalize(s.max(s.constant(1), s.max(a, s.constant(3)))),
            n.normalize(s.max(a, s.constant(3))));
  EXPECT_EQ(n.normalize(s.ite(s.lt(s.constant(1), s.constant(2)), a, b)), n.normalize(a));
}

TEST(StructuralForm, KeepsApartWhatDiffers) {
  TermStore s;
  StructuralNormalizer n(s);
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  EXPECT_NE(n.normalize(s.add(a, b)), n.normalize(s.add(a, s.mul(s.constant(2), b))));
  EXPECT_NE(n.normalize(s.mul(a, b)), n.normalize(s.add(a, b)));
  // x inv(x) is 0 at x = 0: only a provably positive value cancels.
  EXPECT_NE(n.normalize(s.mul(a, s.inv(a))), n.normalize(s.one()));
  TermId e = s.app(Fn::Exp, a);
  EXPECT_EQ(n.normalize(s.mul(e, s.inv(e))), n.normalize(s.one()));
  // sqrt(a)^2 is not a where a may be negative; sqrt(a a)^2 is a a.
  TermId root = s.app(Fn::Sqrt, a);
  EXPECT_NE(n.normalize(s.mul(std::vector<TermId>{root, root})), n.normalize(a));
  TermId square_root = s.app(Fn::Sqrt, s.mul(std::vector<TermId>{a, a}));
  EXPECT_EQ(n.normalize(s.mul(std::vector<TermId>{square_root, b, square_root})),
            n.normalize(s.mul(std::vector<TermId>{a, b, a})));
  // a < b and b < a are different comparisons, as are < and <=.
  EXPECT_NE(n.normalize(s.lt(a, b)), n.normalize(s.lt(b, a)));
  EXPECT_NE(n.normalize(s.lt(a, b)), n.normalize(s.le(a, b)));
}

TEST(StructuralForm, ExpandsNoProductOfSums) {
  // (a + b)(a - b) = a a - b b holds, but only the polynomial normal form
  // sees it: the structural form keeps its size by never expanding.
  TermStore s;
  StructuralNormalizer n(s);
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  EXPECT_NE(n.normalize(s.mul(s.add(a, b), s.sub(a, b))),
            n.normalize(s.sub(s.mul(a, a), s.mul(b, b))));
}

TEST(StructuralForm, ABudgetTooSmallIsNoAnswer) {
  TermStore s;
  StructuralNormalizer n(s, 3);
  std::vector<TermId> vars;
  for (int i = 0; i < 8; ++i)
    vars.push_back(s.var("v" + std::to_string(i), VarKind::Reference));
  EXPECT_EQ(n.normalize(s.add(vars)), std::nullopt);
}

TEST(StructuralForm, ComparisonsDecidedBySignFold) {
  // A norm is never -1: -1 < sqrt(x x + y y) is true, sqrt(...) < -1 false;
  // an unknown sign decides nothing.
  TermStore s;
  StructuralNormalizer n(s);
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId norm = s.app(Fn::Sqrt, s.add(s.mul(x, x), s.mul(y, y)));
  TermId minus_one = s.constant(-1);
  EXPECT_EQ(n.normalize(s.lt(minus_one, norm)), s.one());
  EXPECT_EQ(n.normalize(s.lt(norm, minus_one)), s.zero());
  EXPECT_EQ(n.normalize(s.le(s.zero(), norm)), s.one());
  EXPECT_EQ(n.normalize(s.lt(norm, s.zero())), s.zero());
  EXPECT_NE(n.normalize(s.lt(s.zero(), norm)), s.one()); // the norm may be 0
  EXPECT_NE(n.normalize(s.lt(minus_one, x)), s.one());
  EXPECT_EQ(n.normalize(s.ite(s.lt(norm, minus_one), x, y)), n.normalize(y));
}

TEST(StructuralForm, ChoicesOnOneConditionMerge) {
  // The indicators of a branch's two sides sum to 1: two paths that cover
  // every input. Choices on different conditions stay apart.
  TermStore s;
  StructuralNormalizer n(s);
  TermId a = s.var("a", VarKind::Reference), b = s.var("b", VarKind::Reference);
  TermId p = s.lt(a, s.constant(1)), q = s.lt(b, s.constant(1));
  TermId both = s.add(s.ite(p, s.one(), s.zero()), s.ite(p, s.zero(), s.one()));
  EXPECT_EQ(n.normalize(both), s.one());
  EXPECT_EQ(n.normalize(s.min(both, s.one())), s.one());
  TermId scaled = s.add(s.mul(s.constant(2), s.ite(p, a, s.zero())), s.ite(p, b, a));
  EXPECT_EQ(n.normalize(scaled),
            n.normalize(s.ite(p, s.add(s.mul(s.constant(2), a), b), a)));
  EXPECT_NE(n.normalize(s.add(s.ite(p, s.one(), s.zero()), s.ite(q, s.zero(), s.one()))),
            s.one());
}
