// Runs the built shardproof binary as a user would, capturing its output.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace shardproof::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

CliResult run_cli(const std::vector<std::string> &args);
// The same, run from the folder `dir` (a fixture repository, a config's).
CliResult run_cli_in(const std::string &dir, const std::vector<std::string> &args);

// A file's whole text ("" when it cannot be read), and writing one (its
// folders made first), for tests that build projects of their own.
std::string read_text(const std::string &path);
void write_text(const std::string &path, const std::string &text);

// Absolute path of a file in the source tree.
std::string source_path(const std::string &relative);

// The findings a file of the source tree expects at world size `world`, as
// (rule id, line), from its inline expectations, clang-tidy style:
// `# expect: SP001 SP006` on a line: those findings there at every world
// size; `# expect[w4]: SP005`: only at world 4 (a bug whose factor is
// irrational at one size and rational at another is a mismatch at one and a
// wrong scale at the other).
std::set<std::pair<std::string, int>> inline_expectations(const std::string &file,
                                                          int world);

} // namespace shardproof::testing
