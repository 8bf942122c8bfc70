#include "analyzer/report.h"

#include "analyzer/fingerprint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <ostream>

namespace shardproof::analyzer {

using prover::Verdict;

std::string display_path(const std::string &path) {
  if (path.empty())
    return path;
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  if (ec)
    return path;
  auto rel = std::filesystem::path(path).lexically_relative(cwd);
  if (rel.empty() || rel.string().starts_with(".."))
    return path;
  return rel.string();
}

namespace {
std::string location(const ir::SourceLoc &loc) {
  ir::SourceLoc shown = loc;
  shown.file = display_path(loc.file);
  return shown.str();
}

std::string failure_line(const TargetResult &r) {
  const auto &f = *r.failure;
  std::string where = f.loc.file.empty() ? display_path(r.target.path) : location(f.loc);
  return fmt::format("{}: {}: {}", where, json_name(r.verdict()), f.message);
}

nlohmann::json notes_json(const std::vector<checkers::Finding::Note> &notes) {
  auto out = nlohmann::json::array();
  for (const auto &n : notes)
    out.push_back({{"file", display_path(n.loc.file)},
                   {"line", n.loc.line},
                   {"column", n.loc.column},
                   {"message", n.message}});
  return out;
}

std::string format_value(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.6g}", v);
}

// An example as the text report shows it, line by line (Alive2 style): the
// inputs, then the reference's value and every rank's.
std::vector<std::string> example_lines(const checkers::Example &example) {
  std::vector<std::string> lines{"Example:"};
  for (const auto &input : example.inputs)
    lines.push_back(fmt::format("  {} = {}", input.name, format_value(input.value)));
  lines.push_back("  every other input = 0");
  lines.push_back(fmt::format("Reference (world 1): {} = {}", example.element,
                              format_value(example.reference)));
  for (const auto &r : example.ranks) {
    std::string who = r.rank == checkers::Example::kSumOverRanks
                          ? std::string("Sum over ranks")
                          : fmt::format("Rank {}", r.rank);
    lines.push_back(fmt::format(
        "{}: {} = {}{}", who, r.element, format_value(r.value),
        r.expected ? fmt::format("  (should be {})", format_value(*r.expected)) : ""));
  }
  if (auto disagree = example.disagreeing_ranks(); !disagree.empty())
    lines.push_back(fmt::format("Ranks that disagree with the reference: {}",
                                fmt::join(disagree, ", ")));
  return lines;
}

// The example as data; a value that cannot be evaluated (NaN) is null.
nlohmann::json example_json(const checkers::Example &example) {
  auto number = [](double v) {
    return std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
  };
  auto inputs = nlohmann::json::array();
  for (const auto &input : example.inputs)
    inputs.push_back({{"name", input.name}, {"value", number(input.value)}});
  auto ranks = nlohmann::json::array();
  for (const auto &r : example.ranks) {
    nlohmann::json rank = {{"rank", r.rank == checkers::Example::kSumOverRanks
                                        ? nlohmann::json("sum")
                                        : nlohmann::json(r.rank)},
                           {"element", r.element},
                           {"value", number(r.value)}};
    if (r.expected)
      rank["expected"] = number(*r.expected);
    ranks.push_back(std::move(rank));
  }
  return {{"world", example.world},
          {"obligation", example.obligation},
          {"layout", example.layout},
          {"inputs", inputs},
          {"element", example.element},
          {"reference", number(example.reference)},
          {"ranks", ranks},
          {"disagreeing_ranks", example.disagreeing_ranks()}};
}

std::string verdict_word(Verdict::Kind kind) {
  switch (kind) {
  case Verdict::Kind::Proved:
    return "proved";
  case Verdict::Kind::Refuted:
    return "refuted";
  case Verdict::Kind::Unknown:
    return "could not prove";
  }
  return "?";
}
} // namespace

namespace {
// The proofs compare exact reals: reductions that ran in a 16-bit format
// are said, so that "proved" never hides them (--reduce-dtype makes them
// SP008 errors).
void write_narrow_reductions(std::ostream &out, const TargetResult &r) {
  if (!r.trace)
    return;
  for (const auto &[format, count] : r.trace->reduction_formats)
    if (format == "float16" || format == "bfloat16")
      out << fmt::format("  note: {} reduction{} ran in {}; the proofs are over the "
                         "reals (--reduce-dtype float32 requires wider ones)\n",
                         count, count == 1 ? "" : "s", format);
}

// How much of a traced step the obligations cover: how many are about its
// backward half, or that none is (a forward-only proof says so). Kernels
// have no step.
std::string step_coverage(const TargetResult &r) {
  if (!r.trace)
    return "";
  std::size_t count = r.gradient_obligations();
  if (count == 0)
    return "; forward only: no gradient or updated parameter was produced";
  return fmt::format("; {} on gradients and the step", count);
}
} // namespace

