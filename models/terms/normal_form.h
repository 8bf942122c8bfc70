// Canonical form: every term becomes a sum of monomials with rational
// coefficients over atoms (variables, and function applications, inverses and
// comparisons whose arguments are themselves canonical). Equal polynomials
// become the same TermId, so most equivalence obligations are proved by an id
// comparison. Only identities valid for all reals (with inv(0) = 0) are used;
// x * inv(x) = 1 only where x is provably positive (exp, and sums and
// products of such with positive coefficients: softmax normalisers), and
// exp(a + b) = exp(a) exp(b).
#pragma once

#include "models/terms/budget.h"
#include "models/terms/term_store.h"

#include <map>
#include <memory>
#include <optional>

namespace shardproof::terms {

class Normalizer {
public:
  explicit Normalizer(TermStore &store, std::size_t monomial_budget = 200000)
      : store_(store), budget_(monomial_budget) {}

  // The canonical term, or nullopt when expanding would exceed the budget
  // (the caller then falls back to the falsifier and the solver).
  std::optional<TermId> normalize(TermId term);

private:
  using Monomial = std::vector<std::pair<TermId, std::uint32_t>>; // sorted atoms
  using Poly = std::map<Monomial, mpq_class>;
  using PolyPtr = std::shared_ptr<const Poly>;

  PolyPtr poly(TermId term);
  PolyPtr compute(TermId term);
  Poly add(const Poly &a, const Poly &b, const mpq_class &scale_b = 1);
  Poly multiply(const Poly &a, const Poly &b);
  Poly atom(TermId canonical_atom, std::uint32_t exponent = 1);
  Poly inverse(const Poly &p);
  Poly exponential(const Poly &argument);
  bool positive(TermId canonical);
  Poly cancel_positive(Poly p);
  Poly square_roots_squared(Poly p);
  TermId comparison(bool strict, const Poly &a, const Poly &b);
  TermId build(const Poly &p);

  TermStore &store_;
  WorkBudget budget_;
  std::unordered_map<TermId, PolyPtr> memo_;
  std::unordered_map<TermId, bool> positive_;
};

} // namespace shardproof::terms
