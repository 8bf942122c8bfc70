#include "checkers/prover/prover.h"

#include "checkers/prover/smt.h"
#include "models/terms/evaluate.h"
#include "models/terms/normal_form.h"
#include "models/terms/serialize.h"
#include "models/terms/structural_form.h"
#include "models/terms/witness.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
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

// Both sides of pairs compared at one point of the variables, with real
// semantics and never a difference made by floating point. Evaluations are
// memoised across the pairs of one point.
class Point {
public:
  enum class Comparison { Equal, Differs, Undecided };

  Point(const terms::TermStore &store, std::function<double(TermId)> values)
      : store_(store), values_(std::move(values)), doubles_(store_, values_),
        long_doubles_(store_,
                      [this](TermId v) { return static_cast<long double>(values_(v)); }),
        exact_(store_, [this](TermId v) { return mpq_class(values_(v)); }) {}

  // Doubles first (cheap); a pair they do not show equal is decided by exact
  // rationals where both sides have them (no transcendental function), and
  // otherwise differs only if both doubles are finite and their gap is far
  // above their rounding error, measured against long double. An exact value
  // is never compared with a floating one. Overflow, NaN, or a gap within
  // rounding error leave the point Undecided: not a counterexample.
  Comparison compare(TermId lhs, TermId rhs) {
    auto a = doubles_(lhs), b = doubles_(rhs);
    if (!a || !b)
      return Comparison::Undecided;
    bool finite = std::isfinite(*a) && std::isfinite(*b);
    if (finite && terms::nearly_equal(*a, *b))
      return Comparison::Equal;
    auto qa = exact_(lhs), qb = exact_(rhs);
    if (qa && qb)
      return *qa == *qb ? Comparison::Equal : Comparison::Differs;
    if (!finite)
      return Comparison::Undecided;
    auto pa = long_doubles_(lhs), pb = long_doubles_(rhs);
    if (!pa || !pb || !std::isfinite(*pa) || !std::isfinite(*pb))
      return Comparison::Undecided;
    long double gap = std::fabs(*pa - *pb);
    long double rounding = std::fabs(*pa - *a) + std::fabs(*pb - *b);
    bool clear = gap > 64 * rounding &&
                 !terms::nearly_equal(static_cast<double>(*pa), static_cast<double>(*pb));
    return clear ? Comparison::Differs : Comparison::Undecided;
  }

  double value(TermId term) { return doubles_(term).value_or(NAN); }

private:
  const terms::TermStore &store_;
  std::function<double(TermId)> values_;
  DoubleEvaluator doubles_;
  terms::LongDoubleEvaluator long_doubles_;
  ExactEvaluator exact_;
};

bool differs_at(const terms::TermStore &store, TermId lhs, TermId rhs,
                const ValueMap &values) {
  Point point(store, [&](TermId v) {
    auto it = values.find(v);
    return it == values.end() ? 0.0 : it->second;
  });
  return point.compare(lhs, rhs) == Point::Comparison::Differs;
}
} // namespace

