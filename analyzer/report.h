// Output formats of `shardproof check`: compiler-style text and the JSON
// document described in docs/json-output.md.
#pragma once

#include "analyzer/session.h"

#include <iosfwd>
#include <vector>

namespace shardproof::analyzer {

void write_text(std::ostream &out, std::ostream &err,
                const std::vector<TargetResult> &results);
void write_json(std::ostream &out, const std::vector<TargetResult> &results);

// What the text report prints under a finding's message: its example
// (Alive2 style) and further details, line by line.
std::vector<std::string> detail_lines(const checkers::Finding &finding);

// A path as the user would write it: relative to the working directory when
// it lies below it.
std::string display_path(const std::string &path);

} // namespace shardproof::analyzer
