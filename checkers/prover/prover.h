// The prover pipeline for one obligation, "lhs[i] == rhs[i] for every i and
// every value of the variables": normalize ▸ falsify ▸ Z3. Three verdicts,
// never blurred: a timeout, a crash or an unmodelled value is "could not
// prove", and a difference is reported only when real semantics confirm it:
// exactly in rationals, or in doubles that are finite on both sides and differ
// far beyond their rounding error (never an overflow to inf or NaN, never an
// exact value against a rounded one).
// Elements that are -inf, inf or NaN (term_store.h) are decided apart: the
// same infinity is equal; NaN is equal to nothing (torch.allclose's default),
// so NaN on both sides is "could not prove"; an infinity or NaN against a
// real value is a difference.
#pragma once

#include "checkers/prover/worker.h"
#include "models/terms/term_store.h"
#include "models/terms/witness.h"

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <string>

namespace shardproof::prover {

using terms::TermId;

// The seed of every pseudo-random stream of the prover and the checks
// (sample_value(seed, point, variable)), named by what it draws. Fixed, so a
// run is reproducible and every report is pinned with these defaults; change
// one to see whether a verdict or a report depends on its points.
struct Seeds {
  std::uint64_t falsify =
      0x5eed; // the falsifier's points; a real value against an infinity
  std::uint64_t minimise =
      0xc0ffee;                    // the small-integer points tried first when minimising
  std::uint64_t layout = 0x1a7047; // infer_layout: the points a candidate must hold at
  std::uint64_t scale = 0xfac7;    // infer_layout: the point a Scaled factor is read at
  std::uint64_t rows = 0x5e1ec7;   // rows_of_reference: the points rows are matched at
  std::uint64_t replicas = 0xd1f;  // whether a replicated parameter's ranks disagree
};

struct ProverOptions {
  unsigned random_points = 6;
  // Every seed, the checks' as well as the prover's (they read them through
  // Prover::options()); no other file holds one.
  Seeds seeds{};
  // The whole obligation (normalize, falsify, Z3) runs in one forked worker
  // under these limits.
  WorkerLimits limits{};
  // A path's witness (models/terms/witness.h), tried before the random
  // points: where the obligation is guarded by the path's conditions, the
  // one point known to satisfy them.
  std::optional<terms::Witness> witness;
};

// Values of the variables that show a difference, already minimised (small
// integers where they still show it); variables not listed do not matter.
struct Counterexample {
  std::map<TermId, double> values;
  std::size_t element = 0; // index of the first differing pair
  double lhs = 0, rhs = 0;
};

struct Verdict {
  enum class Kind { Proved, Refuted, Unknown };
  Kind kind = Kind::Unknown;
  std::string method; // "normal form", "z3", "evaluation", ...
  std::string why;    // for Unknown: what blocked the proof
  std::optional<Counterexample> counterexample;
};

std::string_view to_string(Verdict::Kind kind);

// Deterministic pseudo-random point k for variable v: the same value wherever
// it is asked for, so points need no storage.
double sample_value(std::uint64_t seed, unsigned point, TermId var);

// Evaluates both sides in doubles at the given values; returns the index of
// the first pair that differs, if any.
std::optional<std::size_t> first_difference(const terms::TermStore &store,
                                            std::span<const TermId> lhs,
                                            std::span<const TermId> rhs,
                                            const std::function<double(TermId)> &values);

// Shrinks the values that show lhs[element] != rhs[element] towards small
// integers, keeping only the variables the pair depends on.
// `seed` (Seeds::minimise) picks the small-integer points tried first.
Counterexample minimise(const terms::TermStore &store, TermId lhs, TermId rhs,
                        const std::function<double(TermId)> &values, std::size_t element,
                        std::uint64_t seed);

// Runs the pipeline in a forked worker: a hard time or memory limit turns
// into "could not prove", never into an answer.
Verdict prove_equal(terms::TermStore &store, std::span<const TermId> lhs,
                    std::span<const TermId> rhs, const ProverOptions &options);

// The same pipeline in this process, Z3 told to stop after `solver_ms`; what
// the worker runs.
Verdict prove_in_process(terms::TermStore &store, std::span<const TermId> lhs,
                         std::span<const TermId> rhs, const ProverOptions &options,
                         unsigned solver_ms);

// The seam between the checks and the solver: a check hands each obligation
// to its context's Prover and gets the verdict back before it builds the
// next one (a module-boundary lemma must be proved before the obligations
// that abstract it). A result cache or parallel workers go behind it.
class Prover {
public:
  virtual ~Prover() = default;
  virtual Verdict prove(terms::TermStore &store, std::span<const TermId> lhs,
                        std::span<const TermId> rhs) = 0;
  // What it proves with; the checks take their seeds from it.
  virtual const ProverOptions &options() const = 0;
};

// One obligation at a time, each in its own forked worker (prove_equal).
class WorkerProver final : public Prover {
public:
  explicit WorkerProver(ProverOptions options) : options_(std::move(options)) {}
  Verdict prove(terms::TermStore &store, std::span<const TermId> lhs,
                std::span<const TermId> rhs) override {
    return prove_equal(store, lhs, rhs, options_);
  }
  const ProverOptions &options() const override { return options_; }

private:
  ProverOptions options_;
};

// One target's obligations under one wall-clock budget, so that a scan row
// whose obligations each run to the per-obligation limit cannot hold up the
// rows after it: each obligation gets that limit or what is left of the
// budget, whichever is less, and once it is spent the rest are "could not
// prove" (never tried, so never proved and never refuted).
class BudgetedProver final : public Prover {
public:
  using Clock = std::chrono::steady_clock;
  BudgetedProver(ProverOptions options, Clock::time_point deadline,
                 std::chrono::milliseconds budget)
      : options_(std::move(options)), deadline_(deadline), budget_(budget) {}
  Verdict prove(terms::TermStore &store, std::span<const TermId> lhs,
                std::span<const TermId> rhs) override;
  const ProverOptions &options() const override { return options_; }

private:
  ProverOptions options_;
  Clock::time_point deadline_;
  std::chrono::milliseconds budget_; // for the reason it gives
};

// The obligations of one path of value-dependent decisions (topk, argmax,
// masks: ir::PathCondition): its terms mean what they say only where the
// path's decisions come out as they did, so each pair is compared as
// guard * lhs == guard * rhs, guard being 1 exactly there. A pair proved
// without the guard is proved (a stronger statement); a difference is
// reported only where the guard holds, so at an input that takes this path.
class PathProver final : public Prover {
public:
  PathProver(Prover &inner, TermId guard) : inner_(inner), guard_(guard) {}
  Verdict prove(terms::TermStore &store, std::span<const TermId> lhs,
                std::span<const TermId> rhs) override;
  const ProverOptions &options() const override { return inner_.options(); }

private:
  Prover &inner_;
  TermId guard_;
};

// 1 where every condition comes out as `holds` says, else 0.
TermId path_guard(terms::TermStore &store,
                  std::span<const std::pair<TermId, bool>> conditions);

std::string encode_verdict(const Verdict &verdict);
Verdict decode_verdict(const std::string &text);

} // namespace shardproof::prover
