// The command line's pre-merge part (docs/pre-merge.md): the config file,
// output formats and files, the baseline and the diff. main.cpp runs the
// targets; what comes before and after is here.
#pragma once

#include "analyzer/config.h"
#include "analyzer/diff.h"
#include "analyzer/session.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace shardproof::analyzer {

struct PremergeOptions {
  std::vector<std::string> formats; // --format NAME[:FILE], ...
  std::optional<std::string> output, baseline, write_baseline, diff;
  std::optional<std::string> config_file; // --config
  bool isolated = false;                  // --isolated: no config file
};

// Adds --format, --output, --baseline, --write-baseline, --diff, --config
// and --isolated to `command`.
void add_premerge_options(CLI::App &command, PremergeOptions &options);

// The command line with [tool.shardproof]'s options put in after the
// subcommand, for each option the command line does not give (it
// overrides), and the config read; throws std::invalid_argument naming the
// config file and line of what is wrong.
struct ConfiguredCommandLine {
  std::vector<std::string> args; // without the program name
  std::optional<Config> config;
};
ConfiguredCommandLine configured_command_line(int argc, char **argv);

// The targets [tool.shardproof] names (targets, then launches), for a
// `check` given none on the command line.
std::vector<Target> configured_targets(const Config &config,
                                       const std::string &framework);

// What --diff BASE changed, when asked; throws std::invalid_argument.
std::optional<ChangedLines> requested_changes(const PremergeOptions &options);

// After the targets ran: drops those --diff left out, applies and writes
// baselines, places findings on changed lines, writes every report; returns
// the exit code. `scan`: an absent component is no error.
int finish_run(std::vector<TargetResult> results, const PremergeOptions &options,
               const std::optional<ChangedLines> &changes, bool scan);

} // namespace shardproof::analyzer
