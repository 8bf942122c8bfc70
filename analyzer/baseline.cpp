#include "analyzer/baseline.h"

#include "analyzer/fingerprint.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace shardproof::analyzer {

namespace {
constexpr int kBaselineVersion = 1;
}

std::set<std::string> read_baseline(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument(fmt::format("--baseline {}: cannot be read", path));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error &e) {
    // nlohmann's message says "at line L, column C".
    throw std::invalid_argument(fmt::format("{}: not a baseline: {}", path, e.what()));
  }
  if (!doc.is_object() || doc.value("shardproof_baseline", 0) != kBaselineVersion ||
      !doc.contains("findings") || !doc["findings"].is_array())
    throw std::invalid_argument(fmt::format(
        "{}: not a shardproof baseline (write one with --write-baseline)", path));
  std::set<std::string> known;
  for (const auto &entry : doc["findings"]) {
    if (!entry.is_object() || !entry.contains("fingerprint") ||
        !entry["fingerprint"].is_string())
      throw std::invalid_argument(
          fmt::format("{}: finding {} has no fingerprint", path, known.size() + 1));
    known.insert(entry["fingerprint"].get<std::string>());
  }
  return known;
}

std::string baseline_document(const std::vector<TargetResult> &results) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto &r : results) {
    auto prints = fingerprints(r, r.findings);
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      const auto &f = r.findings[i];
      findings.push_back(
          {{"fingerprint", prints[i]},
           {"rule_id", f.rule_id()},
           {"file", repository_path(f.loc.file)},
           {"line", f.loc.line},
           {"message", f.message},
           {"target", r.target.str_with_path(repository_path(r.target.path))}});
    }
  }
  nlohmann::json doc = {{"shardproof_baseline", kBaselineVersion},
                        {"findings", findings}};
  return doc.dump(2) + "\n";
}

std::size_t apply_baseline(std::vector<TargetResult> &results,
                           const std::set<std::string> &known) {
  std::size_t matched = 0;
  for (auto &r : results) {
    auto prints = fingerprints(r, r.findings);
    std::vector<checkers::Finding> kept;
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      bool is_known = known.contains(prints[i]);
      matched += is_known;
      (is_known ? r.suppressed : kept).push_back(std::move(r.findings[i]));
    }
    r.findings = std::move(kept);
  }
  return matched;
}

} // namespace shardproof::analyzer
