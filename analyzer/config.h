// `[tool.shardproof]` in pyproject.toml, found upward from the working
// directory as ruff and mypy find theirs; the command line overrides it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace shardproof::analyzer {

struct Config {
  std::string file; // the pyproject.toml it was read from
  // `targets`: FILE.py::FUNC or FILE.cu, relative to the file's folder.
  std::vector<std::string> targets;
  // `launches`: launch configurations of the framework tree `framework-root`
  // (default: the file's folder), each checked as `check ROOT --launch FILE`.
  std::vector<std::string> launches;
  std::string framework_root;
  // The other keys as command-line options: ("--world", {"4"}), in file order.
  std::vector<std::pair<std::string, std::vector<std::string>>> options;
};

// The nearest pyproject.toml from `start` upward that has a
// [tool.shardproof] table, read; none when there is none. Throws
// std::invalid_argument naming the file and line of what is wrong (bad
// TOML, an unknown key, a value of the wrong type).
std::optional<Config> find_config(const std::string &start);
// The [tool.shardproof] table of `file` (`--config FILE`), with the same errors;
// a file without the table is an error too.
Config read_config(const std::string &file);

} // namespace shardproof::analyzer
