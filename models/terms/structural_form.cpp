#include "models/terms/structural_form.h"

#include <algorithm>
#include <array>
#include <map>

namespace shardproof::terms {

namespace {
using Accumulator = std::map<TermId, mpq_class>;
} // namespace

std::optional<bool> comparison_by_sign(const TermStore &store, const mpq_class &constant,
                                       TermId rest, TermId negated_rest, bool strict) {
  if ((constant > 0 || (constant == 0 && !strict)) && provably_nonnegative(store, rest))
    return true;
  if ((constant < 0 || (constant == 0 && strict)) &&
      provably_nonnegative(store, negated_rest))
    return false;
  return std::nullopt;
}

std::optional<TermId> StructuralNormalizer::normalize(TermId term) {
  return WorkBudget::bounded([&] { return build(*lin(term)); });
}

StructuralNormalizer::LinPtr StructuralNormalizer::lin(TermId term) {
  if (auto it = memo_.find(term); it != memo_.end())
    return it->second;
  auto computed = std::make_shared<const Lin>(compute(term));
  budget_.charge(computed->size());
  memo_.emplace(term, computed);
  return computed;
}

StructuralNormalizer::Lin StructuralNormalizer::compute(TermId term) {
  const Node node = store_.node(term); // a copy: building grows the store
  switch (node.op) {
  case Op::Const: {
    const mpq_class &v = store_.const_value(term);
    return v == 0 ? Lin{} : Lin{{store_.one(), v}};
  }
  case Op::Var:
  case Op::Ext: // only ever a whole element (term_store.h)
    return Lin{{term, mpq_class(1)}};
  case Op::Add: {
    std::vector<LinPtr> parts;
    for (TermId arg : node.args)
      parts.push_back(lin(arg));
    return sum(parts);
  }
  case Op::Mul: {
    std::vector<LinPtr> factors;
    for (TermId arg : node.args)
      factors.push_back(lin(arg));
    return product(factors);
  }
  case Op::Inv:
    return inverse(*lin(node.args[0]));
  case Op::App:
    return of_atom(store_.app(static_cast<Fn>(node.payload), build(*lin(node.args[0]))));
  case Op::Lt:
  case Op::Le:
    return comparison(node.op == Op::Lt, node.args[0], node.args[1]);
  case Op::Max:
  case Op::Min:
    return lattice(node);
  case Op::Ite:
    return ite(node);
  }
  return {};
}

// The last part is scaled by `scale_last` (a difference b - a).
StructuralNormalizer::Lin StructuralNormalizer::sum(const std::vector<LinPtr> &parts,
                                                    const mpq_class &scale_last) {
  Accumulator total;
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (const auto &[atom, coeff] : *parts[i])
      total[atom] += i + 1 == parts.size() ? coeff * scale_last : coeff;
  merge_choices(total);
  Lin out;
  for (auto &[atom, coeff] : total)
    if (coeff != 0)
      out.emplace_back(atom, std::move(coeff));
  budget_.charge(out.size());
  return out;
}

// c1 ite(p, a, b) + c2 ite(p, d, e) = ite(p, c1 a + c2 d, c1 b + c2 e): the
// indicators of a branch's two sides sum to 1 (paths that cover every input).
void StructuralNormalizer::merge_choices(std::map<TermId, mpq_class> &total) {
  std::map<TermId, std::vector<TermId>> by_condition;
  for (const auto &[atom, coeff] : total)
    if (coeff != 0 && store_.node(atom).op == Op::Ite)
      by_condition[store_.node(atom).args[0]].push_back(atom);
  for (const auto &[condition, atoms] : by_condition) {
    if (atoms.size() < 2)
      continue;
    std::vector<LinPtr> then_parts, else_parts;
    for (TermId atom : atoms) {
      const Node n = store_.node(atom);
      Lin scaled_then = *lin(n.args[1]), scaled_else = *lin(n.args[2]);
      for (auto &entry : scaled_then)
        entry.second *= total[atom];
      for (auto &entry : scaled_else)
        entry.second *= total[atom];
      then_parts.push_back(std::make_shared<const Lin>(std::move(scaled_then)));
      else_parts.push_back(std::make_shared<const Lin>(std::move(scaled_else)));
      total.erase(atom);
    }
    TermId merged = store_.ite(condition, build(sum(then_parts)), build(sum(else_parts)));
    for (const auto &[atom, coeff] : of_atom(merged))
      total[atom] += coeff;
  }
}

// A factor with one term contributes its coefficient and its atom's
// factors; a sum becomes one factor, its leading coefficient taken out
// (2a + 2b and a + b are then the same factor).
bool StructuralNormalizer::multiply_in(const Lin &l, mpq_class &coeff,
                                       std::vector<TermId> &factors) {
  if (l.empty())
    return false;
  if (l.size() > 1) {
    mpq_class lead;
    factors.push_back(sum_atom(l, lead));
    coeff *= lead;
    return true;
  }
  const auto &[atom, c] = l.front();
  coeff *= c;
  if (atom == store_.one())
    return true;
  const Node &n = store_.node(atom);
  if (n.op == Op::Mul)
    factors.insert(factors.end(), n.args.begin(), n.args.end());
  else
    factors.push_back(atom);
  return true;
}

StructuralNormalizer::Lin
StructuralNormalizer::product(const std::vector<LinPtr> &parts) {
  mpq_class coeff(1);
  std::vector<TermId> factors;
  for (const LinPtr &part : parts)
    if (!multiply_in(*part, coeff, factors))
      return {};
  return finish_product(std::move(coeff), std::move(factors));
}

StructuralNormalizer::Lin
StructuralNormalizer::finish_product(mpq_class coeff, std::vector<TermId> factors) {
  if (!cancel(coeff, factors))
    return {};
  std::sort(factors.begin(), factors.end());
  if (factors.empty())
    return Lin{{store_.one(), coeff}};
  if (factors.size() == 1 && store_.node(factors[0]).op == Op::Add) {
    // c * (a + b) = c a + c b: a constant distributes over a sum.
    Lin out = *lin(factors[0]);
    for (auto &entry : out)
      entry.second *= coeff;
    return out;
  }
  TermId atom = factors.size() == 1 ? factors[0] : store_.mul(factors);
  return Lin{{atom, coeff}};
}

// x inv(x) = 1 for a provably positive x (never where x may be 0: inv(0) =
// 0); sqrt(x) sqrt(x) = x for a provably non-negative x.
bool StructuralNormalizer::cancel(mpq_class &coeff, std::vector<TermId> &factors) {
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < factors.size() && !changed; ++i) {
      const Node n = store_.node(factors[i]);
      auto partner = factors.end();
      if (n.op == Op::Inv && provably_positive(store_, n.args[0], &positive_))
        partner = std::find(factors.begin(), factors.end(), n.args[0]);
      bool root = n.op == Op::App && static_cast<Fn>(n.payload) == Fn::Sqrt &&
                  provably_nonnegative(store_, n.args[0]);
      if (root)
        partner = std::find(factors.begin() + i + 1, factors.end(), factors[i]);
      if (partner == factors.end())
        continue;
      auto j = static_cast<std::size_t>(partner - factors.begin());
      factors.erase(factors.begin() + std::max(i, j));
      factors.erase(factors.begin() + std::min(i, j));
      if (root && !multiply_in(*lin(n.args[0]), coeff, factors))
        return false; // sqrt(0)^2: the product is 0
      changed = true;
    }
  }
  return true;
}

