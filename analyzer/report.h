// Output formats of `shardproof check`, each rendered here from the typed
// results: compiler-style text, the JSON document of docs/json-output.md,
// SARIF 2.1.0 and GitHub workflow commands (docs/pre-merge.md).
#pragma once

#include "analyzer/session.h"

#include <iosfwd>
#include <vector>

namespace shardproof::analyzer {

void write_text(std::ostream &out, std::ostream &err,
                const std::vector<TargetResult> &results);
void write_json(std::ostream &out, const std::vector<TargetResult> &results);
// SARIF 2.1.0 for code scanning (report_sarif.cpp).
void write_sarif(std::ostream &out, const std::vector<TargetResult> &results);
// GitHub Actions workflow commands: an annotation per finding, error and
// could-not-prove obligation; the targets' verdict lines as plain log lines.
void write_github(std::ostream &out, const std::vector<TargetResult> &results);

// What the text report prints under a finding's message: its example
// (Alive2 style) and further details, line by line.
std::vector<std::string> detail_lines(const checkers::Finding &finding);

// A path as the user would write it: relative to the working directory when
// it lies below it.
std::string display_path(const std::string &path);

} // namespace shardproof::analyzer
