#include "models/terms/normal_form.h"
#include "models/terms/structural_form.h"

#include <algorithm>

namespace shardproof::terms {

std::optional<TermId> Normalizer::normalize(TermId term) {
  return WorkBudget::bounded([&] { return build(*poly(term)); });
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
  budget_.charge(out.size());
  return out;
}

Normalizer::Poly Normalizer::multiply(const Poly &a, const Poly &b) {
  budget_.charge(a.size() * b.size());
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

// exp(a + b) = exp(a) exp(b) and exp(-a) = 1 / exp(a) for every real: the
// argument's monomials become factors, exp(c m) with c > 0 an atom. So a
// softmax shifted by its maximum, exp(x - m) / sum exp(x_j - m), and the
// unshifted one have one normal form.
Normalizer::Poly Normalizer::exponential(const Poly &argument) {
  Poly out{{Monomial{}, mpq_class(1)}};
  for (const auto &[mono, coeff] : argument) {
    TermId e = store_.app(Fn::Exp, build(Poly{{mono, abs(coeff)}}));
    out = multiply(out, coeff > 0 ? atom(e) : atom(store_.inv(e)));
  }
  return out;
}

// inv distributes over products and inv(inv(x)) = x; both hold with
// inv(0) = 0. A sum of several monomials stays an atom, once the monomial
// and the coefficient all its terms share are taken out (inv(c g q) =
// inv(c) inv(g) inv(q) for every real as well).
Normalizer::Poly Normalizer::inverse(const Poly &p) {
  if (p.empty())
    return {};
  if (p.size() > 1) {
    Monomial common = p.begin()->first;
    for (const auto &[mono, coeff] : p) {
      Monomial shared;
      for (const auto &[a, e] : common) {
        auto it = std::find_if(mono.begin(), mono.end(),
                               [&](const auto &f) { return f.first == a; });
        if (it != mono.end())
          shared.emplace_back(a, std::min(e, it->second));
      }
      common = std::move(shared);
    }
    const mpq_class lead = p.rbegin()->second;
    if (common.empty() && lead == 1)
      return atom(store_.inv(build(p)));
    Poly rest;
    for (const auto &[mono, coeff] : p) {
      Monomial m;
      for (const auto &[a, e] : mono) {
        auto it = std::find_if(common.begin(), common.end(),
                               [&](const auto &f) { return f.first == a; });
        std::uint32_t left = e - (it == common.end() ? 0 : it->second);
        if (left)
          m.emplace_back(a, left);
      }
      rest[m] = coeff / lead;
    }
    return multiply(inverse(Poly{{common, lead}}), atom(store_.inv(build(rest))));
  }
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

// Provably > 0 for every value of its variables: exp(...), a positive
// constant, and products and positive-coefficient sums of those.
bool Normalizer::positive(TermId t) { return provably_positive(store_, t, &positive_); }

// x * inv(x) = 1 where x is provably positive (never where it may be 0:
// inv(0) = 0). Within a monomial: an atom against its inverse. Across
// monomials: the part A * Q of p, for A = inv(s) of a positive sum s, with
// Q = s * M for one monomial M, becomes M (sum of a softmax = 1).
Normalizer::Poly Normalizer::cancel_positive(Poly p) {
  bool changed = false;
  Poly out;
  for (const auto &[mono, coeff] : p) {
    Monomial m = mono;
    for (auto &[a, exponent] : m) {
      const Node &n = store_.node(a);
      if (n.op != Op::Inv || !positive(n.args[0]))
        continue;
      auto base = std::find_if(m.begin(), m.end(),
                               [&](const auto &e) { return e.first == n.args[0]; });
      if (base == m.end())
        continue;
      std::uint32_t k = std::min(exponent, base->second);
      exponent -= k, base->second -= k;
      changed = true;
    }
    std::erase_if(m, [](const auto &e) { return e.second == 0; });
    mpq_class &slot = out[m];
    slot += coeff;
    if (slot == 0)
      out.erase(m);
  }
  if (changed)
    p = std::move(out);

  std::vector<TermId> inverses;
  for (const auto &[mono, coeff] : p)
    for (const auto &[a, exponent] : mono)
      if (const Node &n = store_.node(a);
          n.op == Op::Inv && store_.node(n.args[0]).op == Op::Add && positive(n.args[0]))
        inverses.push_back(a);
  std::sort(inverses.begin(), inverses.end());
  inverses.erase(std::unique(inverses.begin(), inverses.end()), inverses.end());
  for (TermId inverse_atom : inverses) {
    // p = A * Q + R
    Poly q, rest;
    for (const auto &[mono, coeff] : p) {
      auto at = std::find_if(mono.begin(), mono.end(),
                             [&](const auto &e) { return e.first == inverse_atom; });
      if (at == mono.end()) {
        rest[mono] = coeff;
        continue;
      }
      Monomial m = mono;
      auto mine = m.begin() + (at - mono.begin());
      if (--mine->second == 0)
        m.erase(mine);
      q[m] = coeff;
    }
    const Poly &sum = *poly(store_.node(inverse_atom).args[0]);
    // Q = sum * M: M is Q's first monomial over one of the sum's.
    const auto &[q0, c0] = *q.begin();
    for (const auto &[s_mono, s_coeff] : sum) {
      Monomial quotient;
      bool divides = true;
      std::size_t j = 0;
      for (const auto &[a, e] : q0) {
        while (j < s_mono.size() && s_mono[j].first < a)
          divides = false, ++j; // an atom of the sum's monomial that q0 lacks
        std::uint32_t have =
            j < s_mono.size() && s_mono[j].first == a ? s_mono[j++].second : 0;
        if (have > e)
          divides = false;
        else if (e > have)
          quotient.emplace_back(a, e - have);
      }
      if (!divides || j != s_mono.size())
        continue;
      Poly factor{{quotient, c0 / s_coeff}};
      if (multiply(sum, factor) == q) {
        p = add(rest, factor);
        break;
      }
    }
  }
  return p;
}

// sqrt(x)^2 = x where x >= 0 is provable (a norm squared back to its sum of
// squares, as TermStore::mul does for the product it builds): inside a
// product the root's even powers become powers of x's polynomial.
Normalizer::Poly Normalizer::square_roots_squared(Poly p) {
  auto squares_away = [&](const std::pair<TermId, std::uint32_t> &factor) {
    const Node &n = store_.node(factor.first);
    return factor.second >= 2 && n.op == Op::App &&
           static_cast<Fn>(n.payload) == Fn::Sqrt &&
           provably_nonnegative(store_, n.args[0]);
  };
  if (std::none_of(p.begin(), p.end(), [&](const auto &term) {
        return std::any_of(term.first.begin(), term.first.end(), squares_away);
      }))
    return p;
  Poly out;
  for (const auto &[mono, coeff] : p) {
    Poly product{{Monomial{}, coeff}};
    for (const auto &factor : mono) {
      if (!squares_away(factor)) {
        product = multiply(product, atom(factor.first, factor.second));
        continue;
      }
      const Poly &radicand = *poly(store_.node(factor.first).args[0]);
      for (std::uint32_t k = 0; k < factor.second / 2; ++k)
        product = multiply(product, radicand);
      if (factor.second % 2)
        product = multiply(product, atom(factor.first));
    }
    out = add(out, product);
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
  mpq_class constant;
  Poly rest, negated;
  for (const auto &[mono, coeff] : diff) {
    if (mono.empty()) {
      constant = coeff;
      continue;
    }
    rest.emplace(mono, coeff);
    negated.emplace(mono, -coeff);
  }
  if (auto decided =
          comparison_by_sign(store_, constant, build(rest), build(negated), strict))
    return *decided ? store_.one() : store_.zero();
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
  case Op::Ext: // only ever a whole element (term_store.h): an atom of its own
    return make(atom(term));
  case Op::Add: {
    Poly sum;
    for (TermId arg : node.args)
      sum = add(sum, *poly(arg));
    return make(cancel_positive(std::move(sum)));
  }
  case Op::Mul: {
    Poly product{{Monomial{}, mpq_class(1)}};
    for (TermId arg : node.args)
      product = multiply(product, *poly(arg));
    return make(cancel_positive(square_roots_squared(std::move(product))));
  }
  case Op::Inv:
    return make(inverse(*poly(node.args[0])));
  case Op::App: {
    if (static_cast<Fn>(node.payload) == Fn::Exp)
      return make(exponential(*poly(node.args[0])));
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
    std::vector<TermId> args;
    for (TermId arg : node.args)
      args.push_back(build(*poly(arg)));
    TermId flat = flat_lattice(store_, node.op, args);
    return store_.node(flat).op == node.op ? make(atom(flat)) : poly(flat);
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
