#include "checkers/lemmas.h"

#include <fmt/format.h>

namespace shardproof::checkers {

bool Lemmas::replaceable(TermId term) const {
  // Leaves and constants are as small as a variable already; an extended
  // value (-inf, NaN) must never stand behind a finite variable.
  auto op = store_.node(term).op;
  return op != terms::Op::Var && op != terms::Op::Const && op != terms::Op::Ext;
}

void Lemmas::add(const DistributedValue &value, const Layout &layout,
                 const std::string &what) {
  if (!layout.acceptable())
    return;
  // The variable of each reference element: the one it already has, if an
  // earlier lemma covered the same term.
  std::vector<TermId> variable(value.reference.size(), 0);
  for (std::size_t i = 0; i < value.reference.size(); ++i) {
    TermId t = value.reference[i];
    if (!replaceable(t))
      continue;
    if (abstraction_.binds(t)) {
      variable[i] = abstraction_.binding(t);
      continue;
    }
    variable[i] = store_.var(fmt::format("{}[{}]", what, i), terms::VarKind::Reference);
    abstraction_.bind(t, variable[i]);
    ++added_;
  }
  LayoutEquation eq = layout_equation(store_, value, layout);
  for (std::size_t k = 0; k < eq.rows.size(); ++k) {
    TermId rank_term = eq.lhs[k];
    TermId v = variable[eq.rows[k].reference];
    if (v != 0 && replaceable(rank_term) && !abstraction_.binds(rank_term)) {
      abstraction_.bind(rank_term, v);
      ++added_;
    }
  }
  abstraction_.clear_memo();
}

bool Lemmas::abstracted(const DistributedValue &value) const {
  auto done = [&](TermId t) { return !replaceable(t) || abstraction_.binds(t); };
  for (TermId t : value.reference)
    if (!done(t))
      return false;
  for (const auto &rank : value.ranks)
    for (TermId t : rank)
      if (!done(t))
        return false;
  return true;
}

LayoutEquation Lemmas::abstract(const LayoutEquation &eq) {
  LayoutEquation out = eq;
  for (TermId &t : out.lhs)
    t = abstraction_.apply(t);
  for (TermId &t : out.rhs)
    t = abstraction_.apply(t);
  return out;
}

const std::string *Lemmas::proved_as(const std::string &key) const {
  auto it = proved_.find(key);
  return it == proved_.end() ? nullptr : &it->second;
}

void Lemmas::remember(const std::string &key, const std::string &obligation) {
  proved_.try_emplace(key, obligation);
}

} // namespace shardproof::checkers
