// Runs the built shardproof binary as a user would, capturing its output.
#pragma once

#include <string>
#include <vector>

namespace shardproof::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

CliResult run_cli(const std::vector<std::string> &args);

// Absolute path of a file in the source tree.
std::string source_path(const std::string &relative);

} // namespace shardproof::testing
