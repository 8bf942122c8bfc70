// The paths of a target's value-dependent decisions (ir::PathCondition):
// whether the paths checked so far are all there are, and where to look for
// the next one. The analyzer explores them (check_target, analyzer/session.h).
#pragma once

#include "checkers/prover/prover.h"
#include "models/ir/trace.h"
#include "models/terms/term_store.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardproof::checkers {

// A decision over the reference's variables: the condition came out as `holds`.
using Decision = std::pair<terms::TermId, bool>;

// One checked path: its decisions, over the variables of its own reference
// run (each run has its own; they are matched by name).
struct PathDecisions {
  const ir::Trace *reference = nullptr;
  std::vector<Decision> decisions;
};

// Proves that every input where no two compared values are equal takes one
// of `paths` (the sum of their guards is at least 1), with each compared
// value abstracted to a free real: an ordering argument the solver decides
// at once, and a stronger statement. When that fails, `search` (a prover
// with a short limit) looks for an input no path took: its counterexample.
prover::Verdict prove_coverage(terms::TermStore &store,
                               const std::vector<PathDecisions> &paths,
                               prover::Prover &prover, prover::Prover &search);

// An input no checked path takes, found by sampling `points` points of the
// compared values' variables and reading the decisions with the real
// meaning of every function (the solver's counterexample treats exp or max
// as uninterpreted, so tracing at it may take a checked path again): a
// witness's values by name, or nullopt when every point sampled is covered
// or a tie.
std::optional<std::map<std::string, double, std::less<>>>
sampled_uncovered_point(terms::TermStore &store, const std::vector<PathDecisions> &paths,
                        std::uint64_t seed, unsigned points);

// The coverage counterexample as a witness's values by name, nudged by the
// seed so that values it left equal (unconstrained) do not tie.
std::map<std::string, double, std::less<>>
uncovered_point(const terms::TermStore &store, const prover::Counterexample &at,
                std::uint64_t seed);

} // namespace shardproof::checkers
