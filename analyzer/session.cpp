#include "analyzer/session.h"

#include "analyzer/layout_inference.h"
#include "frontend/python/python_frontend.h"
#include "models/ir/linker.h"
#include "models/terms/term_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <regex>
#include <set>

namespace shardproof::analyzer {

using prover::Verdict;

std::size_t TargetResult::count(Verdict::Kind kind) const {
  return static_cast<std::size_t>(
      std::count_if(obligations.begin(), obligations.end(),
                    [&](const auto &o) { return o.verdict.kind == kind; }));
}

TargetVerdict TargetResult::verdict() const {
  if (failure && failure->kind == frontend::TraceFailure::Kind::BadInput)
    return TargetVerdict::Error;
  if (failure && failure->kind == frontend::TraceFailure::Kind::Absent)
    return TargetVerdict::Absent;
  bool error = std::any_of(findings.begin(), findings.end(), [](const auto &f) {
    return f.severity == checkers::Severity::Error;
  });
  if (error)
    return TargetVerdict::Refuted;
  if (failure || count(Verdict::Kind::Unknown) > 0 || obligations.empty())
    return TargetVerdict::Unknown;
  if (count(Verdict::Kind::Refuted) > 0)
    return suppressed.empty() ? TargetVerdict::Refuted : TargetVerdict::Accepted;
  return TargetVerdict::Proved;
}

std::string_view json_name(TargetVerdict verdict) {
  switch (verdict) {
  case TargetVerdict::Proved:
    return "proved";
  case TargetVerdict::Absent:
    return "absent";
  case TargetVerdict::Accepted:
    return "accepted";
  case TargetVerdict::Unknown:
    return "unknown";
  case TargetVerdict::Refuted:
    return "refuted";
  case TargetVerdict::Error:
    return "error";
  }
  return "?";
}

std::string_view text_name(TargetVerdict verdict) {
  return verdict == TargetVerdict::Unknown ? "could not prove" : json_name(verdict);
}

namespace {
// Moves the findings whose source line says `# shardproof: ignore[SP0xx]`
// (several ids may be listed, comma-separated), and those of rules the
// selection leaves out, into `suppressed`.
void apply_suppressions(std::vector<checkers::Finding> &findings,
                        std::vector<checkers::Finding> &suppressed,
                        const checkers::RuleSelection &selection,
                        const frontend::SourceFiles &sources) {
  static const std::regex marker(R"(shardproof:\s*ignore\[([A-Z0-9,\s]*)\])");
  auto line_of = [&](const ir::SourceLoc &loc) -> std::string {
    auto it = sources.find(loc.file);
    if (it == sources.end())
      return "";
    const auto &lines = it->second;
    return loc.line >= 1 && loc.line <= static_cast<int>(lines.size())
               ? lines[loc.line - 1]
               : "";
  };
  std::vector<checkers::Finding> kept;
  for (auto &f : findings) {
    std::smatch m;
    std::string line = line_of(f.loc);
    bool ignored =
        !selection.reports(f.rule) || (std::regex_search(line, m, marker) &&
                                       m[1].str().find(f.rule_id()) != std::string::npos);
    (ignored ? suppressed : kept).push_back(std::move(f));
  }
  findings = std::move(kept);
}
} // namespace

namespace {
TraceSummary summarize(const terms::TermStore &store, const ir::Trace &trace) {
  TraceSummary summary;
  summary.nodes = trace.nodes.size();
  summary.collectives = trace.collectives.size();
  for (const ir::Collective &c : trace.collectives)
    if (ir::is_reduction(c.kind))
      ++summary.reduction_formats[std::string(ir::dtype_name(c.dtype))];
  std::vector<terms::TermId> elements;
  for (const ir::Node &node : trace.nodes) {
    ++summary.ops[node.op];
    elements.insert(elements.end(), node.elements.begin(), node.elements.end());
  }
  std::set<std::string> opaque;
  for (terms::TermId v : terms::variables_of(store, elements))
    if (store.variable(v).kind == terms::VarKind::Opaque)
      opaque.insert(
          fmt::format("{} ({})", store.variable(v).name, store.variable(v).origin));
  summary.opaque_values.assign(opaque.begin(), opaque.end());
  return summary;
}
} // namespace

namespace {
// The frontend for the target's language. (The CUDA frontend will take
// `.cu` files here.)
std::unique_ptr<frontend::Frontend> frontend_for(const Target &) {
  return std::make_unique<frontend::PythonFrontend>();
}
} // namespace

namespace {
// Budgeted from the target's start when the run has a target time limit.
std::unique_ptr<prover::Prover> prover_for(const SessionOptions &options,
                                           std::chrono::steady_clock::time_point start) {
  if (const auto &budget = options.target_time_limit)
    return std::make_unique<prover::BudgetedProver>(options.prover, start + *budget,
                                                    *budget);
  return std::make_unique<prover::WorkerProver>(options.prover);
}
} // namespace

TargetResult internal_error(const Target &target, const SessionOptions &options,
                            std::string_view what) {
  TargetResult result;
  result.target = target;
  result.world = target.world.value_or(options.world);
  result.failure = frontend::TraceFailure{
      .kind = frontend::TraceFailure::Kind::BadInput,
      .message = fmt::format("shardproof internal error (a bug of shardproof's, not of "
                             "this code): {}",
                             what)};
  return result;
}

TargetResult check_target(const Target &target, const SessionOptions &options) {
  auto start = std::chrono::steady_clock::now();
  TargetResult result;
  result.target = target;
  result.world = target.world.value_or(options.world);
  terms::TermStore store;
  frontend::TracedProgram traced =
      frontend_for(target)->trace(store, target,
                                  {.world = result.world,
                                   .time_limit = options.trace_time_limit,
                                   .python_path = options.python_path});
  result.failure = std::move(traced.failure);

  if (result.failure) {
    if (result.failure->kind == frontend::TraceFailure::Kind::Unsupported) {
      Verdict blocked;
      blocked.why = "tracing stopped: " + result.failure->message;
      result.obligations.push_back(
          {"trace " + target.str(), result.failure->loc, std::move(blocked)});
    }
  } else {
    result.trace = summarize(store, traced.ranks[0]);
    RunChecks run = [&](const std::vector<ir::Trace> &ranks) {
      ir::LinkedProgram program(store, traced.reference, ranks);
      std::unique_ptr<prover::Prover> prover = prover_for(options, start);
      checkers::CheckContext context{store, program, *prover,
                                     {},    {},      checkers::Lemmas(store)};
      checkers::run_checks(context, options.checks);
      return CheckRun{std::move(context.findings), std::move(context.obligations)};
    };
    CheckRun checked = run(traced.ranks);
    if (checked.refutes())
      if (auto inferred = infer_parameter_layouts(traced.ranks, checked, run)) {
        checked = std::move(inferred->run);
        for (const InferredLayout &layout : inferred->layouts)
          checked.findings.push_back(inferred_layout_finding(layout));
      }
    result.findings = std::move(checked.findings);
    apply_suppressions(result.findings, result.suppressed, options.rules, traced.sources);
    result.obligations = std::move(checked.obligations);
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

int exit_code(const std::vector<TargetResult> &results) {
  int code = 0;
  for (const auto &r : results) {
    TargetVerdict v = r.verdict();
    if (v == TargetVerdict::Error || v == TargetVerdict::Absent)
      return 2;
    if (v == TargetVerdict::Refuted)
      code = 1;
    else if (v == TargetVerdict::Unknown && code == 0)
      code = 3;
  }
  return code;
}

} // namespace shardproof::analyzer
