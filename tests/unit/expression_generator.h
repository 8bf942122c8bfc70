// Random expressions over a few variables, every operator the store has:
// the soundness property tests of the normal forms draw from it.
#pragma once

#include "models/terms/term_store.h"

#include <random>
#include <string>
#include <vector>

namespace shardproof::terms::testing {
class ExpressionGenerator {
public:
  ExpressionGenerator(TermStore &s, unsigned seed) : s_(s), rng_(seed) {
    for (int i = 0; i < 4; ++i)
      vars_.push_back(s.var("v" + std::to_string(i), VarKind::Reference));
  }
  TermId make(int depth) {
    std::uniform_int_distribution<int> pick(0, depth <= 0 ? 1 : 11);
    switch (pick(rng_)) {
    case 0:
      return vars_[std::uniform_int_distribution<std::size_t>(0, 3)(rng_)];
    case 1:
      return s_.constant(mpq_class(std::uniform_int_distribution<int>(-3, 3)(rng_),
                                   std::uniform_int_distribution<int>(1, 3)(rng_)));
    case 2:
    case 3:
      return s_.add(make(depth - 1), make(depth - 1));
    case 4:
    case 5:
      return s_.mul(make(depth - 1), make(depth - 1));
    case 6:
      return s_.sub(make(depth - 1), make(depth - 1));
    case 7:
      return s_.inv(make(depth - 1));
    case 8:
      return s_.app(Fn::Tanh, make(depth - 1));
    case 9:
      return s_.max(make(depth - 1), s_.max(make(depth - 1), make(depth - 1)));
    case 10:
      return s_.min(make(depth - 1), make(depth - 1));
    default:
      return s_.ite(s_.lt(make(depth - 1), make(depth - 1)), make(depth - 1),
                    make(depth - 1));
    }
  }
  const std::vector<TermId> &vars() const { return vars_; }

private:
  TermStore &s_;
  std::mt19937 rng_;
  std::vector<TermId> vars_;
};
} // namespace shardproof::terms::testing
