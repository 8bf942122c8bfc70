#include "analyzer/session.h"

#include "frontend/python/linker.h"

#include <algorithm>
#include <chrono>

namespace shardproof::analyzer {

using prover::Verdict;

Target parse_target(const std::string &text) {
  auto sep = text.rfind("::");
  if (sep == std::string::npos)
    return {text, "entry"};
  return {text.substr(0, sep), text.substr(sep + 2)};
}

std::size_t TargetResult::count(Verdict::Kind kind) const {
  return static_cast<std::size_t>(
      std::count_if(obligations.begin(), obligations.end(),
                    [&](const auto &o) { return o.verdict.kind == kind; }));
}

std::string TargetResult::verdict() const {
  if (failure && failure->kind == frontend::TraceFailure::Kind::BadInput)
    return "error";
  bool error = std::any_of(findings.begin(), findings.end(), [](const auto &f) {
    return f.severity == checkers::Severity::Error;
  });
  if (error || count(Verdict::Kind::Refuted) > 0)
    return "refuted";
  if (failure || count(Verdict::Kind::Unknown) > 0 || obligations.empty())
    return "unknown";
  return "proved";
}

TargetResult check_target(const Target &target, const SessionOptions &options) {
  auto start = std::chrono::steady_clock::now();
  TargetResult result;
  result.target = target;
  result.world = options.world;
  terms::TermStore store;

  auto trace = [&](int world, int rank, terms::VarKind kind, ir::Trace &out) {
    if (result.failure)
      return;
    result.failure = frontend::trace_rank(
        store, {target.path, target.function, world, rank, options.trace_time_limit},
        kind, out);
  };
  ir::Trace reference;
  trace(1, 0, terms::VarKind::Reference, reference);
  std::vector<ir::Trace> ranks(static_cast<std::size_t>(options.world));
  for (int r = 0; r < options.world; ++r)
    trace(options.world, r, terms::VarKind::RankLocal, ranks[r]);

  if (result.failure) {
    if (result.failure->kind == frontend::TraceFailure::Kind::Unsupported) {
      Verdict blocked;
      blocked.why = "tracing stopped: " + result.failure->message;
      result.obligations.push_back(
          {"trace " + target.str(), result.failure->loc, std::move(blocked)});
    }
  } else {
    frontend::LinkedProgram program(store, reference, ranks);
    checkers::CheckContext context{store, program, options.prover, {}, {}};
    for (auto &check : checkers::make_checks(options.checks))
      check->run(context);
    result.findings = std::move(context.findings);
    result.obligations = std::move(context.obligations);
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

int exit_code(const std::vector<TargetResult> &results) {
  int code = 0;
  for (const auto &r : results) {
    std::string v = r.verdict();
    if (v == "error")
      return 2;
    if (v == "refuted")
      code = 1;
    else if (v == "unknown" && code == 0)
      code = 3;
  }
  return code;
}

} // namespace shardproof::analyzer