Counterexample minimise(const terms::TermStore &store, TermId lhs, TermId rhs,
                        const std::function<double(TermId)> &values, std::size_t element,
                        std::uint64_t seed) {
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
      double r = sample_value(seed, attempt, v);
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

// A refutation stands only if the difference survives real semantics (see
// Point::compare); `undecided` says that some pair could not be compared at
// this point (floating point overflowed or lost the difference).
struct Falsification {
  std::optional<Verdict> refuted;
  bool undecided = false;
};

Falsification falsify_at(const terms::TermStore &store, std::span<const TermId> lhs,
                         std::span<const TermId> rhs,
                         const std::function<double(TermId)> &values,
                         const std::string &method, std::uint64_t minimise_seed) {
  Falsification out;
  Point point(store, values);
  for (std::size_t i = 0; i < lhs.size(); ++i) {
    switch (point.compare(lhs[i], rhs[i])) {
    case Point::Comparison::Equal:
      continue;
    case Point::Comparison::Undecided:
      out.undecided = true;
      continue;
    case Point::Comparison::Differs: {
      // minimise keeps only points where the pair still Differs.
      Verdict v;
      v.kind = Verdict::Kind::Refuted;
      v.method = method;
      v.counterexample = minimise(store, lhs[i], rhs[i], values, i, minimise_seed);
      out.refuted = std::move(v);
      return out;
    }
    }
  }
  return out;
}

constexpr std::string_view kOverflow =
    "; evaluating a counterexample overflowed floating point (inf or NaN) or "
    "lost the difference in rounding, even at smaller values, so no difference "
    "is confirmed";

// A pair with an extended side (-inf, inf, NaN: term_store.h) is decided here,
// never by the normal form or the solver over the reals. The same infinity on
// both sides is equal. NaN is equal to nothing, as in torch.allclose and
// assert_close by default: NaN on both sides is "could not prove", never
// "proved". An infinity or NaN against a real term is a difference once the
// real term evaluates finite somewhere (it is finite for every value of the
// variables over the reals; the point shows that floating point agrees).
struct ExtendedPair {
  enum class Result { Equal, Differs, Unknown } result = Result::Equal;
  std::string why;
  Counterexample counterexample;
};

ExtendedPair decide_extended(const terms::TermStore &store, TermId lhs, TermId rhs,
                             const ProverOptions &options) {
  using terms::Extended;
  ExtendedPair out;
  auto kind = [&](TermId t) -> std::optional<Extended> {
    if (!store.is_extended(t))
      return std::nullopt;
    return store.extended_value(t);
  };
  auto a = kind(lhs), b = kind(rhs);
  if (a == Extended::Unmodelled || b == Extended::Unmodelled) {
    out.result = ExtendedPair::Result::Unknown;
    out.why = "an element comes from an operation on an infinity or NaN that no "
              "sound rule decides (an infinity times a symbolic value, a symbolic "
              "choice of -inf)";
    return out;
  }
  if (a == Extended::NaN && b == Extended::NaN) {
    out.result = ExtendedPair::Result::Unknown;
    out.why = "an element is NaN on both sides (a fully masked softmax row, inf - "
              "inf, 0 * inf): NaN equals nothing, as in torch.allclose";
    return out;
  }
  if (a && b) {
    if (*a != *b) {
      out.result = ExtendedPair::Result::Differs;
      DoubleEvaluator eval(store, [](TermId) { return 0.0; });
      out.counterexample.lhs = eval(lhs).value_or(NAN);
      out.counterexample.rhs = eval(rhs).value_or(NAN);
    }
    return out; // the same infinity: equal
  }
  TermId real = a ? rhs : lhs;
  TermId roots[] = {real};
  std::vector<TermId> vars = terms::variables_of(store, roots);
  for (unsigned k = 0; k <= options.random_points; ++k) {
    // The point 0 first: the simplest example.
    auto values = [&](TermId v) {
      return k == 0 ? 0.0 : sample_value(options.seeds.falsify, k - 1, v);
    };
    DoubleEvaluator eval(store, values);
    auto x = eval(real);
    if (!x || !std::isfinite(*x))
      continue;
    out.result = ExtendedPair::Result::Differs;
    for (TermId v : vars)
      out.counterexample.values[v] = values(v);
    out.counterexample.lhs = eval(lhs).value_or(NAN);
    out.counterexample.rhs = eval(rhs).value_or(NAN);
    return out;
  }
  out.result = ExtendedPair::Result::Unknown;
  out.why = fmt::format("an element is {} on one side and a real value on the other{}",
                        store.to_string(a ? lhs : rhs), kOverflow);
  return out;
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

  // 0. Extended elements (-inf, NaN) are decided by their own rules; a
  //    difference there is final, an undecided one keeps the whole
  //    obligation from being proved.
  std::optional<std::string> extended_unknown;
  std::vector<std::size_t> real_index;
  for (std::size_t i = 0; i < lhs.size(); ++i) {
    if (!store.is_extended(lhs[i]) && !store.is_extended(rhs[i])) {
      real_index.push_back(i);
      continue;
    }
    ExtendedPair pair = decide_extended(store, lhs[i], rhs[i], options);
    if (pair.result == ExtendedPair::Result::Differs) {
      Verdict v;
      v.kind = Verdict::Kind::Refuted;
      v.method = "extended reals";
      v.counterexample = std::move(pair.counterexample);
      v.counterexample->element = i;
      return v;
    }
    if (pair.result == ExtendedPair::Result::Unknown && !extended_unknown)
      extended_unknown = std::move(pair.why);
  }
  // Proved pairs are proved; an undecided extended one overrides "proved".
  auto proved = [&](std::string method) {
    if (extended_unknown)
      return unknown(*extended_unknown);
    Verdict v;
    v.kind = Verdict::Kind::Proved;
    v.method = std::move(method);
    return v;
  };

  // 1. Normalize, cheaply: equal structural forms (sums and products
  //    flattened, nothing expanded) prove a pair outright.
  std::vector<TermId> open_lhs, open_rhs;
  std::vector<std::size_t> open_index; // position in lhs/rhs of each open pair
  terms::StructuralNormalizer structural(store);
  for (std::size_t i : real_index) {
    auto a = structural.normalize(lhs[i]);
    auto b = structural.normalize(rhs[i]);
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
  if (open_lhs.empty())
    return proved("normal form");

  // 2. Falsify: concrete evaluation at the path's witness, then at
  //    pseudo-random points. Where floating point cannot compare a pair at a
  //    point (exp overflowed), the point is tried again nearer 0.
  if (options.witness) {
    auto at_witness = [&](TermId v) {
      return options.witness->value(store.variable(v).name);
    };
    Falsification f =
        falsify_at(store, open_lhs, open_rhs, at_witness,
                   "evaluation at the path's witness", options.seeds.minimise);
    if (f.refuted)
      return located(*f.refuted);
  }
  bool overflowed = false;
  for (unsigned k = 0; k < options.random_points; ++k) {
    for (double scale : {1.0, 1.0 / 8, 1.0 / 64}) {
      auto values = [&](TermId v) {
        return scale * sample_value(options.seeds.falsify, k, v);
      };
      Falsification f = falsify_at(store, open_lhs, open_rhs, values, "evaluation",
                                   options.seeds.minimise);
      if (f.refuted)
        return located(*f.refuted);
      if (!f.undecided)
        break;
      overflowed = true;
    }
  }
  const std::string_view overflow_note = overflowed ? kOverflow : std::string_view();

  // 3. Normalize into polynomials (products of sums expanded, within a
  //    budget): after falsifying, since expanding can cost more than the
  //    points that find a bug.
  terms::Normalizer normalizer(store);
  std::vector<std::pair<TermId, TermId>> pairs;
  for (std::size_t i = 0; i < open_lhs.size(); ++i) {
    auto a = normalizer.normalize(open_lhs[i]);
    auto b = normalizer.normalize(open_rhs[i]);
    if (!(a && b && *a == *b))
      pairs.emplace_back(open_lhs[i], open_rhs[i]);
  }
  if (pairs.empty())
    return proved("normal form");

  // 4. Z3 decides the rest.
  auto start = std::chrono::steady_clock::now();
  SmtAnswer answer = find_disequality(store, pairs, solver_ms);
  double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
  switch (answer.result) {
  case SmtAnswer::Result::Unsat:
    return proved("z3");
  case SmtAnswer::Result::Sat: {
    std::map<TermId, double> model;
    for (const auto &[var, value] : answer.model)
      model[var] = value.get_d();
    auto values = [&](TermId v) {
      auto it = model.find(v);
      return it == model.end() ? 0.0 : it->second;
    };
    Falsification f =
        falsify_at(store, open_lhs, open_rhs, values, "z3 model, confirmed by evaluation",
                   options.seeds.minimise);
    if (f.refuted)
      return located(*f.refuted);
    if (f.undecided || overflowed)
      return unknown(fmt::format("the solver found a counterexample over the reals "
                                 "with nonlinear functions read as uninterpreted{}",
                                 kOverflow));
    return unknown("the solver's counterexample relies on an uninterpreted "
                   "reading of a nonlinear function and does not survive its "
                   "real semantics");
  }
  case SmtAnswer::Result::Unknown:
    // Z3 4.8's reason strings are unreliable; elapsed time is not.
    if (elapsed_ms >= 0.9 * solver_ms)
      return unknown(fmt::format("the solver did not finish within {:.1f} s{}",
                                 solver_ms / 1000.0, overflow_note));
    return unknown(fmt::format(
        "the solver gave up (incomplete for nonlinear arithmetic){}", overflow_note));
  }
  return unknown("unreachable");
}

namespace {
Verdict prove_in_worker(terms::TermStore &store, std::span<const TermId> lhs,
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

// SHARDPROOF_DUMP_OBLIGATIONS=DIR writes every obligation given to the
// prover, with its verdict, for tests/benchmarks/prove_bench (a developer's
// tool: the obligations of a slow launch, replayed without tracing it).
class ObligationDump {
public:
  ObligationDump(const terms::TermStore &store, std::span<const TermId> lhs,
                 std::span<const TermId> rhs) {
    static const char *dir = std::getenv("SHARDPROOF_DUMP_OBLIGATIONS");
    static std::atomic<unsigned> count{0};
    if (!dir || !*dir)
      return;
    out_.open(fmt::format("{}/obligation-{}-{:05}.terms", dir, getpid(), count++));
    std::pair<std::string, std::vector<TermId>> lists[] = {
        {"lhs", {lhs.begin(), lhs.end()}}, {"rhs", {rhs.begin(), rhs.end()}}};
    terms::write_terms(store, lists, out_);
    start_ = std::chrono::steady_clock::now();
  }
  void verdict(const Verdict &v) {
    if (!out_.is_open())
      return;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    out_ << fmt::format("# verdict {} {} {:.3f}s {}\n", to_string(v.kind), v.method,
                        seconds, v.why);
  }

private:
  std::ofstream out_;
  std::chrono::steady_clock::time_point start_;
};
} // namespace

Verdict prove_equal(terms::TermStore &store, std::span<const TermId> lhs,
                    std::span<const TermId> rhs, const ProverOptions &options) {
  ObligationDump dump(store, lhs, rhs);
  Verdict verdict = prove_in_worker(store, lhs, rhs, options);
  dump.verdict(verdict);
  return verdict;
}

Verdict BudgetedProver::prove(terms::TermStore &store, std::span<const TermId> lhs,
                              std::span<const TermId> rhs) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
  // Under a tenth of a second no worker can start, let alone prove.
  if (left < std::chrono::milliseconds(100))
    return unknown(fmt::format("the target's time budget ({:g} s, --target-timeout) "
                               "was spent before this obligation",
                               budget_.count() / 1000.0));
  ProverOptions clamped = options_;
  clamped.limits.wall = std::min(clamped.limits.wall, left);
  return prove_equal(store, lhs, rhs, clamped);
}

Verdict PathProver::prove(terms::TermStore &store, std::span<const TermId> lhs,
                          std::span<const TermId> rhs) {
  Verdict unguarded = inner_.prove(store, lhs, rhs);
  if (unguarded.kind != Verdict::Kind::Refuted)
    return unguarded;
  // Extended elements (-inf of a mask this path chose) are constants of the
  // path: compared as they are, not multiplied.
  auto guarded = [&](std::span<const TermId> side) {
    std::vector<TermId> out;
    out.reserve(side.size());
    for (TermId t : side)
      out.push_back(store.is_extended(t) ? t : store.mul(guard_, t));
    return out;
  };
  std::vector<TermId> l = guarded(lhs), r = guarded(rhs);
  return inner_.prove(store, l, r);
}

TermId path_guard(terms::TermStore &store,
                  std::span<const std::pair<TermId, bool>> conditions) {
  // Nested, not multiplied: a chain of ite is linear arithmetic to Z3.
  TermId guard = store.one();
  for (auto it = conditions.rbegin(); it != conditions.rend(); ++it)
    guard = it->second ? store.ite(it->first, guard, store.zero())
                       : store.ite(it->first, store.zero(), guard);
  return guard;
}

std::string encode_verdict(const Verdict &verdict) {
  nlohmann::json j{{"kind", static_cast<int>(verdict.kind)},
                   {"method", verdict.method},
                   {"why", verdict.why}};
  if (const auto &cex = verdict.counterexample) {
    auto values = nlohmann::json::array();
    for (const auto &[var, value] : cex->values)
      values.push_back({var, value});
    // JSON has no inf or NaN (nlohmann writes null): they travel as text.
    auto number = [](double x) -> nlohmann::json {
      if (std::isfinite(x))
        return x;
      return std::isnan(x) ? "nan" : x < 0 ? "-inf" : "inf";
    };
    j["counterexample"] = {{"values", values},
                           {"element", cex->element},
                           {"lhs", number(cex->lhs)},
                           {"rhs", number(cex->rhs)}};
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
    auto number = [](const nlohmann::json &x) -> double {
      if (x.is_number())
        return x.get<double>();
      std::string text = x.is_string() ? x.get<std::string>() : "nan";
      return text == "inf" ? INFINITY : text == "-inf" ? -INFINITY : NAN;
    };
    cex.lhs = number(c.at("lhs"));
    cex.rhs = number(c.at("rhs"));
    v.counterexample = std::move(cex);
  }
  return v;
}

} // namespace shardproof::prover
