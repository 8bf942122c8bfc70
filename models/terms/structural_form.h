// A cheap canonical form, tried before the polynomial one (normal_form.h):
// sums and products are flattened, sorted and their rational coefficients
// combined, and a constant distributes over a sum, but a product of sums is
// never expanded. Its size stays near the term's DAG, where expanding a
// transformer's gradient into monomials exceeds any budget; and it is what
// equal computations grouped differently need: the same micro-batch
// gradients summed per rank and then across ranks, or scaled before the
// reduction instead of after it. Identities used (valid for all reals, with
// inv(0) = 0): associativity and commutativity of + and *, c (a + b) =
// c a + c b for a constant c, inv(inv(x)) = x, inv(x y) = inv(x) inv(y),
// x inv(x) = 1 for a provably positive x, sqrt(x)^2 = x for a provably
// non-negative x, the lattice laws of max and min, and ite(p, a, b) +
// ite(p, c, d) = ite(p, a + c, b + d).
#pragma once

#include "models/terms/budget.h"
#include "models/terms/term_store.h"

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace shardproof::terms {

// `0 < rest + constant` (strict) or `0 <= rest + constant`, decided where
// the sign of `rest` is provable (term_store.h: provably_nonnegative): true
// where rest >= 0 and the constant keeps the sum positive (-1 < sqrt(x) for a
// norm), false where rest <= 0 (`negated_rest`, its negation, >= 0) and the
// constant keeps it negative; nullopt otherwise.
std::optional<bool> comparison_by_sign(const TermStore &store, const mpq_class &constant,
                                       TermId rest, TermId negated_rest, bool strict);

// max and min are associative, commutative and idempotent: nested ones of
// the same kind flatten, duplicates go, constants fold, the rest is sorted.
// The arguments are canonical (of either normal form); so is the result.
TermId flat_lattice(TermStore &store, Op op, std::span<const TermId> canonical_args);

class StructuralNormalizer {
public:
  explicit StructuralNormalizer(TermStore &store, std::size_t budget = 4000000)
      : store_(store), budget_(budget) {}

  // The canonical term, or nullopt when flattening exceeds the budget.
  std::optional<TermId> normalize(TermId term);

private:
  // A linear combination of canonical atoms, sorted by atom; the atom
  // store.one() carries the constant. No zero coefficient.
  using Lin = std::vector<std::pair<TermId, mpq_class>>;
  using LinPtr = std::shared_ptr<const Lin>;

  LinPtr lin(TermId term);
  Lin compute(TermId term);
  Lin sum(const std::vector<LinPtr> &parts, const mpq_class &scale_last = 1);
  void merge_choices(std::map<TermId, mpq_class> &total);
  Lin product(const std::vector<LinPtr> &factors);
  Lin finish_product(mpq_class coeff, std::vector<TermId> factors);
  Lin inverse(const Lin &l);
  Lin comparison(bool strict, TermId a, TermId b);
  Lin lattice(const Node &node);
  Lin ite(const Node &node);
  Lin of_atom(TermId canonical);
  // Multiplies `l` into a product under construction; false where l is 0.
  bool multiply_in(const Lin &l, mpq_class &coeff, std::vector<TermId> &factors);
  // False where the product turns out 0.
  bool cancel(mpq_class &coeff, std::vector<TermId> &factors);
  TermId sum_atom(const Lin &l, mpq_class &lead);
  TermId build(const Lin &l);

  TermStore &store_;
  WorkBudget budget_;
  std::unordered_map<TermId, LinPtr> memo_;
  std::unordered_map<TermId, bool> positive_;
};

} // namespace shardproof::terms
