// SARIF 2.1.0 as GitHub code scanning ingests it (docs/pre-merge.md): the
// rules from the one registry, a result per finding with the finding's
// causal chain (its notes) as related locations, and fingerprints that
// survive edits elsewhere in the file.
#include "analyzer/fingerprint.h"
#include "analyzer/report.h"
#include "analyzer/version.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <ostream>

namespace shardproof::analyzer {

namespace {
using nlohmann::json;

std::string_view sarif_level(checkers::Severity severity) {
  switch (severity) {
  case checkers::Severity::Error:
    return "error";
  case checkers::Severity::Warning:
    return "warning";
  case checkers::Severity::Note:
    return "note";
  }
  return "none";
}

json rule_descriptor(const checkers::Rule &rule) {
  return {{"id", rule.id},
          {"name", rule.name},
          {"shortDescription", {{"text", rule.summary}}},
          {"fullDescription", {{"text", rule.help}}},
          {"help",
           {{"text", rule.help},
            {"markdown", fmt::format("{}\n\n{}", rule.summary, rule.help)}}},
          {"helpUri",
           fmt::format("{}/blob/main/docs/rules/{}.md", SHARDPROOF_HOMEPAGE, rule.id)},
          {"defaultConfiguration", {{"level", sarif_level(rule.severity)}}},
          {"properties", {{"tags", {"correctness", "distributed"}}}}};
}

// A location in the repository (uriBaseId %SRCROOT%), or an absolute file
// URI for a file outside it (a framework tree elsewhere).
json physical_location(const ir::SourceLoc &loc) {
  std::string path = repository_path(loc.file);
  json artifact = std::filesystem::path(path).is_absolute()
                      ? json{{"uri", "file://" + path}}
                      : json{{"uri", path}, {"uriBaseId", "%SRCROOT%"}};
  json region = {{"startLine", std::max(loc.line, 1)}};
  if (loc.column >= 1)
    region["startColumn"] = loc.column;
  return {{"artifactLocation", artifact}, {"region", region}};
}

std::string message_text(const checkers::Finding &f) {
  std::string text = f.message;
  for (const auto &line : detail_lines(f))
    text += "\n" + line;
  return text;
}

json result_of(const checkers::Finding &f, const std::string &fingerprint,
               const TargetResult &r) {
  json related = json::array();
  int id = 1;
  for (const auto &note : f.notes)
    related.push_back({{"id", id++},
                       {"physicalLocation", physical_location(note.loc)},
                       {"message", {{"text", note.message}}}});
  const auto rules = checkers::all_rules();
  auto index = std::find_if(rules.begin(), rules.end(),
                            [&](const auto &rule) { return rule.code == f.rule; }) -
               rules.begin();
  json result = {{"ruleId", f.rule_id()},
                 {"ruleIndex", index},
                 {"level", sarif_level(f.severity)},
                 {"message", {{"text", message_text(f)}}},
                 {"locations", {{{"physicalLocation", physical_location(f.loc)}}}},
                 {"partialFingerprints", {{"shardproofFingerprint/v1", fingerprint}}},
                 {"properties",
                  {{"target", r.target.str_with_path(display_path(r.target.path))},
                   {"world", r.world}}}};
  if (!related.empty())
    result["relatedLocations"] = related;
  return result;
}

// Errors and what could not be proved are about the run, not a rule: tool
// notifications, as SARIF has them.
json notifications(const std::vector<TargetResult> &results) {
  json out = json::array();
  for (const auto &r : results) {
    if (r.verdict() == TargetVerdict::Error || r.verdict() == TargetVerdict::Absent) {
      json n = {{"level", r.verdict() == TargetVerdict::Error ? "error" : "note"},
                {"message",
                 {{"text", fmt::format("{}: {}", r.target.str(), r.failure->message)}}}};
      if (!r.failure->loc.file.empty())
        n["locations"] = {{{"physicalLocation", physical_location(r.failure->loc)}}};
      out.push_back(std::move(n));
      continue;
    }
    for (const auto &o : r.obligations)
      if (o.verdict.kind == prover::Verdict::Kind::Unknown)
        out.push_back(
            {{"level", "warning"},
             {"message",
              {{"text", fmt::format("could not prove {}: {}", o.name, o.verdict.why)}}},
             {"locations", {{{"physicalLocation", physical_location(o.loc)}}}}});
  }
  return out;
}
} // namespace

void write_sarif(std::ostream &out, const std::vector<TargetResult> &results) {
  json rules = json::array();
  for (const auto &rule : checkers::all_rules())
    rules.push_back(rule_descriptor(rule));
  json findings = json::array();
  bool ran = true;
  for (const auto &r : results) {
    ran &= r.verdict() != TargetVerdict::Error;
    auto prints = fingerprints(r, r.findings);
    for (std::size_t i = 0; i < r.findings.size(); ++i)
      findings.push_back(result_of(r.findings[i], prints[i], r));
  }
  std::string root = std::filesystem::path(repository_root()).generic_string();
  json run = {{"tool",
               {{"driver",
                 {{"name", "shardproof"},
                  {"version", version()},
                  {"semanticVersion", version()},
                  {"informationUri", SHARDPROOF_HOMEPAGE},
                  {"rules", rules}}}}},
              {"originalUriBaseIds", {{"%SRCROOT%", {{"uri", "file://" + root + "/"}}}}},
              {"columnKind", "unicodeCodePoints"},
              {"invocations",
               {{{"executionSuccessful", ran},
                 {"toolExecutionNotifications", notifications(results)}}}},
              {"results", findings}};
  json doc = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
              {"version", "2.1.0"},
              {"runs", {run}}};
  out << doc.dump(2) << "\n";
}

} // namespace shardproof::analyzer
