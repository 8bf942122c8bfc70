#include "analyzer/session.h"

#include "analyzer/extensions.h"
#include "analyzer/layout_inference.h"
#include "checkers/decision_paths.h"
#include "frontend/python/python_frontend.h"
#include "models/ir/linker.h"
#include "models/terms/term_store.h"
#include "models/terms/witness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>

namespace shardproof::analyzer {

using checkers::Decision;
using checkers::PathDecisions;
using checkers::prove_coverage;
using checkers::sampled_uncovered_point;
using checkers::uncovered_point;
using prover::Verdict;

std::size_t TargetResult::count(Verdict::Kind kind) const {
  return static_cast<std::size_t>(
      std::count_if(obligations.begin(), obligations.end(),
                    [&](const auto &o) { return o.verdict.kind == kind; }));
}

std::size_t TargetResult::gradient_obligations() const {
  return static_cast<std::size_t>(
      std::count_if(obligations.begin(), obligations.end(),
                    [](const auto &o) { return o.on_gradients; }));
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
// or `# noqa: SP0xx` (several ids may be listed, comma-separated), and those of rules the
// selection leaves out, into `suppressed`.
void apply_suppressions(std::vector<checkers::Finding> &findings,
                        std::vector<checkers::Finding> &suppressed,
                        const checkers::RuleSelection &selection,
                        const frontend::SourceFiles &sources) {
  // ruff's and flake8's `# noqa: CODE, CODE` too (other tools' codes may
  // share the list); a bare `# noqa` names no rule and suppresses nothing.
  static const std::regex marker(
      R"((?:shardproof:\s*ignore\[([A-Z0-9,\s]*)\])|(?:#\s*noqa:\s*([A-Z0-9,\s]+)))",
      std::regex::icase);
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
    bool marked = false;
    for (std::sregex_iterator it(line.begin(), line.end(), marker), end; it != end; ++it)
      marked |=
          ((*it)[1].str() + "," + (*it)[2].str()).find(f.rule_id()) != std::string::npos;
    bool ignored = !selection.reports(f.rule) || marked;
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
// A prover that says when each proof attempt ends (SessionOptions::on_proof).
class ReportingProver final : public prover::Prover {
public:
  ReportingProver(std::unique_ptr<prover::Prover> inner, std::function<void()> done)
      : inner_(std::move(inner)), done_(std::move(done)) {}
  Verdict prove(terms::TermStore &store, std::span<const terms::TermId> lhs,
                std::span<const terms::TermId> rhs) override {
    Verdict verdict = inner_->prove(store, lhs, rhs);
    done_();
    return verdict;
  }
  const prover::ProverOptions &options() const override { return inner_->options(); }

private:
  std::unique_ptr<prover::Prover> inner_;
  std::function<void()> done_;
};

std::unique_ptr<prover::Prover> prover_for(const SessionOptions &options,
                                           const prover::ProverOptions &prover_options,
                                           std::chrono::steady_clock::time_point start) {
  std::unique_ptr<prover::Prover> prover;
  if (const auto &budget = options.target_time_limit)
    prover = std::make_unique<prover::BudgetedProver>(prover_options, start + *budget,
                                                      *budget);
  else
    prover = std::make_unique<prover::WorkerProver>(prover_options);
  if (options.on_proof)
    return std::make_unique<ReportingProver>(std::move(prover), options.on_proof);
  return prover;
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

namespace {
// Value-dependent decisions (ir::PathCondition) are explored path by path,
// one witness each (models/terms/witness.h): a target is proved when every
// path reached is, and every input (but those where two compared values are
// equal) is shown to take one of them. Each next witness is an input the
// solver found outside the paths checked so far, or else a fresh seed.
constexpr std::uint64_t kFirstPathSeed = 1;
// Witnesses tried per distinct path allowed (SessionOptions::max_paths).
constexpr int kSeedsPerPath = 3;
// Points sampled for an input outside the paths checked (cheap: the
// compared values evaluated in doubles, nothing traced).
constexpr unsigned kUncoveredSamples = 4096;
// Paths after the first stop being explored past this, unless the target
// has a budget of its own (--target-timeout): a framework tree's path can
// take a minute; the first path's verdicts are never cut short.
constexpr std::chrono::minutes kMaxExploration{5};

// One path of the target's decisions: its traces, what the checks found on
// them, and its decisions over its reference's variables.
struct CheckedPath {
  terms::Witness witness;
  frontend::TracedProgram traced;
  CheckRun checked;
  std::vector<Decision> decisions;
  bool unselected = false; // SessionOptions::selects left it out

  bool settled() const { // refuted, or something could not be proved
    return checked.refutes() ||
           std::any_of(
               checked.obligations.begin(), checked.obligations.end(),
               [](const auto &o) { return o.verdict.kind != Verdict::Kind::Proved; });
  }
  // Equal for two seeds that took the same path: each run's decisions, as
  // a set (the order they were recorded in says nothing of the path).
  std::string signature(const terms::TermStore &store) const {
    std::string text;
    auto add = [&](const ir::Trace &trace) {
      std::set<std::string> decisions;
      for (const ir::PathCondition &c : trace.path)
        decisions.insert(terms::named_key(store, std::span(&c.condition, 1)) +
                         (c.holds ? "+" : "-"));
      text += fmt::format("{}|", fmt::join(decisions, ";"));
    };
    add(traced.reference);
    for (const ir::Trace &rank : traced.ranks)
      add(rank);
    return text;
  }
};

std::vector<Decision> linked_decisions(ir::LinkedProgram &program) {
  std::vector<Decision> out;
  for (const ir::PathCondition &c : program.reference().path)
    out.emplace_back(c.condition, c.holds);
  for (int r = 0; r < program.world(); ++r)
    for (const ir::PathCondition &c : program.rank(r).path)
      out.emplace_back(program.linked(r, c.condition), c.holds);
  return out;
}

// The files a traced program executed or names, absolute, the target's own
// and its launch file included.
std::vector<std::string> traced_files(const frontend::TracedProgram &traced,
                                      const Target &target) {
  std::set<std::string> files(traced.executed_files.begin(), traced.executed_files.end());
  for (const auto &[file, lines] : traced.sources)
    files.insert(file);
  for (const std::string &own : {target.path, target.launch_file})
    if (!own.empty())
      files.insert(std::filesystem::absolute(own).lexically_normal().string());
  return {files.begin(), files.end()};
}

CheckedPath check_path(terms::TermStore &store, const Target &target,
                       const SessionOptions &options, int world, terms::Witness witness,
                       std::chrono::steady_clock::time_point start) {
  CheckedPath path;
  path.witness = std::move(witness);
  path.traced =
      frontend_for(target)->trace(store, target,
                                  {.world = world,
                                   .time_limit = options.trace_time_limit,
                                   .python_path = options.python_path,
                                   .witness = path.witness,
                                   .extensions = extension_resolver(options.cuda_path)});
  if (path.traced.failure)
    return path;
  if (options.selects && !options.selects(traced_files(path.traced, target))) {
    path.unselected = true;
    return path;
  }
  RunChecks run = [&](const std::vector<ir::Trace> &ranks) {
    ir::LinkedProgram program(store, path.traced.reference, ranks);
    path.decisions = linked_decisions(program);
    // Only where the witness decided something is it the point to try first
    // and the path a guard.
    prover::ProverOptions on_path = options.prover;
    const bool decided = !path.decisions.empty();
    if (decided)
      on_path.witness = path.witness;
    std::unique_ptr<prover::Prover> prover = prover_for(options, on_path, start);
    std::optional<prover::PathProver> guarded;
    if (decided)
      guarded.emplace(*prover, prover::path_guard(store, path.decisions));
    checkers::CheckContext context{store, program, guarded ? *guarded : *prover,
                                   {},    {},      checkers::Lemmas(store)};
    checkers::run_checks(context, options.checks);
    return CheckRun{std::move(context.findings), std::move(context.obligations)};
  };
  path.checked = run(path.traced.ranks);
  // A rank given a collective's linked result as terms holds them as the
  // declared layouts bound the leaves: another layout cannot be tried on it.
  const bool given_terms =
      std::any_of(path.traced.ranks.begin(), path.traced.ranks.end(),
                  [](const ir::Trace &rank) { return rank.given_linked_terms; });
  if (!given_terms)
    if (auto bound = bind_unmatched_parameters(path.traced.ranks, path.traced.reference,
                                               path.checked, run)) {
      path.traced.ranks = std::move(bound->ranks);
      path.checked = run(path.traced.ranks);
      for (auto &note : bound->notes)
        path.checked.findings.push_back(std::move(note));
    }
  if (path.checked.refutes() && !given_terms)
    if (auto inferred = infer_parameter_layouts(path.traced.ranks, path.checked, run)) {
      path.checked = std::move(inferred->run);
      for (const InferredLayout &layout : inferred->layouts)
        path.checked.findings.push_back(inferred_layout_finding(layout));
    }
  return path;
}

// The obligation that the paths checked are all there are.
checkers::ObligationResult coverage_obligation(const std::vector<CheckedPath> &paths,
                                               Verdict verdict, int seeds_tried) {
  const ir::Trace &first = paths.front().traced.reference;
  ir::SourceLoc loc = first.path.empty() ? ir::SourceLoc{} : first.path.front().loc;
  std::set<std::string> kinds;
  for (const CheckedPath &path : paths)
    for (const ir::PathCondition &c : path.traced.reference.path)
      kinds.insert(c.what);
  std::string name = fmt::format(
      "value-dependent decisions ({}): every input takes one of the {} path{} checked",
      fmt::join(kinds, ", "), paths.size(), paths.size() == 1 ? "" : "s");
  // Not covered is no bug of the analysed code: it is what was not shown.
  if (verdict.kind == Verdict::Kind::Refuted) {
    verdict.kind = Verdict::Kind::Unknown;
    verdict.method.clear();
    verdict.counterexample.reset();
  }
  if (verdict.kind == Verdict::Kind::Proved)
    verdict.method += "; inputs where two compared values are equal (ties, which PyTorch "
                      "may break either way) excluded";
  else
    verdict.why =
        fmt::format("{} path{} proved, {} seeds tried; no proof that they are "
                    "all: {}",
                    paths.size(), paths.size() == 1 ? "" : "s", seeds_tried,
                    verdict.why.empty() ? "an input takes another path" : verdict.why);
  return {std::move(name), std::move(loc), std::move(verdict)};
}

void take_path(TargetResult &result, CheckedPath &path, const terms::TermStore &store,
               const SessionOptions &options) {
  result.failure = std::move(path.traced.failure);
  if (result.failure) {
    if (result.failure->kind == frontend::TraceFailure::Kind::Unsupported) {
      Verdict blocked;
      blocked.why = "tracing stopped: " + result.failure->message;
      result.obligations.push_back(
          {"trace " + result.target.str(), result.failure->loc, std::move(blocked)});
    }
    return;
  }
  result.trace = summarize(store, path.traced.ranks[0]);
  result.findings = std::move(path.checked.findings);
  apply_suppressions(result.findings, result.suppressed, options.rules,
                     path.traced.sources);
  result.obligations = std::move(path.checked.obligations);
}

// Looking for an input that no path checked so far takes is worth a falsifier
// and a short solver call, not a proof's time: a seed is cheaper.
prover::ProverOptions search_options(prover::ProverOptions options) {
  options.limits.wall = std::min(options.limits.wall, std::chrono::milliseconds(2000));
  return options;
}

// Where a path other than the first failed or was refuted, says which.
void name_the_path(TargetResult &result, const CheckedPath &path) {
  if (path.witness.seed == kFirstPathSeed)
    return;
  std::string on = fmt::format(
      " (on another path of the value-dependent decisions, "
      "witness {}{})",
      path.witness.seed, path.witness.values.empty() ? "" : " and a solver's point");
  if (result.failure)
    result.failure->message += on;
  for (auto &obligation : result.obligations)
    if (obligation.verdict.kind != Verdict::Kind::Proved)
      obligation.name += on;
}
} // namespace

TargetResult check_target(const Target &target, const SessionOptions &options) {
  auto start = std::chrono::steady_clock::now();
  TargetResult result;
  result.target = target;
  result.world = target.world.value_or(options.world);
  terms::TermStore store;
  auto finish = [&]() -> TargetResult & {
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  auto spent = [&] {
    auto elapsed = std::chrono::steady_clock::now() - start;
    if (options.target_time_limit)
      return elapsed >= *options.target_time_limit;
    return elapsed >= kMaxExploration;
  };
  std::vector<CheckedPath> proved;
  std::set<std::string> seen;
  Verdict coverage;
  int tries = 0;
  terms::Witness next{kFirstPathSeed, {}};
  const auto bound = static_cast<std::size_t>(options.max_paths);
  while (tries < kSeedsPerPath * options.max_paths && proved.size() < bound) {
    CheckedPath path = check_path(store, target, options, result.world, next, start);
    ++tries;
    next = {kFirstPathSeed + static_cast<std::uint64_t>(tries), {}};
    result.files = traced_files(path.traced, target);
    if (path.unselected) {
      result.unselected = true;
      return finish();
    }
    if (path.traced.failure || path.decisions.empty() || path.settled()) {
      take_path(result, path, store, options);
      name_the_path(result, path);
      return finish();
    }
    if (!seen.insert(path.signature(store)).second) {
      if (spent())
        break;
      continue;
    }
    proved.push_back(std::move(path));
    std::vector<PathDecisions> decisions;
    for (const CheckedPath &p : proved)
      decisions.push_back({&p.traced.reference, p.decisions});
    auto prover = prover_for(options, options.prover, start);
    auto search = prover_for(options, search_options(options.prover), start);
    coverage = prove_coverage(store, decisions, *prover, *search);
    if (coverage.kind == Verdict::Kind::Proved || spent())
      break;
    if (auto sampled =
            sampled_uncovered_point(store, decisions, next.seed, kUncoveredSamples))
      next.values = std::move(*sampled);
    else if (coverage.counterexample)
      next.values = uncovered_point(store, *coverage.counterexample, next.seed);
  }
  if (coverage.kind != Verdict::Kind::Proved && proved.size() >= bound)
    coverage.why = fmt::format("the bound of {} paths (--max-paths) is reached{}", bound,
                               coverage.why.empty() ? "" : "; " + coverage.why);
  else if (coverage.kind != Verdict::Kind::Proved && spent())
    coverage.why = fmt::format(
        "the time to explore paths ran out ({:.0f} s){}",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
        coverage.why.empty() ? "" : "; " + coverage.why);
  auto checked = coverage_obligation(proved, coverage, tries);
  take_path(result, proved.front(), store, options);
  result.obligations.push_back(std::move(checked));
  return finish();
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