namespace {
// The target's verdict line: "FILE::FUNC --world 2: proved (N obligations: ...)".
std::string summary_line(const TargetResult &r) {
  std::string suppressed =
      r.suppressed.empty() ? ""
                           : fmt::format("; {} finding{} suppressed", r.suppressed.size(),
                                         r.suppressed.size() == 1 ? "" : "s");
  return fmt::format("{} --world {}: {} ({} obligation{}: {} proved, {} refuted, "
                     "{} could not prove{}{}; {:.2f} s)",
                     r.target.str_with_path(display_path(r.target.path)), r.world,
                     text_name(r.verdict()), r.obligations.size(),
                     r.obligations.size() == 1 ? "" : "s", r.count(Verdict::Kind::Proved),
                     r.count(Verdict::Kind::Refuted), r.count(Verdict::Kind::Unknown),
                     step_coverage(r), suppressed, r.seconds);
}
} // namespace

void write_text(std::ostream &out, std::ostream &err,
                const std::vector<TargetResult> &results) {
  for (const auto &r : results) {
    if (r.verdict() == TargetVerdict::Error || r.verdict() == TargetVerdict::Absent) {
      err << failure_line(r) << "\n";
      if (!r.target.launch.empty())
        err << "  launch: " << r.target.launch << "\n";
      continue;
    }
    for (const auto &f : r.findings) {
      out << fmt::format("{}: {}: {} [{}]\n", location(f.loc),
                         checkers::severity_name(f.severity), f.message, f.rule_id());
      for (const auto &line : detail_lines(f))
        out << "  " << line << "\n";
      for (const auto &note : f.notes)
        out << fmt::format("{}: note: {}\n", location(note.loc), note.message);
    }
    for (const auto &o : r.obligations)
      if (o.verdict.kind == Verdict::Kind::Unknown)
        out << fmt::format("{}: note: could not prove {}: {}\n", location(o.loc), o.name,
                           o.verdict.why);
    out << summary_line(r) << "\n";
    if (!r.target.launch.empty())
      out << "  launch: " << r.target.launch << "\n";
    for (const auto &o : r.obligations)
      out << fmt::format("  {}: {}{}\n", verdict_word(o.verdict.kind), o.name,
                         o.verdict.method.empty() ? "" : " (" + o.verdict.method + ")");
    write_narrow_reductions(out, r);
  }
}

void write_json(std::ostream &out, const std::vector<TargetResult> &results) {
  nlohmann::json doc;
  auto &findings = doc["findings"] = nlohmann::json::array();
  auto &suppressed = doc["suppressed"] = nlohmann::json::array();
  auto &errors = doc["errors"] = nlohmann::json::array();
  auto &targets = doc["targets"] = nlohmann::json::array();
  std::size_t counts[3] = {0, 0, 0};
  for (const auto &r : results) {
    if (r.verdict() == TargetVerdict::Error || r.verdict() == TargetVerdict::Absent) {
      errors.push_back({{"target", r.target.str()},
                        {"file", display_path(r.failure->loc.file)},
                        {"line", r.failure->loc.line},
                        {"message", r.failure->message}});
    }
    for (const auto &f : r.suppressed)
      suppressed.push_back({{"rule_id", f.rule_id()},
                            {"file", display_path(f.loc.file)},
                            {"line", f.loc.line},
                            {"message", f.message},
                            {"target", r.target.str()}});
    for (const auto &f : r.findings) {
      nlohmann::json finding = {{"rule_id", f.rule_id()},
                                {"severity", checkers::severity_name(f.severity)},
                                {"file", display_path(f.loc.file)},
                                {"line", f.loc.line},
                                {"column", f.loc.column},
                                {"message", f.message},
                                {"details", detail_lines(f)},
                                {"notes", notes_json(f.notes)},
                                {"target", r.target.str()}};
      if (f.example)
        finding["example"] = example_json(*f.example);
      findings.push_back(std::move(finding));
    }
    auto obligations = nlohmann::json::array();
    for (const auto &o : r.obligations) {
      ++counts[static_cast<int>(o.verdict.kind)];
      obligations.push_back({{"name", o.name},
                             {"verdict", prover::to_string(o.verdict.kind)},
                             {"method", o.verdict.method},
                             {"why", o.verdict.why},
                             {"on_gradients", o.on_gradients},
                             {"file", display_path(o.loc.file)},
                             {"line", o.loc.line}});
    }
    nlohmann::json target = {{"target", r.target.str()},
                             {"world", r.world},
                             {"verdict", json_name(r.verdict())},
                             {"seconds", r.seconds},
                             {"obligations", obligations}};
    if (r.trace)
      target["gradient_obligations"] = r.gradient_obligations();
    if (!r.target.launch.empty())
      target["launch"] = r.target.launch;
    if (!r.target.launch_file.empty())
      target["launch_file"] = r.target.launch_file;
    if (r.trace)
      target["trace"] = {{"nodes", r.trace->nodes},
                         {"collectives", r.trace->collectives},
                         {"ops", r.trace->ops},
                         {"reduction_formats", r.trace->reduction_formats},
                         {"opaque_values", r.trace->opaque_values}};
    targets.push_back(std::move(target));
  }
  // The worst verdict of any target.
  TargetVerdict overall = TargetVerdict::Proved;
  for (const auto &r : results)
    overall = std::max(overall, r.verdict());
  doc["verdict"] = json_name(overall);
  doc["obligations"] = {
      {"proved", counts[0]}, {"refuted", counts[1]}, {"unknown", counts[2]}};
  out << doc.dump(2) << "\n";
}

