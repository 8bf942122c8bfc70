#include "checkers/prover/prover.h"

#include "checkers/prover/smt.h"
#include "models/terms/evaluate.h"
#include "models/terms/normal_form.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

namespace shardproof::prover {

using terms::DoubleEvaluator;
using terms::ExactEvaluator;

std::string_view to_string(Verdict::Kind kind) {
  switch (kind) {
  case Verdict::Kind::Proved:
    return "proved";
  case Verdict::Kind::Refuted:
    return "refuted";
  case Verdict::Kind::Unknown:
    return "unknown";
  }
  return "?";
}

double sample_value(std::uint64_t seed, unsigned point, TermId var) {
  std::uint64_t x = seed ^ (std::uint64_t{point} << 32) ^ var;
  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  double unit = static_cast<double>(x >> 11) / static_cast<double>(1ULL << 53);
  return -2.0 + 4.0 * unit; // [-2, 2): keeps exp/gelu in a well-behaved range
}

std::optional<std::size_t> first_difference(const terms::TermStore &store,
                                            std::span<const TermId> lhs,
                                            std::span<const TermId> rhs,
                                            const std::function<double(TermId)> &values) {
  DoubleEvaluator eval(store, values);
  for (std::size_t i = 0; i < lhs.size(); ++i) {
    auto a = eval(lhs[i]), b = eval(rhs[i]);
    if (a && b && !terms::nearly_equal(*a, *b))
      return i;
  }
  return std::nullopt;
}

namespace {
using ValueMap = std::map<TermId, double>;

bool differs_at(const terms::TermStore &store, TermId lhs, TermId rhs,
                const ValueMap &values) {
  auto lookup = [&](TermId v) {
    auto it = values.find(v);
    return it == values.end() ? 0.0 : it->second;
  };
  DoubleEvaluator eval(store, lookup);
  auto a = eval(lhs), b = eval(rhs);
  return a && b && !terms::nearly_equal(*a, *b);
}

// For terms without transcendental functions the exact value decides; a
// difference that is only rounding noise is not a counterexample.
bool exactly_equal(const terms::TermStore &store, TermId lhs, TermId rhs,
                   const ValueMap &values) {
  ExactEvaluator eval(store, [&](TermId v) {
    auto it = values.find(v);
    return it == values.end() ? mpq_class(0) : mpq_class(it->second);
  });
  auto a = eval(lhs), b = eval(rhs);
  return a && b && *a == *b;
}
} // namespace

Counterexample minimise(const terms::TermStore &store, TermId lhs, TermId rhs,
                        const std::function<double(TermId)> &values,
                        std::size_t element) {
  TermId roots[] = {lhs, rhs};
  std::vector<TermId> vars = terms::variables_of(store, roots);
  ValueMap best;
  for (TermId v : vars)
    best[v] = values(v);

  // First try a point made only of small integers, then push each variable
  // to 0, 1 or -1 while the difference survives.
  for (unsigned attempt = 0; attempt < 8; ++attempt) {
    ValueMap ints;
    for (TermId v : vars) {
      double r = sample_value(0xc0ffee, attempt, v);
      int k = static_cast<int>(std::floor(r * 2)); // -4..3
      ints[v] = k == 0 ? 1 : k;
    }
    if (differs_at(store, lhs, rhs, ints)) {
      best = std::move(ints);
      break;
    }
  }
  for (TermId v : vars) {
    double original = best[v];
    for (double candidate : {0.0, 1.0, -1.0}) {
      if (candidate == original)
        break;
      best[v] = candidate;
      if (differs_at(store, lhs, rhs, best))
        break;
      best[v] = original;
    }
  }

  Counterexample cex;
  cex.values = best;
  cex.element = element;
  DoubleEvaluator eval(store, [&](TermId v) { return best.at(v); });
  cex.lhs = eval(lhs).value_or(NAN);
  cex.rhs = eval(rhs).value_or(NAN);
  return cex;
}

namespace {
Verdict unknown(std::string why) {
  Verdict v;
  v.kind = Verdict::Kind::Unknown;
  v.why = std::move(why);
  return v;
}

// A refutation stands only if the difference survives real semantics: exact
// rationals where the terms allow it, doubles with real functions otherwise.
std::optional<Verdict> confirmed_refutation(const terms::TermStore &store,
                                            std::span<const TermId> lhs,
                                            std::span<const TermId> rhs,
                                            const std::function<double(TermId)> &values,
                                            std::string method) {
  auto index = first_difference(store, lhs, rhs, values);
  if (!index)
    return std::nullopt;
  Counterexample cex = minimise(store, lhs[*index], rhs[*index], values, *index);
  if (exactly_equal(store, lhs[*index], rhs[*index], cex.values))
    return std::nullopt;
  Verdict v;
  v.kind = Verdict::Kind::Refuted;
  v.method = std::move(method);
  v.counterexample = std::move(cex);
  return v;
}
} // namespace

Verdict prove_in_process(terms::TermStore &store, std::span<const TermId> lhs,
                         std::span<const TermId> rhs, const ProverOptions &options,
                         unsigned solver_ms) {
  if (lhs.size() != rhs.size())
    return unknown(
        fmt::format("the two sides have {} and {} elements", lhs.size(), rhs.size()));

  std::vector<TermId> all(lhs.begin(), lhs.end());
  all.insert(all.end(), rhs.begin(), rhs.end());
  for (TermId v : terms::variables_of(store, all)) {
    const terms::Variable &var = store.variable(v);
    if (var.kind == terms::VarKind::Opaque)
      return unknown(fmt::format("depends on the unmodelled value '{}' from {}", var.name,
                                 var.origin));
    if (var.kind == terms::VarKind::Placeholder)
      return unknown(fmt::format("depends on an unresolved collective '{}' from {}",
                                 var.name, var.origin));
  }

  // 1. Normalize: equal canonical forms prove a pair outright.
  terms::Normalizer normalizer(store);
  std::vector<TermId> open_lhs, open_rhs;
  std::vector<std::size_t> open_index; // position in lhs/rhs of each open pair
  for (std::size_t i = 0; i < lhs.size(); ++i) {
    auto a = normalizer.normalize(lhs[i]);
    auto b = normalizer.normalize(rhs[i]);
    if (a && b && *a == *b)
      continue;
    open_lhs.push_back(lhs[i]);
    open_rhs.push_back(rhs[i]);
    open_index.push_back(i);
  }
  // A counterexample names the pair by its position in the caller's lists.
  auto located = [&](Verdict v) {
    v.counterexample->element = open_index[v.counterexample->element];
    return v;
  };
  if (open_lhs.empty()) {
    Verdict v;
    v.kind = Verdict::Kind::Proved;
    v.method = "normal form";
    return v;
  }

  // 2. Falsify: concrete evaluation at pseudo-random points.
  for (unsigned k = 0; k < options.random_points; ++k) {
    auto values = [&](TermId v) { return sample_value(options.seed, k, v); };
    if (auto refuted =
            confirmed_refutation(store, open_lhs, open_rhs, values, "evaluation"))
      return located(*refuted);
  }

  // 3. Z3 decides the rest.
  std::vector<std::pair<TermId, TermId>> pairs;
  for (std::size_t i = 0; i < open_lhs.size(); ++i)
    pairs.emplace_back(open_lhs[i], open_rhs[i]);
  auto start = std::chrono::steady_clock::now();
  SmtAnswer answer = find_disequality(store, pairs, solver_ms);
  double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
  switch (answer.result) {
  case SmtAnswer::Result::Unsat: {
    Verdict v;
    v.kind = Verdict::Kind::Proved;
    v.method = "z3";
    return v;
  }
  case SmtAnswer::Result::Sat: {
    std::map<TermId, double> model;
    for (const auto &[var, value] : answer.model)
      model[var] = value.get_d();
    auto values = [&](TermId v) {
      auto it = model.find(v);
      return it == model.end() ? 0.0 : it->second;
    };
    if (auto refuted = confirmed_refutation(store, open_lhs, open_rhs, values,
                                            "z3 model, confirmed by evaluation"))
      return located(*refuted);
    return unknown("the solver's counterexample relies on an uninterpreted "
                   "reading of a nonlinear function and does not survive its "
                   "real semantics");
  }
  case SmtAnswer::Result::Unknown:
    // Z3 4.8's reason strings are unreliable; elapsed time is not.
    if (elapsed_ms >= 0.9 * solver_ms)
      return unknown(
          fmt::format("the solver did not finish within {:.1f} s", solver_ms / 1000.0));
    return unknown("the solver gave up (incomplete for nonlinear arithmetic)");
  }
  return unknown("unreachable");
}

Verdict prove_equal(terms::TermStore &store, std::span<const TermId> lhs,
                    std::span<const TermId> rhs, const ProverOptions &options) {
  const WorkerLimits &limits = options.limits;
  // Z3 gets most of the time to stop by itself; the kill is the guarantee.
  auto solver_ms = static_cast<unsigned>(limits.wall.count() * 9 / 10);
  WorkerOutcome outcome = run_in_worker(
      [&] {
        return encode_verdict(prove_in_process(store, lhs, rhs, options, solver_ms));
      },
      limits);
  switch (outcome.status) {
  case WorkerOutcome::Status::Finished:
    return decode_verdict(outcome.output);
  case WorkerOutcome::Status::TimedOut:
    return unknown(fmt::format("the proof did not finish within {:.1f} s",
                               limits.wall.count() / 1000.0));
  case WorkerOutcome::Status::OutOfMemory:
  case WorkerOutcome::Status::Crashed:
    return unknown("the proof " + outcome.detail);
  }
  return unknown("unreachable");
}

std::string encode_verdict(const Verdict &verdict) {
  nlohmann::json j{{"kind", static_cast<int>(verdict.kind)},
                   {"method", verdict.method},
                   {"why", verdict.why}};
  if (const auto &cex = verdict.counterexample) {
    auto values = nlohmann::json::array();
    for (const auto &[var, value] : cex->values)
      values.push_back({var, value});
    j["counterexample"] = {{"values", values},
                           {"element", cex->element},
                           {"lhs", cex->lhs},
                           {"rhs", cex->rhs}};
  }
  return j.dump();
}

Verdict decode_verdict(const std::string &text) {
  auto j = nlohmann::json::parse(text);
  Verdict v;
  v.kind = static_cast<Verdict::Kind>(j.at("kind").get<int>());
  v.method = j.at("method").get<std::string>();
  v.why = j.at("why").get<std::string>();
  if (j.contains("counterexample")) {
    const auto &c = j["counterexample"];
    Counterexample cex;
    for (const auto &entry : c.at("values"))
      cex.values[entry.at(0).get<TermId>()] = entry.at(1).get<double>();
    cex.element = c.at("element").get<std::size_t>();
    auto number = [](const nlohmann::json &x) {
      return x.is_number() ? x.get<double>() : NAN; // NaN travels as null
    };
    cex.lhs = number(c.at("lhs"));
    cex.rhs = number(c.at("rhs"));
    v.counterexample = std::move(cex);
  }
  return v;
}

} // namespace shardproof::prover
