// Concrete evaluation of terms under an assignment of their variables: in
// doubles with the real meaning of every function (the falsifier's semantics),
// or exactly in rationals when the term has no transcendental function.
#pragma once

#include "models/terms/term_store.h"

#include <functional>
#include <optional>
#include <unordered_map>

namespace shardproof::terms {

template <typename Value> class Evaluator {
public:
  using Assignment = std::function<Value(TermId var)>;
  Evaluator(const TermStore &store, Assignment assignment)
      : store_(store), assignment_(std::move(assignment)) {}

  // nullopt when the value cannot be represented (a function application in
  // exact mode).
  std::optional<Value> operator()(TermId term);

private:
  const TermStore &store_;
  Assignment assignment_;
  std::unordered_map<TermId, std::optional<Value>> memo_;
};

using DoubleEvaluator = Evaluator<double>;
using LongDoubleEvaluator = Evaluator<long double>; // estimates doubles' rounding
using ExactEvaluator = Evaluator<mpq_class>;

extern template class Evaluator<double>;
extern template class Evaluator<long double>;
extern template class Evaluator<mpq_class>;

// Relative closeness used wherever doubles stand for reals; the same
// infinity is close to itself, and NaN to NaN (what layout inference wants:
// the prover decides NaN elements itself, see prover.h).
bool nearly_equal(double a, double b);

} // namespace shardproof::terms
