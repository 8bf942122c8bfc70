#include "analyzer/cli_premerge.h"

#include "analyzer/baseline.h"
#include "analyzer/outputs.h"
#include "frontend/python/python_frontend.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace shardproof::analyzer {

void add_premerge_options(CLI::App &command, PremergeOptions &options) {
  command
      .add_option("--format", options.formats,
                  "text, json, sarif or github; several comma-separated, each but one "
                  "with its own file: --format github,sarif:shardproof.sarif")
      ->delimiter(',')
      ->type_name("FORMAT[:FILE]");
  command.add_option("--output", options.output,
                     "write the report to FILE (atomically) instead of standard output");
  command.add_option("--baseline", options.baseline,
                     "findings this baseline file lists do not fail the run (they are "
                     "reported as suppressed); new ones do");
  command.add_option("--write-baseline", options.write_baseline,
                     "write every finding of this run to FILE as the baseline");
  command.add_option("--diff", options.diff,
                     "check only the targets whose traced files changed since this git "
                     "commit, and place findings on changed lines");
  command.add_option("--config", options.config_file,
                     "read [tool.shardproof] from this pyproject.toml (default: the "
                     "nearest one upward from the working directory)");
  command.add_flag("--isolated", options.isolated, "read no configuration file");
}

namespace {
// Whether the command line gives `option` (as `--opt V` or `--opt=V`).
bool gives(const std::vector<std::string> &args, const std::string &option) {
  return std::any_of(args.begin(), args.end(), [&](const std::string &a) {
    return a == option || a.starts_with(option + "=");
  });
}

// The value of `option` on the command line, if given.
std::optional<std::string> value_of(const std::vector<std::string> &args,
                                    const std::string &option) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == option && i + 1 < args.size())
      return args[i + 1];
    if (args[i].starts_with(option + "="))
      return args[i].substr(option.size() + 1);
  }
  return std::nullopt;
}
} // namespace

ConfiguredCommandLine configured_command_line(int argc, char **argv) {
  ConfiguredCommandLine out;
  out.args.assign(argv + 1, argv + argc);
  const auto &args = out.args;
  bool runs = !args.empty() && (args[0] == "check" || args[0] == "scan");
  if (!runs || gives(args, "--isolated"))
    return out;
  if (auto file = value_of(args, "--config"))
    out.config = read_config(*file);
  else
    out.config = find_config(std::filesystem::current_path().string());
  if (!out.config)
    return out;
  std::vector<std::string> inserted;
  for (const auto &[option, values] : out.config->options) {
    if (gives(args, option) ||
        (args[0] == "scan" && (option == "--world" || option == "--cuda-path")))
      continue;
    for (const std::string &value : values)
      inserted.insert(inserted.end(), {option, value});
  }
  out.args.insert(out.args.begin() + 1, inserted.begin(), inserted.end());
  return out;
}

std::vector<Target> configured_targets(const Config &config,
                                       const std::string &framework) {
  std::vector<Target> targets;
  for (const std::string &text : config.targets)
    targets.push_back(parse_target(text));
  for (const std::string &launch : config.launches) {
    std::string tree =
        framework.empty() ? frontend::detect_framework(config.framework_root) : framework;
    if (tree.empty())
      throw std::invalid_argument(fmt::format(
          "{}: [tool.shardproof] launches: {} holds neither megatron/core nor deepspeed/",
          config.file, config.framework_root));
    targets.push_back(frontend::launch_target(
        {.root = config.framework_root, .framework = tree, .launch_file = launch}));
  }
  return targets;
}

std::optional<ChangedLines> requested_changes(const PremergeOptions &options) {
  if (!options.diff)
    return std::nullopt;
  return changed_since(*options.diff);
}

int finish_run(std::vector<TargetResult> results, const PremergeOptions &options,
               const std::optional<ChangedLines> &changes, bool scan) {
  auto outputs = report_outputs(options.formats, options.output);
  std::size_t unselected =
      std::erase_if(results, [](const auto &r) { return r.unselected; });
  if (changes)
    std::cerr << fmt::format("shardproof: --diff {}: {} target{} checked, {} unchanged\n",
                             *options.diff, results.size(),
                             results.size() == 1 ? "" : "s", unselected);
  if (options.write_baseline) {
    write_file_atomically(*options.write_baseline, baseline_document(results));
    apply_baseline(results, read_baseline(*options.write_baseline));
  } else if (options.baseline) {
    apply_baseline(results, read_baseline(*options.baseline));
  }
  if (changes)
    place_on_changed_lines(results, *changes);
  write_reports(outputs, results);
  if (scan) // an absent component is what this tree is, not an error
    std::erase_if(results,
                  [](const auto &r) { return r.verdict() == TargetVerdict::Absent; });
  return exit_code(results);
}

} // namespace shardproof::analyzer
