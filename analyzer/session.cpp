#include "analyzer/session.h"

#include "models/ir/linker.h"
#include "models/terms/term_store.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>

namespace shardproof::analyzer {

using prover::Verdict;

Target parse_target(const std::string &text) {
  auto sep = text.rfind("::");
  if (sep == std::string::npos)
    return {text, "entry", ""};
  return {text.substr(0, sep), text.substr(sep + 2), ""};
}

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
                        const checkers::RuleSelection &selection) {
  static const std::regex marker(R"(shardproof:\s*ignore\[([A-Z0-9,\s]*)\])");
  std::map<std::string, std::vector<std::string>> sources;
  auto line_of = [&](const ir::SourceLoc &loc) -> std::string {
    auto [it, fresh] = sources.try_emplace(loc.file);
    if (fresh) {
      std::ifstream in(loc.file);
      for (std::string line; std::getline(in, line);)
        it->second.push_back(line);
    }
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
// Traces every rank, in passes: a rank whose code turns a collective's result
// into a Python number (token counts that size an all-to-all) stops at a
// placeholder, since results exist only once the ranks are linked. When the
// ranks' partial traces link some collectives to constants, the ranks are
// traced again with those results known, until they all finish or a pass
// learns nothing. The last pass is checked: linking its collectives must give
// the constants it ran with, or the traces are not trusted.
template <typename TraceRank>
std::vector<ir::Trace> trace_ranks(terms::TermStore &store, int world,
                                   std::optional<frontend::TraceFailure> &failure,
                                   TraceRank trace_rank) {
  constexpr int kMaxPasses = 8;
  ir::Trace reference; // linking ranks to each other needs none
  std::vector<ir::KnownCollectives> known(static_cast<std::size_t>(world));
  for (int pass = 1;; ++pass) {
    failure.reset();
    std::vector<ir::Trace> ranks(static_cast<std::size_t>(world));
    for (int r = 0; r < world; ++r)
      trace_rank(r, ranks[r], known[r]);
    if (!failure && pass == 1)
      return ranks; // nothing ran with known results: nothing to check
    ir::LinkedProgram program(store, reference, ranks);
    bool learned = false, consistent = true;
    for (int r = 0; r < world; ++r)
      for (const ir::Collective &call : ranks[r].collectives) {
        std::vector<terms::TermId> linked = program.linked(r, call.outputs);
        auto key = std::make_pair(call.group, call.sequence);
        if (auto it = known[r].find(key); it != known[r].end()) {
          if (it->second != linked && consistent) {
            consistent = false;
            failure = frontend::TraceFailure{
                frontend::TraceFailure::Kind::Unsupported, call.loc,
                fmt::format("collective #{} on group {} linked to other values when the "
                            "ranks were traced again with its result known",
                            call.sequence, call.group)};
          }
          continue;
        }
        if (std::all_of(linked.begin(), linked.end(),
                        [&](terms::TermId t) { return store.is_const(t); })) {
          known[r][key] = std::move(linked);
          learned = true;
        }
      }
    if (!consistent || !failure ||
        failure->kind != frontend::TraceFailure::Kind::Unsupported || !learned ||
        pass == kMaxPasses)
      return ranks;
  }
}
} // namespace

TargetResult check_target(const Target &target, const SessionOptions &options) {
  auto start = std::chrono::steady_clock::now();
  TargetResult result;
  result.target = target;
  result.world = options.world;
  terms::TermStore store;

  auto trace = [&](int world, int rank, terms::VarKind kind, ir::Trace &out,
                   const ir::KnownCollectives &known) {
    frontend::RankRun run{target.path, target.function,          world,
                          rank,        options.trace_time_limit, target.layout,
                          known};
    auto failure = frontend::trace_rank(store, run, kind, out);
    if (failure && !result.failure)
      result.failure = std::move(failure);
  };
  ir::Trace reference;
  trace(1, 0, terms::VarKind::Reference, reference, {});
  std::vector<ir::Trace> ranks;
  if (!result.failure)
    ranks =
        trace_ranks(store, options.world, result.failure,
                    [&](int rank, ir::Trace &out, const ir::KnownCollectives &known) {
                      trace(options.world, rank, terms::VarKind::RankLocal, out, known);
                    });

  if (result.failure) {
    if (result.failure->kind == frontend::TraceFailure::Kind::Unsupported) {
      Verdict blocked;
      blocked.why = "tracing stopped: " + result.failure->message;
      result.obligations.push_back(
          {"trace " + target.str(), result.failure->loc, std::move(blocked)});
    }
  } else {
    result.trace = summarize(store, ranks[0]);
    ir::LinkedProgram program(store, reference, ranks);
    prover::WorkerProver prover(options.prover);
    checkers::CheckContext context{store, program, prover,
                                   {},    {},      checkers::Lemmas(store)};
    checkers::run_checks(context, options.checks);
    result.findings = std::move(context.findings);
    apply_suppressions(result.findings, result.suppressed, options.rules);
    result.obligations = std::move(context.obligations);
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
