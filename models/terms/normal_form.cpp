#include "models/terms/normal_form.h"

#include <algorithm>

namespace shardproof::terms {

std::optional<TermId> Normalizer::normalize(TermId term) {
  try {
    return build(*poly(term));
  } catch (const BudgetExceeded &) {
    return std::nullopt;
  }
}

void Normalizer::charge(std::size_t monomials) {
  spent_ += monomials;
  if (spent_ > budget_)
    throw BudgetExceeded{};
}

Normalizer::PolyPtr Normalizer::poly(TermId term) {
  if (auto it = memo_.find(term); it != memo_.end())
    return it->second;
  PolyPtr p = compute(term);
  memo_.emplace(term, p);
  return p;
}

Normalizer::Poly Normalizer::atom(TermId canonical_atom, std::uint32_t exponent) {
  return Poly{{Monomial{{canonical_atom, exponent}}, mpq_class(1)}};
}

Normalizer::Poly Normalizer::add(const Poly &a, const Poly &b, const mpq_class &scale_b) {
  Poly out = a;
  for (const auto &[mono, coeff] : b) {
    mpq_class &slot = out[mono];
    slot += coeff * scale_b;
    if (slot == 0)
      out.erase(mono);
  }
  charge(out.size());
  return out;
}

Normalizer::Poly Normalizer::multiply(const Poly &a, const Poly &b) {
  charge(a.size() * b.size());
  Poly out;
  for (const auto &[ma, ca] : a)
    for (const auto &[mb, cb] : b) {
      Monomial m;
      m.reserve(ma.size() + mb.size());
      std::size_t i = 0, j = 0;
      while (i < ma.size() || j < mb.size()) {
        if (j == mb.size() || (i < ma.size() && ma[i].first < mb[j].first))
          m.push_back(ma[i++]);
        else if (i == ma.size() || mb[j].first < ma[i].first)
          m.push_back(mb[j++]);
        else {
          m.emplace_back(ma[i].first, ma[i].second + mb[j].second);
          ++i, ++j;
        }
      }
      mpq_class &slot = out[m];
      slot += ca * cb;
      if (slot == 0)
        out.erase(m);
    }
  return out;
}

// inv distributes over products and inv(inv(x)) = x; both hold with
// inv(0) = 0. A sum of several monomials stays an atom.
Normalizer::Poly Normalizer::inverse(const Poly &p) {
  if (p.empty())
    return {};
  if (p.size() > 1)
    return atom(store_.inv(build(p)));
  const auto &[mono, coeff] = *p.begin();
  Poly out{{Monomial{}, mpq_class(1) / coeff}};
  for (const auto &[a, exponent] : mono) {
    const Node &n = store_.node(a);
    Poly factor = n.op == Op::Inv ? *poly(n.args[0]) : atom(store_.inv(a));
    for (std::uint32_t k = 0; k < exponent; ++k)
      out = multiply(out, factor);
  }
  return out;
}

// a < b  <=>  0 < (b - a) / |leading coefficient|: positive scaling keeps the
// comparison, so 2x < 2y and x < y share one atom.
TermId Normalizer::comparison(bool strict, const Poly &a, const Poly &b) {
  Poly diff = add(b, a, -1);
  if (diff.empty())
    return strict ? store_.zero() : store_.one();
  if (diff.size() == 1 && diff.begin()->first.empty()) {
    const mpq_class &c = diff.begin()->second;
    return (strict ? c > 0 : c >= 0) ? store_.one() : store_.zero();
  }
  mpq_class lead = abs(diff.rbegin()->second);
  for (auto &[mono, coeff] : diff)
    coeff /= lead;
  TermId rhs = build(diff);
  return strict ? store_.lt(store_.zero(), rhs) : store_.le(store_.zero(), rhs);
}

Normalizer::PolyPtr Normalizer::compute(TermId term) {
  const Node node = store_.node(term);
  auto make = [](Poly p) { return std::make_shared<const Poly>(std::move(p)); };
  switch (node.op) {
  case Op::Const: {
    const mpq_class &v = store_.const_value(term);
    return make(v == 0 ? Poly{} : Poly{{Monomial{}, v}});
  }
  case Op::Var:
    return make(atom(term));
  case Op::Add: {
    Poly sum;
    for (TermId arg : node.args)
      sum = add(sum, *poly(arg));
    return make(std::move(sum));
  }
  case Op::Mul: {
    Poly product{{Monomial{}, mpq_class(1)}};
    for (TermId arg : node.args)
      product = multiply(product, *poly(arg));
    return make(std::move(product));
  }
  case Op::Inv:
    return make(inverse(*poly(node.args[0])));
  case Op::App: {
    TermId arg = build(*poly(node.args[0]));
    return make(atom(store_.app(static_cast<Fn>(node.payload), arg)));
  }
  case Op::Lt:
  case Op::Le: {
    TermId c = comparison(node.op == Op::Lt, *poly(node.args[0]), *poly(node.args[1]));
    return store_.is_const(c) ? poly(c) : make(atom(c));
  }
  case Op::Max:
  case Op::Min: {
    // max is associative, commutative and idempotent: flatten nested maxima
    // of the same kind, drop duplicates, sort, and fold the constants.
    std::vector<TermId> flat;
    std::optional<mpq_class> constant;
    std::vector<TermId> todo(node.args.rbegin(), node.args.rend());
    while (!todo.empty()) {
      TermId arg = build(*poly(todo.back()));
      todo.pop_back();
      const Node &a = store_.node(arg);
      if (a.op == node.op) {
        todo.insert(todo.end(), a.args.rbegin(), a.args.rend());
      } else if (store_.is_const(arg)) {
        const mpq_class &v = store_.const_value(arg);
        if (!constant || (node.op == Op::Max ? *constant < v : v < *constant))
          constant = v;
      } else {
        flat.push_back(arg);
      }
    }
    if (constant)
      flat.push_back(store_.constant(*constant));
    std::sort(flat.begin(), flat.end());
    flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
    if (flat.size() == 1)
      return poly(flat[0]);
    return make(atom(store_.lattice(node.op, flat)));
  }
  case Op::Ite: {
    TermId cond = build(*poly(node.args[0]));
    if (store_.is_const(cond))
      return poly(store_.const_value(cond) != 0 ? node.args[1] : node.args[2]);
    TermId then_term = build(*poly(node.args[1]));
    TermId else_term = build(*poly(node.args[2]));
    if (then_term == else_term)
      return poly(then_term);
    return make(atom(store_.ite(cond, then_term, else_term)));
  }
  }
  return make(Poly{});
}

TermId Normalizer::build(const Poly &p) {
  std::vector<TermId> monomials;
  monomials.reserve(p.size());
  for (const auto &[mono, coeff] : p) {
    std::vector<TermId> factors;
    if (coeff != 1 || mono.empty())
      factors.push_back(store_.constant(coeff));
    for (const auto &[a, exponent] : mono)
      factors.insert(factors.end(), exponent, a);
    monomials.push_back(store_.mul(factors));
  }
  return store_.add(monomials);
}

} // namespace shardproof::terms
