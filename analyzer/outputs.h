// Where reports go: `--format NAME[:FILE]` (several, comma-separated) and
// `--output FILE`, each file written atomically.
#pragma once

#include "analyzer/session.h"

#include <optional>
#include <string>
#include <vector>

namespace shardproof::analyzer {

struct ReportOutput {
  std::string format;              // text, json, sarif or github
  std::optional<std::string> file; // none: standard output
};

// The outputs `--format` items and `--output` ask for; throws
// std::invalid_argument naming what is wrong (an unknown format, two
// formats on standard output).
std::vector<ReportOutput> report_outputs(const std::vector<std::string> &formats,
                                         const std::optional<std::string> &output);

// The names --format takes, for its help and checks.
const std::vector<std::string> &report_formats();

// Renders every output; files are written atomically (a temporary file in
// the same folder, renamed over the target), so a reader never sees half a
// report. Throws std::runtime_error naming a file that could not be written.
void write_reports(const std::vector<ReportOutput> &outputs,
                   const std::vector<TargetResult> &results);

// Writes `content` to `path` atomically (see write_reports).
void write_file_atomically(const std::string &path, const std::string &content);

} // namespace shardproof::analyzer