// inv(c x y) = inv(c) inv(x) inv(y) and inv(inv(x)) = x, for every real
// with inv(0) = 0; the inverse of a sum is an atom.
StructuralNormalizer::Lin StructuralNormalizer::inverse(const Lin &l) {
  if (l.empty())
    return {};
  if (l.size() > 1) {
    mpq_class lead;
    TermId s = sum_atom(l, lead);
    return Lin{{store_.inv(s), 1 / lead}};
  }
  const auto &[atom, c] = l.front();
  if (atom == store_.one())
    return Lin{{atom, 1 / c}};
  const Node n = store_.node(atom);
  mpq_class coeff = 1 / c;
  std::vector<TermId> factors;
  for (TermId f : n.op == Op::Mul ? n.args : std::vector<TermId>{atom}) {
    const Node &factor = store_.node(f);
    if (factor.op == Op::Inv) {
      if (!multiply_in(*lin(factor.args[0]), coeff, factors))
        return {};
    } else
      factors.push_back(store_.inv(f));
  }
  return finish_product(std::move(coeff), std::move(factors));
}

// a < b  <=>  0 < (b - a) / |leading coefficient| (as normal_form.cpp).
StructuralNormalizer::Lin StructuralNormalizer::comparison(bool strict, TermId a,
                                                           TermId b) {
  Lin diff = sum({lin(b), lin(a)}, -1);
  auto truth = [&](bool holds) {
    return holds ? Lin{{store_.one(), mpq_class(1)}} : Lin{};
  };
  if (diff.empty())
    return truth(!strict);
  if (diff.size() == 1 && diff.front().first == store_.one())
    return truth(strict ? diff.front().second > 0 : diff.front().second >= 0);
  mpq_class constant;
  Lin rest, negated;
  for (const auto &[atom, coeff] : diff) {
    if (atom == store_.one()) {
      constant = coeff;
      continue;
    }
    rest.emplace_back(atom, coeff);
    negated.emplace_back(atom, -coeff);
  }
  if (auto decided =
          comparison_by_sign(store_, constant, build(rest), build(negated), strict))
    return truth(*decided);
  mpq_class lead = abs(diff.back().second);
  for (auto &entry : diff)
    entry.second /= lead;
  TermId rhs = build(diff);
  return of_atom(strict ? store_.lt(store_.zero(), rhs) : store_.le(store_.zero(), rhs));
}

