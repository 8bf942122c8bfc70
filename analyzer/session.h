// One `shardproof check` run over its targets: trace the reference and every
// rank, link them, run the checks, and decide the exit code.
#pragma once

#include "checkers/check.h"
#include "frontend/frontend.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::analyzer {

// What to check, as a frontend reads it.
using frontend::parse_target;
using frontend::Target;

struct SessionOptions {
  int world = 2;
  std::chrono::milliseconds trace_time_limit{120000}; // per simulated rank
  // The whole target's, tracing included; none when unset (a scan sets one).
  std::optional<std::chrono::milliseconds> target_time_limit;
  int max_paths = 16; // value-dependent paths explored per target (--max-paths)
  std::vector<std::string> python_path; // the user's import folders
  // The CUDA toolkit whose headers the sources of an extension the analysed
  // code loads are parsed with (--cuda-path); unset: shardproof's own.
  std::optional<std::string> cuda_path;
  checkers::CheckOptions checks;
  prover::ProverOptions prover;
  checkers::RuleSelection rules; // --select / --ignore
  // Whether a target whose traces executed `files` is checked (--diff: one
  // of them changed); unset, every target is. Asked once it has traced.
  std::function<bool(const std::vector<std::string> &files)> selects;
  // Called when an obligation's proof attempt finishes (progress display).
  std::function<void()> on_proof;
};

// What tracing rank 0 recorded, for coverage reports: operations by name
// (gradients as "grad:<op>"), collectives, and the unmodelled (opaque)
// values its nodes hold, as "name (file:line)".
struct TraceSummary {
  std::map<std::string, int> ops;
  // Reductions by the float format they ran in: the proofs are over the
  // reals, so a 16-bit one is said, not hidden behind "proved".
  std::map<std::string, int> reduction_formats;
  std::size_t nodes = 0, collectives = 0;
  std::vector<std::string> opaque_values;
};

// A target's verdict, from best to worst (a run's overall verdict is its
// targets' worst). Accepted: every refutation is suppressed (never called
// proved); Absent: a recipe's component is not in the framework tree;
// Error: bad input.
enum class TargetVerdict { Proved, Absent, Accepted, Unknown, Refuted, Error };
// One spelling each: JSON's ("unknown") and the text report's ("could not
// prove"); the other verdicts are spelled alike in both.
std::string_view json_name(TargetVerdict verdict);
std::string_view text_name(TargetVerdict verdict);

struct TargetResult {
  Target target;
  int world = 0;
  std::optional<frontend::TraceFailure> failure; // BadInput: usage error
  std::vector<checkers::Finding> findings;
  // Findings on a line marked `# shardproof: ignore[SP0xx]` or
  // `# noqa: SP0xx` for their rule, those of rules --select / --ignore leave
  // out, and those a --baseline knows.
  std::vector<checkers::Finding> suppressed;
  std::vector<checkers::ObligationResult> obligations;
  std::optional<TraceSummary> trace; // when every rank traced
  double seconds = 0;
  // The source files its traces executed or name (absolute), the target's
  // own included: where --diff looks for changed lines.
  std::vector<std::string> files;
  // Traced but not checked: SessionOptions::selects left it out.
  bool unselected = false;

  TargetVerdict verdict() const;
  std::size_t count(prover::Verdict::Kind kind) const;
  // Obligations on the step's backward half: gradients, the norm, updates.
  std::size_t gradient_obligations() const;
};

// Traces the target with the frontend for its language, links the traces
// and runs the checks. A target's own world (a recipe's layout) overrides
// options.world.
TargetResult check_target(const Target &target, const SessionOptions &options);
// The result of a target whose check failed inside shardproof (`what`): an
// error verdict, never a proof, naming it as shardproof's own bug.
TargetResult internal_error(const Target &target, const SessionOptions &options,
                            std::string_view what);

// 2 usage or internal error, 1 an error-severity finding, 3 something could
// not be proved, 0 everything proved.
int exit_code(const std::vector<TargetResult> &results);

} // namespace shardproof::analyzer
