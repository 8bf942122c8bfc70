#include "models/terms/serialize.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace shardproof::terms;

namespace {
TEST(Serialize, RebuildsTheSameDagInAnotherStore) {
  TermStore store;
  TermId x = store.var("x with space", VarKind::Reference, "a.py:3");
  TermId y = store.var("y%", VarKind::RankLocal);
  TermId e = store.app(Fn::Exp, store.add(x, store.constant(mpq_class(1, 3))));
  TermId lhs = store.mul(e, store.inv(store.add(e, y)));
  TermId rhs =
      store.ite(store.lt(x, y), store.max(x, y), store.extended(Extended::NegInf));
  std::pair<std::string, std::vector<TermId>> lists[] = {{"lhs", {lhs, x}},
                                                         {"rhs", {rhs, y}}};
  std::stringstream text;
  write_terms(store, lists, text);
  text << "# a comment\n";

  TermStore other;
  other.var("unrelated", VarKind::Opaque); // ids need not line up
  TermLists read = read_terms(text, other);
  ASSERT_EQ(read["lhs"].size(), 2u);
  EXPECT_EQ(other.to_string(read["lhs"][0]), store.to_string(lhs));
  EXPECT_EQ(other.to_string(read["rhs"][0]), store.to_string(rhs));
  EXPECT_EQ(other.variable(read["lhs"][1]).name, "x with space");
  EXPECT_EQ(other.variable(read["lhs"][1]).origin, "a.py:3");
  EXPECT_EQ(other.variable(read["rhs"][1]).name, "y%");
  EXPECT_EQ(other.variable(read["rhs"][1]).kind, VarKind::RankLocal);
}

TEST(Serialize, MalformedInputNamesTheLine) {
  TermStore store;
  std::stringstream text("c 0 1\nn 5 2 0 0 9\n");
  try {
    read_terms(text, store);
    FAIL() << "no error";
  } catch (const TermFormatError &e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("term 9"), std::string::npos) << e.what();
  }
}
} // namespace