namespace {
// GitHub's escaping of a workflow command's message (actions/toolkit's
// escapeData) and, with ':' and ',' too, of its properties (escapeProperty).
std::string github_escape(std::string_view text, bool property) {
  std::string out;
  for (char c : text) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else if (property && c == ':')
      out += "%3A";
    else if (property && c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

// `::error file=F,line=L,col=C,title=T::MESSAGE`, paths as the repository
// names them (GitHub places annotations by them).
std::string github_command(std::string_view command, const ir::SourceLoc &loc,
                           std::string_view title, std::string_view message) {
  std::string properties;
  if (!loc.file.empty()) {
    properties = "file=" + github_escape(repository_path(loc.file), true);
    if (loc.line >= 1)
      properties += fmt::format(",line={}", loc.line);
    if (loc.column >= 1)
      properties += fmt::format(",col={}", loc.column);
  }
  if (!title.empty())
    properties +=
        (properties.empty() ? "" : ",") + ("title=" + github_escape(title, true));
  return fmt::format("::{} {}::{}", command, properties, github_escape(message, false));
}

std::string_view github_level(checkers::Severity severity) {
  return severity == checkers::Severity::Error     ? "error"
         : severity == checkers::Severity::Warning ? "warning"
                                                   : "notice";
}
} // namespace

void write_github(std::ostream &out, const std::vector<TargetResult> &results) {
  for (const auto &r : results) {
    if (r.verdict() == TargetVerdict::Error || r.verdict() == TargetVerdict::Absent) {
      out << github_command(r.verdict() == TargetVerdict::Error ? "error" : "notice",
                            r.failure->loc, "shardproof: " + r.target.str(),
                            r.failure->message)
          << "\n";
      continue;
    }
    for (const auto &f : r.findings) {
      std::string message = f.message;
      for (const auto &line : detail_lines(f))
        message += "\n" + line;
      for (const auto &note : f.notes)
        message += fmt::format("\n{}: note: {}", location(note.loc), note.message);
      out << github_command(
                 github_level(f.severity), f.loc,
                 fmt::format("{} {}", f.rule_id(), checkers::rule(f.rule).name), message)
          << "\n";
    }
    // Under a refutation, what could not be proved mostly follows from it
    // (a value of the hung collective): the summary line counts it.
    for (const auto &o : r.obligations)
      if (o.verdict.kind == Verdict::Kind::Unknown &&
          r.verdict() != TargetVerdict::Refuted)
        out << github_command(
                   "warning", o.loc, "shardproof: could not prove",
                   fmt::format("could not prove {}: {}", o.name, o.verdict.why))
            << "\n";
    out << summary_line(r) << "\n";
  }
}

std::vector<std::string> detail_lines(const checkers::Finding &f) {
  std::vector<std::string> lines;
  if (f.example)
    lines = example_lines(*f.example);
  lines.insert(lines.end(), f.details.begin(), f.details.end());
  return lines;
}

} // namespace shardproof::analyzer
