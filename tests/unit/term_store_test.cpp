#include "models/terms/term_store.h"

#include <gtest/gtest.h>

using namespace shardproof::terms;

TEST(TermStore, FoldsConstantsAndUnits) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference);
  EXPECT_EQ(s.add(s.constant(1), s.constant(2)), s.constant(3));
  EXPECT_EQ(s.add(x, s.zero()), x);
  EXPECT_EQ(s.mul(x, s.one()), x);
  EXPECT_EQ(s.mul(x, s.zero()), s.zero());
  EXPECT_EQ(s.inv(s.zero()), s.zero()); // inv(0) = 0 keeps inv total
  EXPECT_EQ(s.inv(s.inv(x)), x);
  EXPECT_EQ(s.const_value(s.div(s.constant(1), s.constant(3))), mpq_class(1, 3));
}

TEST(TermStore, HashConsesStructurallyEqualTerms) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  EXPECT_EQ(s.add(x, y), s.add(x, y));
  EXPECT_NE(s.add(x, y), s.add(y, x));          // construction does not canonicalise
  EXPECT_NE(s.var("x", VarKind::Reference), x); // every var is fresh
}

TEST(TermStore, ExactDoubleConstants) {
  TermStore s;
  EXPECT_EQ(s.const_value(s.constant_from_double(0.5)), mpq_class(1, 2));
  // Non-finite doubles are extended values (extended_reals_test.cpp).
  EXPECT_EQ(s.constant_from_double(-1.0 / 0.0), s.extended(Extended::NegInf));
}

TEST(Substitution, RebuildsThroughFoldingConstructors) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId t = s.add(s.mul(x, y), s.app(Fn::Tanh, x));
  Substitution sub(s);
  sub.bind(x, s.zero());
  EXPECT_EQ(sub.apply(t), s.app(Fn::Tanh, s.zero()));
}

TEST(Substitution, ResolverSeesUnboundVariablesOnly) {
  TermStore s;
  TermId p = s.var("p", VarKind::Placeholder), x = s.var("x", VarKind::Reference);
  Substitution sub(s);
  sub.bind(x, s.constant(2));
  int calls = 0;
  sub.set_resolver([&](TermId v) {
    ++calls;
    return v == p ? s.constant(5) : v;
  });
  EXPECT_EQ(sub.apply(s.add(p, x)), s.constant(7));
  EXPECT_EQ(calls, 1);
}

TEST(TermStore, VariablesOfListsEachOnce) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId t = s.mul(s.add(x, y), s.add(x, s.constant(3)));
  auto vars = variables_of(s, std::span(&t, 1));
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0], x);
  EXPECT_EQ(vars[1], y);
}

TEST(TermStore, ProvablyPositiveOnlyWhereEveryValueIs) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId ex = s.app(Fn::Exp, x), ey = s.app(Fn::Exp, y);
  TermId probability = s.mul(ex, s.inv(s.add(ex, ey))); // softmax's first element
  EXPECT_TRUE(provably_positive(s, probability));
  EXPECT_TRUE(provably_positive(s, s.app(Fn::Sigmoid, x)));
  EXPECT_TRUE(provably_positive(s, s.constant(2)));
  EXPECT_FALSE(provably_positive(s, x));                  // any sign
  EXPECT_FALSE(provably_positive(s, s.zero()));           // not > 0
  EXPECT_FALSE(provably_positive(s, s.neg(ex)));          // negative
  EXPECT_FALSE(provably_positive(s, s.sub(ex, ey)));      // either sign
  EXPECT_FALSE(provably_positive(s, s.app(Fn::Tanh, x))); // either sign
}

TEST(TermStore, ProvablyNonnegativeOnlyWhereEveryValueIs) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId sum_of_squares = s.add(s.mul(x, x), s.mul(y, y));
  EXPECT_TRUE(provably_nonnegative(s, sum_of_squares));
  EXPECT_TRUE(provably_nonnegative(s, s.app(Fn::Sqrt, sum_of_squares)));
  EXPECT_TRUE(provably_nonnegative(s, s.zero()));
  EXPECT_TRUE(provably_nonnegative(s, s.app(Fn::Relu, x)));
  EXPECT_TRUE(provably_nonnegative(s, s.max(x, s.zero())));
  EXPECT_FALSE(provably_nonnegative(s, x));                        // any sign
  EXPECT_FALSE(provably_nonnegative(s, s.mul(x, y)));              // either sign
  EXPECT_FALSE(provably_nonnegative(s, s.neg(s.mul(x, x))));       // never positive
  EXPECT_FALSE(provably_nonnegative(s, s.app(Fn::Sqrt, x)));       // NaN where x < 0
  EXPECT_FALSE(provably_nonnegative(s, s.sub(sum_of_squares, x))); // either sign
}

// A norm squared is its sum of squares again (a gradient norm all-reduced
// as its square), but only where the root's argument cannot be negative:
// there sqrt gives NaN, whose square is no real number.
TEST(TermStore, ASquaredSquareRootIsItsNonnegativeArgument) {
  TermStore s;
  TermId x = s.var("x", VarKind::Reference), y = s.var("y", VarKind::Reference);
  TermId sum_of_squares = s.add(s.mul(x, x), s.mul(y, y));
  TermId norm = s.app(Fn::Sqrt, sum_of_squares);
  EXPECT_EQ(s.mul(norm, norm), sum_of_squares);
  TermId root_of_x = s.app(Fn::Sqrt, x);
  EXPECT_NE(s.mul(root_of_x, root_of_x), x);
  EXPECT_NE(s.mul(norm, s.app(Fn::Sqrt, s.add(sum_of_squares, x))), sum_of_squares);
}

TEST(TermStore, TextOfADeepDagIsCutWithoutUnfoldingIt) {
  // x doubled 64 times: a tree of 2^64 leaves, a DAG of 65 nodes.
  TermStore s;
  TermId t = s.var("x", VarKind::Reference);
  for (int i = 0; i < 64; ++i)
    t = s.add(t, t);
  std::string text = s.to_string(t, 100);
  EXPECT_LE(text.size(), 103u);
  EXPECT_EQ(text.substr(text.size() - 3), "...");
  EXPECT_EQ(s.to_string(s.add(s.var("y", VarKind::Reference), s.constant(2))), "(y + 2)");
}

TEST(TermStore, NamedKeyTellsVariablesApartByNameAndStaysLinear) {
  TermStore s;
  TermId x1 = s.var("x", VarKind::Reference), x2 = s.var("x", VarKind::Reference);
  TermId y = s.var("y", VarKind::Reference);
  TermId a = s.lt(x1, s.constant(0)), b = s.lt(x2, s.constant(0)),
         c = s.lt(y, s.constant(0));
  EXPECT_EQ(named_key(s, std::span(&a, 1)), named_key(s, std::span(&b, 1)));
  EXPECT_NE(named_key(s, std::span(&a, 1)), named_key(s, std::span(&c, 1)));
  EXPECT_EQ(alpha_key(s, std::span(&a, 1)), alpha_key(s, std::span(&c, 1)));
  TermId deep = x1;
  for (int i = 0; i < 64; ++i)
    deep = s.mul(deep, deep);
  EXPECT_LT(named_key(s, std::span(&deep, 1)).size(), 2000u);
}
