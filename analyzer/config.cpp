#include "analyzer/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <filesystem>
#include <map>
#include <stdexcept>

namespace fs = std::filesystem;

namespace shardproof::analyzer {

namespace {
enum class Kind { String, Strings, Integer, Number, StringOrStrings };

// Each key of [tool.shardproof] that is a command-line option, and its type.
const std::map<std::string, Kind> &option_keys() {
  static const std::map<std::string, Kind> keys{
      {"world", Kind::Integer},          {"timeout", Kind::Number},
      {"trace-timeout", Kind::Number},   {"target-timeout", Kind::Number},
      {"memory", Kind::Integer},         {"max-paths", Kind::Integer},
      {"select", Kind::Strings},         {"ignore", Kind::Strings},
      {"format", Kind::StringOrStrings}, {"python-path", Kind::Strings},
      {"reduce-dtype", Kind::String},    {"baseline", Kind::String},
      {"cuda-path", Kind::String}};
  return keys;
}
// Keys whose values are paths, relative to the file's folder.
bool is_path_key(const std::string &key) {
  return key == "python-path" || key == "baseline" || key == "cuda-path";
}

std::string_view kind_name(Kind kind) {
  switch (kind) {
  case Kind::String:
    return "a string";
  case Kind::Strings:
    return "an array of strings";
  case Kind::Integer:
    return "an integer";
  case Kind::Number:
    return "a number";
  case Kind::StringOrStrings:
    return "a string or an array of strings";
  }
  return "?";
}

std::string_view type_name(const toml::node &node) {
  return node.is_string()           ? "a string"
         : node.is_integer()        ? "an integer"
         : node.is_floating_point() ? "a float"
         : node.is_boolean()        ? "a boolean"
         : node.is_array()          ? "an array"
         : node.is_table()          ? "a table"
                                    : "a date or time";
}

[[noreturn]] void fail(const std::string &file, const toml::node &node,
                       const std::string &what) {
  throw std::invalid_argument(
      fmt::format("{}:{}: [tool.shardproof] {}", file, node.source().begin.line, what));
}

// The value's text(s), checked against `kind`.
std::vector<std::string> values_of(const std::string &file, const std::string &key,
                                   const toml::node &node, Kind kind) {
  if (kind == Kind::Integer && node.is_integer())
    return {std::to_string(*node.value<std::int64_t>())};
  if (kind == Kind::Number && (node.is_integer() || node.is_floating_point()))
    return {fmt::format("{}", *node.value<double>())};
  if ((kind == Kind::String || kind == Kind::StringOrStrings) && node.is_string())
    return {*node.value<std::string>()};
  if ((kind == Kind::Strings || kind == Kind::StringOrStrings) && node.is_array()) {
    std::vector<std::string> out;
    for (const toml::node &item : *node.as_array()) {
      if (!item.is_string())
        fail(file, item, fmt::format("{}: every item must be a string", key));
      out.push_back(*item.value<std::string>());
    }
    return out;
  }
  fail(file, node,
       fmt::format("{}: expected {}, got {}", key, kind_name(kind), type_name(node)));
}

Config config_of(const std::string &file, const toml::table &table) {
  Config config{.file = file};
  fs::path folder = fs::absolute(file).parent_path();
  auto relative = [&](const std::string &path) {
    return fs::path(path).is_absolute() ? path
                                        : (folder / path).lexically_normal().string();
  };
  config.framework_root = folder.string();
  for (const auto &[name, node] : table) {
    std::string key(name.str());
    if (key == "targets" || key == "launches") {
      for (std::string &item : values_of(file, key, node, Kind::Strings))
        (key == "targets" ? config.targets : config.launches).push_back(relative(item));
    } else if (key == "framework-root") {
      config.framework_root = relative(values_of(file, key, node, Kind::String)[0]);
    } else if (auto it = option_keys().find(key); it != option_keys().end()) {
      auto values = values_of(file, key, node, it->second);
      if (is_path_key(key))
        for (auto &v : values)
          v = relative(v);
      config.options.push_back({"--" + key, std::move(values)});
    } else {
      fail(file, node,
           fmt::format("unknown key '{}' (docs/pre-merge.md lists them)", key));
    }
  }
  return config;
}

// The [tool.shardproof] table of `file`, if it has one.
std::optional<Config> parse(const std::string &file) {
  toml::table doc;
  try {
    doc = toml::parse_file(file);
  } catch (const toml::parse_error &e) {
    throw std::invalid_argument(fmt::format("{}:{}:{}: {}", file, e.source().begin.line,
                                            e.source().begin.column, e.description()));
  }
  const toml::node *section = doc.at_path("tool.shardproof").node();
  if (!section)
    return std::nullopt;
  if (!section->is_table())
    throw std::invalid_argument(fmt::format("{}:{}: tool.shardproof must be a table",
                                            file, section->source().begin.line));
  return config_of(file, *section->as_table());
}
} // namespace

std::optional<Config> find_config(const std::string &start) {
  std::error_code ec;
  for (fs::path dir = fs::absolute(start, ec); !dir.empty(); dir = dir.parent_path()) {
    fs::path candidate = dir / "pyproject.toml";
    if (fs::is_regular_file(candidate, ec))
      if (auto config = parse(candidate.string()))
        return config;
    if (dir == dir.root_path())
      break;
  }
  return std::nullopt;
}

Config read_config(const std::string &file) {
  if (!fs::is_regular_file(file))
    throw std::invalid_argument(fmt::format("--config {}: no such file", file));
  auto config = parse(file);
  if (!config)
    throw std::invalid_argument(fmt::format("{}: has no [tool.shardproof] table", file));
  return *config;
}

} // namespace shardproof::analyzer
