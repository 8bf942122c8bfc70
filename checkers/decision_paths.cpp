#include "checkers/decision_paths.h"

#include "models/terms/evaluate.h"
#include "models/terms/structural_form.h"
#include "models/terms/witness.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace shardproof::checkers {

using terms::TermId;

namespace {
// Every path's decisions over the first path's reference variables: each
// path's reference variable is the first's of its name. A rank's own
// variable (a leaf the linker left unbound) stays itself, whatever its name:
// no other path decided over it.
std::vector<std::vector<Decision>>
over_first_reference(terms::TermStore &store, const std::vector<PathDecisions> &paths) {
  std::map<std::string, TermId> by_name;
  for (const ir::Leaf &leaf : paths.front().reference->leaves)
    for (TermId e : leaf.elements)
      if (store.is_var(e))
        by_name.emplace(store.variable(e).name, e);
  std::vector<std::vector<Decision>> out;
  for (const PathDecisions &path : paths) {
    std::vector<TermId> conditions;
    for (const auto &[condition, holds] : path.decisions)
      conditions.push_back(condition);
    terms::Substitution rename(store);
    for (TermId v : terms::variables_of(store, conditions))
      if (auto it = by_name.find(store.variable(v).name);
          it != by_name.end() && store.variable(v).kind == terms::VarKind::Reference)
        rename.bind(v, it->second);
    auto &decisions = out.emplace_back();
    for (const auto &[condition, holds] : path.decisions)
      decisions.emplace_back(rename.apply(condition), holds);
  }
  return out;
}

// tie_free * min(sum of guards, 1) == tie_free, each compared value read
// through `key` (itself, or a free real standing for it).
// `domain` (read after the keys are made) is 1 where the free reals can
// take their values and 0 elsewhere.
prover::Verdict prove_covered(terms::TermStore &store,
                              const std::vector<std::vector<Decision>> &paths,
                              const std::function<TermId(TermId)> &key,
                              const std::function<TermId()> &domain,
                              prover::Prover &prover) {
  TermId covered = store.zero(), tie_free = store.one();
  std::set<std::pair<TermId, TermId>> compared;
  for (const auto &path : paths) {
    std::vector<Decision> decisions;
    for (const auto &[condition, holds] : path) {
      // Copied: building terms may move the store's nodes.
      const terms::Op op = store.node(condition).op;
      const TermId a = key(store.node(condition).args[0]);
      const TermId b = key(store.node(condition).args[1]);
      compared.emplace(std::min(a, b), std::max(a, b));
      decisions.emplace_back(op == terms::Op::Lt ? store.lt(a, b) : store.le(a, b),
                             holds);
    }
    covered = store.add(covered, prover::path_guard(store, decisions));
  }
  for (const auto &[a, b] : compared) // 0 exactly where a == b; nested, as path_guard
    tie_free = store.ite(store.lt(a, b), tie_free,
                         store.ite(store.lt(b, a), tie_free, store.zero()));
  tie_free = store.mul(domain(), tie_free);
  TermId lhs[] = {store.mul(tie_free, store.min(covered, store.one()))};
  TermId rhs[] = {tie_free};
  return prover.prove(store, lhs, rhs);
}
} // namespace

prover::Verdict prove_coverage(terms::TermStore &store,
                               const std::vector<PathDecisions> &paths,
                               prover::Prover &prover, prover::Prover &search) {
  auto decisions = over_first_reference(store, paths);
  // Keyed by canonical form: a rank's linked value (a sum of partial sums)
  // is the same free real as the reference's equal one. The structural form:
  // a gradient norm's polynomial expansion exceeds any budget.
  terms::StructuralNormalizer normalizer(store);
  std::map<TermId, TermId> free_reals;
  // A free real standing for a value of known sign keeps it (a gradient
  // norm is never below 0, so no path need cover that).
  TermId domain = store.one();
  auto abstracted = [&](TermId value) {
    if (store.is_concrete(value))
      return value;
    auto [it, fresh] =
        free_reals.try_emplace(normalizer.normalize(value).value_or(value), 0);
    if (fresh) {
      it->second = store.var("compared#" + std::to_string(free_reals.size()),
                             terms::VarKind::Reference);
      if (terms::provably_nonnegative(store, value))
        domain = store.mul(domain, store.ite(store.lt(it->second, store.zero()),
                                             store.zero(), store.one()));
    }
    return it->second;
  };
  prover::Verdict ordering = prove_covered(
      store, decisions, abstracted, [&] { return domain; }, prover);
  if (ordering.kind == prover::Verdict::Kind::Proved) {
    ordering.method = "orderings of the compared values, " + ordering.method;
    return ordering;
  }
  return prove_covered(
      store, decisions, [](TermId value) { return value; }, [&] { return store.one(); },
      search);
}

std::optional<std::map<std::string, double, std::less<>>>
sampled_uncovered_point(terms::TermStore &store, const std::vector<PathDecisions> &paths,
                        std::uint64_t seed, unsigned points) {
  auto decisions = over_first_reference(store, paths);
  std::vector<TermId> conditions;
  for (const auto &path : decisions)
    for (const auto &[condition, holds] : path)
      conditions.push_back(condition);
  std::sort(conditions.begin(), conditions.end());
  conditions.erase(std::unique(conditions.begin(), conditions.end()), conditions.end());
  const std::vector<TermId> variables = terms::variables_of(store, conditions);
  // Points at several magnitudes: a threshold on a norm or a sum (clip when
  // the gradient norm exceeds 1, skip a step on overflow) splits inputs by
  // their scale, which points of one magnitude never cross.
  constexpr double kScales[] = {1.0, 1.0 / 8, 1.0 / 64, 8.0};
  for (unsigned k = 0; k < points; ++k) {
    const double scale = kScales[k % std::size(kScales)];
    auto sample = [&](TermId v) { return scale * prover::sample_value(seed, k, v); };
    terms::DoubleEvaluator eval(store, sample);
    std::map<TermId, bool> truth;
    bool tie = false;
    for (TermId condition : conditions) {
      const terms::Node &node = store.node(condition);
      auto a = eval(node.args[0]), b = eval(node.args[1]);
      if (!a || !b || std::fabs(*a - *b) <= 1e-9 * std::max(1.0, std::fabs(*a))) {
        tie = true; // or not a number: PyTorch may decide it either way
        break;
      }
      truth[condition] = node.op == terms::Op::Lt ? *a < *b : *a <= *b;
    }
    auto takes = [&](const std::vector<Decision> &path) {
      return std::all_of(path.begin(), path.end(),
                         [&](const Decision &d) { return truth[d.first] == d.second; });
    };
    if (tie || std::any_of(decisions.begin(), decisions.end(), takes))
      continue;
    std::map<std::string, double, std::less<>> values;
    for (TermId v : variables)
      values[store.variable(v).name] = sample(v);
    return values;
  }
  return std::nullopt;
}

std::map<std::string, double, std::less<>>
uncovered_point(const terms::TermStore &store, const prover::Counterexample &at,
                std::uint64_t seed) {
  std::map<std::string, double, std::less<>> values;
  for (const auto &[var, value] : at.values) {
    const std::string &name = store.variable(var).name;
    values[name] = value + 1e-6 * terms::witness_value(seed, name);
  }
  return values;
}

} // namespace shardproof::checkers
