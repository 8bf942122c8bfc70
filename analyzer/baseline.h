// `--baseline FILE` / `--write-baseline FILE`: the findings a project has
// accepted for now, by fingerprint (analyzer/fingerprint.h), so that only new
// ones fail a pull request.
#pragma once

#include "analyzer/session.h"

#include <set>
#include <string>
#include <vector>

namespace shardproof::analyzer {

// The fingerprints a baseline file lists; throws std::invalid_argument naming
// the file (and line, for bad JSON) when it is not one.
std::set<std::string> read_baseline(const std::string &path);

// The baseline document of every finding of `results` (JSON, one entry per
// finding: fingerprint, rule, file, line, message, target).
std::string baseline_document(const std::vector<TargetResult> &results);

// Moves the findings whose fingerprint `known` lists into the results'
// suppressed findings; returns how many.
std::size_t apply_baseline(std::vector<TargetResult> &results,
                           const std::set<std::string> &known);

} // namespace shardproof::analyzer