TermId flat_lattice(TermStore &store, Op op, std::span<const TermId> canonical_args) {
  std::vector<TermId> flat;
  std::optional<mpq_class> constant;
  std::vector<TermId> todo(canonical_args.rbegin(), canonical_args.rend());
  while (!todo.empty()) {
    TermId arg = todo.back();
    todo.pop_back();
    const Node &a = store.node(arg);
    if (a.op == op) {
      todo.insert(todo.end(), a.args.rbegin(), a.args.rend());
    } else if (store.is_const(arg)) {
      const mpq_class &v = store.const_value(arg);
      if (!constant || (op == Op::Max ? *constant < v : v < *constant))
        constant = v;
    } else {
      flat.push_back(arg);
    }
  }
  if (constant)
    flat.push_back(store.constant(*constant));
  std::sort(flat.begin(), flat.end());
  flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  return store.lattice(op, flat);
}

StructuralNormalizer::Lin StructuralNormalizer::lattice(const Node &node) {
  std::vector<TermId> args;
  for (TermId arg : node.args)
    args.push_back(build(*lin(arg)));
  return of_atom(flat_lattice(store_, node.op, args));
}

StructuralNormalizer::Lin StructuralNormalizer::ite(const Node &node) {
  TermId cond = build(*lin(node.args[0]));
  if (store_.is_const(cond))
    return *lin(store_.const_value(cond) != 0 ? node.args[1] : node.args[2]);
  TermId then_term = build(*lin(node.args[1]));
  TermId else_term = build(*lin(node.args[2]));
  return of_atom(store_.ite(cond, then_term, else_term));
}

// A term the store's constructors returned: an atom, or (folded) a constant
// or a canonical sum or product, read back.
StructuralNormalizer::Lin StructuralNormalizer::of_atom(TermId canonical) {
  switch (store_.node(canonical).op) {
  case Op::Const:
  case Op::Add:
  case Op::Mul:
    return *lin(canonical);
  default:
    return Lin{{canonical, mpq_class(1)}};
  }
}

TermId StructuralNormalizer::sum_atom(const Lin &l, mpq_class &lead) {
  lead = l.back().second;
  Lin scaled = l;
  for (auto &entry : scaled)
    entry.second /= lead;
  return build(scaled);
}

TermId StructuralNormalizer::build(const Lin &l) {
  std::vector<TermId> monomials;
  monomials.reserve(l.size());
  for (const auto &[atom, coeff] : l) {
    if (atom == store_.one())
      monomials.push_back(store_.constant(coeff));
    else if (coeff == 1)
      monomials.push_back(atom);
    else
      monomials.push_back(store_.mul(std::array{store_.constant(coeff), atom}));
  }
  return store_.add(monomials);
}

} // namespace shardproof::terms
