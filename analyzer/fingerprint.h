// Where findings live for tools that outlast one run (SARIF, baselines, a
// pull request's diff): paths relative to the repository, the source line a
// finding is on, and a fingerprint that survives edits elsewhere in the file.
#pragma once

#include "analyzer/session.h"

#include <map>
#include <string>
#include <vector>

namespace shardproof::analyzer {

// The repository the working directory is in (the nearest folder upward
// holding .git), or the working directory itself outside any repository.
std::string repository_root();

// `path` relative to repository_root() when it lies below it, else absolute.
std::string repository_path(const std::string &path);

// Source lines read once per file, for fingerprints and diff placement.
class SourceLines {
public:
  // The text of line `line` (1-based) of `file`; empty when unreadable.
  const std::string &line(const std::string &file, int line);

private:
  std::map<std::string, std::vector<std::string>> files_;
};

// The fingerprints of `findings` of `result`, in order: a hash of the
// rule, the repository-relative file, the finding's source line with its
// whitespace collapsed, the target, and which of identical keys it is (in
// report order). Line numbers are left out, so lines added above a finding
// keep it.
std::vector<std::string> fingerprints(const TargetResult &result,
                                      const std::vector<checkers::Finding> &findings);

} // namespace shardproof::analyzer
