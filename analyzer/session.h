// One `shardproof check` run over its targets: trace the reference and every
// rank, link them, run the checks, and decide the exit code.
#pragma once

#include "checkers/check.h"
#include "frontend/python/interpreter.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::analyzer {

struct Target {
  std::string path;     // as the user wrote it
  std::string function; // defaults to "entry"
  std::string str() const { return path + "::" + function; }
};

// "FILE.py::FUNC" or "FILE.py" (FUNC = entry).
Target parse_target(const std::string &text);

struct SessionOptions {
  int world = 2;
  std::chrono::milliseconds trace_time_limit{120000}; // per simulated rank
  checkers::CheckOptions checks;
  prover::ProverOptions prover;
};

struct TargetResult {
  Target target;
  int world = 0;
  std::optional<frontend::TraceFailure> failure; // BadInput: usage error
  std::vector<checkers::Finding> findings;
  // Findings on a line marked `# shardproof: ignore[SP0xx]` for their rule.
  std::vector<checkers::Finding> suppressed;
  std::vector<checkers::ObligationResult> obligations;
  double seconds = 0;

  // "proved", "refuted", "unknown", "accepted" (every refutation is
  // suppressed; never called proved) or "error" (bad input)
  std::string verdict() const;
  std::size_t count(prover::Verdict::Kind kind) const;
};

TargetResult check_target(const Target &target, const SessionOptions &options);

// 2 usage or internal error, 1 an error-severity finding, 3 something could
// not be proved, 0 everything proved.
int exit_code(const std::vector<TargetResult> &results);

} // namespace shardproof::analyzer
