// `--diff BASE`: what changed since BASE in git (committed, staged, in the
// working tree, and files git does not track yet), and the placing of
// findings on changed lines.
#pragma once

#include "analyzer/session.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace shardproof::analyzer {

struct ChangedLines {
  // By absolute path: the changed (added or modified) lines of each file;
  // a new file has every line changed.
  std::map<std::string, std::set<int>> lines;
  std::set<std::string> new_files;

  bool changed(const std::string &file) const;
  bool changed(const std::string &file, int line) const;
  // Whether any of `files` changed.
  bool any_changed(const std::vector<std::string> &files) const;
};

// The changes of the repository around the working directory since `base`;
// throws std::invalid_argument with git's own words when it cannot say
// (not a repository, no such commit).
ChangedLines changed_since(const std::string &base);

// Moves each finding not on a changed line to the first place of its chain
// (its notes: the other rank's call, the parameter, the output) that is,
// keeping where it was as a note; returns how many moved.
std::size_t place_on_changed_lines(std::vector<TargetResult> &results,
                                   const ChangedLines &changes);

} // namespace shardproof::analyzer
