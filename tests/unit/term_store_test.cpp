#include "models/terms/term_store.h"
#include <gtest/gtest.h>
TEST(TermStore, Folds) {
  shardproof::terms::TermStore s;
  EXPECT_EQ(s.add(s.constant(1), s.constant(2)), s.constant(3));
}
