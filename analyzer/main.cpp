// shardproof: proves that distributed training code computes what its
// single-device version computes.
#include "analyzer/cli_premerge.h"
#include "analyzer/extensions.h"
#include "analyzer/kernel_check.h"
#include "analyzer/outputs.h"
#include "analyzer/progress.h"
#include "analyzer/report.h"
#include "analyzer/session.h"
#include "analyzer/version.h"
#include "checkers/rules.h"
#include "frontend/python/python_frontend.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>

using namespace shardproof;

namespace {
// Rule ids (SP001) or names (forward-mismatch) as codes; nullopt after
// saying which one is unknown.
std::optional<std::vector<checkers::RuleCode>>
rule_codes(const std::vector<std::string> &texts) {
  std::vector<checkers::RuleCode> codes;
  for (const auto &text : texts) {
    const checkers::Rule *r = checkers::find_rule(text);
    if (!r) {
      std::cerr << "shardproof: unknown rule " << text
                << " (`shardproof rules` lists them)\n";
      return std::nullopt;
    }
    codes.push_back(r->code);
  }
  return codes;
}

// `check ROOT --launch FILE`: the tree and its framework (found from its
// folders unless --framework says); nullopt after saying what is wrong.
std::optional<frontend::LaunchRequest>
launch_request(const std::vector<std::string> &targets, std::string framework,
               const std::string &launch_file, const std::string &entry, int world) {
  if (targets.size() != 1) {
    std::cerr << "shardproof: --launch takes one ROOT, the framework tree\n";
    return std::nullopt;
  }
  if (framework.empty())
    framework = frontend::detect_framework(targets[0]);
  if (framework.empty()) {
    std::cerr << "shardproof: " << targets[0]
              << " holds neither megatron/core nor deepspeed/: pass --framework\n";
    return std::nullopt;
  }
  return frontend::LaunchRequest{.root = targets[0],
                                 .framework = framework,
                                 .launch_file = launch_file,
                                 .model_entry = entry,
                                 .world = world};
}

// `scan ROOT --launches`: a target per launch configuration the tree ships
// (those whose path contains one of `matches`, when given); a configuration
// that cannot be planned is its own error row.
std::vector<analyzer::Target> launch_rows(const std::string &root,
                                          const std::string &framework,
                                          const std::vector<std::string> &matches,
                                          std::vector<analyzer::TargetResult> &failed) {
  std::vector<analyzer::Target> rows;
  for (const std::string &file : frontend::launch_files(root, framework)) {
    if (!matches.empty() &&
        std::none_of(matches.begin(), matches.end(), [&](const std::string &m) {
          return file.find(m) != std::string::npos;
        }))
      continue;
    try {
      rows.push_back(frontend::launch_target(
          {.root = root, .framework = framework, .launch_file = file}));
    } catch (const std::invalid_argument &e) {
      analyzer::TargetResult row;
      row.target = analyzer::Target{.path = file, .function = "launch"};
      row.failure = frontend::TraceFailure{.kind = frontend::TraceFailure::Kind::BadInput,
                                           .loc = {.file = file},
                                           .message = e.what()};
      failed.push_back(std::move(row));
    }
  }
  return rows;
}

// Whether a scan of the tree runs its launch configurations (it ships some)
// rather than the recipes; says so on stderr when it ships none.
bool ships_launches(const std::string &root, const std::string &framework) {
  try {
    if (!frontend::launch_files(root, framework).empty())
      return true;
    std::cerr << "shardproof: " << root
              << " ships no launch configurations: scanning the recipes\n";
  } catch (const std::exception &e) {
    std::cerr << "shardproof: " << e.what() << ": scanning the recipes\n";
  }
  return false;
}

// --format of `bindings` (check and scan take the pre-merge formats too).
void add_format_option(CLI::App &command, std::string &format) {
  command.add_option("--format", format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}
} // namespace

int main(int argc, char **argv) {
  CLI::App app{"shardproof: proves distributed training code equal to its "
               "single-device meaning"};
  app.require_subcommand(1);
  app.set_version_flag("--version", analyzer::version_report());

  auto *check = app.add_subcommand(
      "check", "Prove FILE.py::FUNC at world size N against world size 1, or the "
               "annotated kernels of FILE.cu against their PyTorch reference");
  auto *scan = app.add_subcommand(
      "scan", "Check every recipe that applies to a framework tree, over its "
              "default layouts (docs/coverage.md)");
  std::vector<std::string> targets;
  int world = 2;
  std::string format = "text";
  double proof_seconds = 20;
  std::size_t proof_memory_mib = 4096;
  std::string reduce_dtype;
  double trace_seconds = 120;
  std::optional<double> target_seconds;
  int max_paths = analyzer::SessionOptions{}.max_paths;
  bool whole_program = false;
  std::vector<std::string> selected, ignored, python_path;
  check->add_option(
      "targets", targets,
      "FILE.py::FUNC (FUNC defaults to entry), or FILE.cu (every annotated "
      "kernel launch); default: pyproject.toml's [tool.shardproof] targets");
  std::optional<std::string> cuda_path;
  check
      ->add_option("--cuda-path", cuda_path,
                   "parse .cu files, and the sources of extensions the analysed code "
                   "loads, with this CUDA toolkit's headers (default: shardproof's own "
                   "header set, no toolkit needed)")
      ->check(CLI::ExistingDirectory);
  check->add_option("--world", world, "simulated world size")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  std::string scan_root;
  scan->add_option("root", scan_root, "the framework checkout")->required();
  // Options of every run, whether of the user's files or of recipes.
  analyzer::PremergeOptions premerge;
  for (auto *command : {check, scan}) {
    analyzer::add_premerge_options(*command, premerge);
    command
        ->add_option("--timeout", proof_seconds,
                     "hard wall-clock limit per obligation, in seconds")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    command
        ->add_option("--memory", proof_memory_mib, "memory limit per obligation, in MiB")
        ->check(CLI::Range(64, 1 << 20))
        ->capture_default_str();
    command
        ->add_option("--reduce-dtype", reduce_dtype,
                     "precision reductions must use (float32 flags 16-bit reductions)")
        ->check(CLI::IsMember({"float32", "float64", "bfloat16", "float16"}));
    command
        ->add_option("--trace-timeout", trace_seconds,
                     "limit on running the user's code, per simulated rank, in seconds")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    command
        ->add_option("--target-timeout", target_seconds,
                     "wall-clock budget per target (a scan's row), tracing included; "
                     "obligations left when it is spent are 'could not prove'; it "
                     "also bounds the exploration of value-dependent paths, 5 minutes "
                     "without it (default: none for check, 300 for scan)")
        ->check(CLI::PositiveNumber);
    command
        ->add_option("--max-paths", max_paths,
                     "the most value-dependent paths (routings of the tokens, "
                     "branches) explored per target; past it the verdict is 'could "
                     "not prove', naming the bound")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    command
        ->add_option("--python-path", python_path,
                     "folders the analysed code imports its dependencies from "
                     "(':'-separated; a virtual environment's site-packages is added "
                     "when VIRTUAL_ENV is set)")
        ->type_name("DIRS");
    command->add_flag("--no-modular", whole_program,
                      "prove every obligation whole, without module-boundary lemmas");
    command
        ->add_option("--select", selected,
                     "report only these rules (ids or names, comma-separated)")
        ->delimiter(',');
    command
        ->add_option("--ignore", ignored,
                     "do not report these rules; their refutations make the verdict "
                     "'accepted', never 'proved'")
        ->delimiter(',');
  }

  // Recipes: `check ROOT --framework megatron --entry mlp --tp 2 --dp 2 [--sp]`
  // checks a component of the framework tree at ROOT (see docs/coverage.md).
  std::string framework, recipe;
  std::map<std::string, int> axes{{"tp", 0}, {"cp", 0}, {"ep", 0}, {"dp", 0}, {"pp", 0}};
  bool sequence_parallel = false;
  for (auto *command : {check, scan})
    command
        ->add_option("--framework", framework,
                     "the framework of the tree (scan: found from its folders)")
        ->check(CLI::IsMember({"megatron", "deepspeed"}));
  check->add_option("--entry", recipe,
                    "the recipe to build (with --framework); with --launch, the "
                    "user's model builder FILE.py::FUNC (DeepSpeed) or the entry "
                    "script in the tree (Megatron, default: found from the launch)");
  std::string launch_file;
  check
      ->add_option("--launch", launch_file,
                   "check the training step this launch configuration runs, built by "
                   "the framework tree ROOT (docs/launch.md): a Megatron "
                   "model_config.yaml, arguments file or launch script, or a DeepSpeed "
                   "JSON config with --entry MODEL.py::FUNC")
      ->check(CLI::ExistingFile);
  for (auto &[axis, size] : axes)
    check->add_option("--" + axis, size, axis + " parallel size (with --framework)")
        ->check(CLI::Range(1, 64));
  check->add_flag("--sp", sequence_parallel,
                  "sequence parallelism on (with --framework)");
  std::vector<std::string> recipe_options;
  check
      ->add_option("--option", recipe_options,
                   "a model option of the recipe, NAME=VALUE (with --framework; "
                   "`scan ROOT --list` shows each recipe's)")
      ->type_name("NAME=VALUE");
  bool scan_launches = false, scan_recipes = false;
  scan->add_flag("--launches", scan_launches,
                 "run the launch configurations the tree ships (Megatron's "
                 "functional-test model_config.yaml files, docs/launch.md), one row per "
                 "configuration: the default where the tree ships any");
  scan->add_flag("--recipes", scan_recipes,
                 "run the recipes (components at their layouts, docs/coverage.md) "
                 "instead of the tree's launch configurations: the default where it "
                 "ships none")
      ->excludes("--launches");
  std::vector<std::string> launch_matches;
  scan->add_option("--match", launch_matches,
                   "with --launches: only the configurations whose path contains one "
                   "of these (comma-separated)")
      ->delimiter(',');
  bool list_only = false;
  scan->add_flag("--list", list_only,
                 "print the (recipe, layout and options) rows the scan runs, and stop");

  auto *bindings = app.add_subcommand(
      "bindings", "List the functions PyTorch extensions expose to Python (pybind11, "
                  "TORCH_LIBRARY) and the CUDA kernels each runs");
  std::vector<std::string> extension_paths;
  bindings
      ->add_option("paths", extension_paths,
                   "the extension's sources: files, or folders searched for .cpp, .cc, "
                   ".cu and .cuh")
      ->required()
      ->check(CLI::ExistingPath);
  bindings->add_option("--cuda-path", cuda_path, "parse with this CUDA toolkit's headers")
      ->check(CLI::ExistingDirectory);
  add_format_option(*bindings, format);

  auto *rules = app.add_subcommand("rules", "List every rule with its help");
  bool markdown = false;
  std::vector<std::string> rule_ids;
  rules->add_option("ids", rule_ids,
                    "only these rules (ids or names: SP001, forward-mismatch)");
  rules->add_flag("--markdown", markdown, "as markdown (docs/rules.md)");

  analyzer::ConfiguredCommandLine command_line;
  try {
    command_line = analyzer::configured_command_line(argc, argv);
    std::vector<std::string> reversed(command_line.args.rbegin(),
                                      command_line.args.rend());
    app.parse(reversed); // CLI11 takes a vector last argument first
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const std::invalid_argument &e) { // the config file
    std::cerr << "shardproof: " << e.what() << "\n";
    return 2;
  }

  if (*bindings) {
    auto listing = analyzer::list_extensions(extension_paths, {.cuda_path = cuda_path});
    std::cout << analyzer::render_extensions(listing, format == "json");
    return listing.errors.empty() ? 0 : 2;
  }

  if (*rules) {
    auto listed = rule_codes(rule_ids);
    if (!listed)
      return 2;
    if (markdown && rule_ids.empty())
      std::cout << "# Rules\n\nGenerated by `shardproof rules --markdown` from "
                   "the registry in checkers/rules.cpp; a test keeps it current.\n";
    for (const auto &r : checkers::all_rules())
      if (listed->empty() ||
          std::find(listed->begin(), listed->end(), r.code) != listed->end())
        std::cout << (markdown
                          ? fmt::format("\n## {} {}\n\nDefault severity: {}.\n\n"
                                        "{}\n\n{}\n",
                                        r.id, r.name, checkers::severity_name(r.severity),
                                        r.summary, r.help)
                          : fmt::format("{} {} ({})\n  {}\n  {}\n\n", r.id, r.name,
                                        checkers::severity_name(r.severity), r.summary,
                                        r.help));
    return 0;
  }

  frontend::RecipeRequest request{.framework = framework,
                                  .entry = recipe,
                                  .axes = axes,
                                  .sequence_parallel = sequence_parallel,
                                  .options = recipe_options};
  if (*scan) {
    if (request.framework.empty())
      request.framework = frontend::detect_framework(scan_root);
    if (request.framework.empty()) {
      std::cerr << "shardproof: " << scan_root
                << " holds neither megatron/core nor deepspeed/: pass --framework\n";
      return 2;
    }
    targets = {scan_root};
  }
  std::vector<analyzer::Target> runs;
  std::vector<analyzer::TargetResult> failed_plans; // scan --launches rows not runnable
  if (!launch_file.empty()) {
    auto launch = launch_request(targets, request.framework, launch_file, recipe,
                                 check->count("--world") ? world : 0);
    if (!launch)
      return 2;
    if (request.layout_given()) {
      std::cerr << "shardproof: --launch takes its parallel sizes from the launch; "
                   "--tp, --cp, --ep, --dp, --pp, --sp and --option do not apply\n";
      return 2;
    }
    try {
      runs.push_back(frontend::launch_target(*launch));
    } catch (const std::exception &e) {
      std::cerr << "shardproof: " << e.what() << "\n";
      return 2;
    }
  } else if (!request.framework.empty()) {
    if (targets.size() != 1 || (*check && recipe.empty())) {
      std::cerr << "shardproof: --framework takes one ROOT and an --entry\n";
      return 2;
    }
    request.root = targets[0];
    try {
      if (*scan && !scan_launches && !scan_recipes)
        scan_launches = ships_launches(request.root, request.framework);
      if (*scan && scan_launches)
        runs = launch_rows(request.root, request.framework, launch_matches, failed_plans);
      else if (*scan)
        runs = frontend::scan_targets(request.root, request.framework);
      else
        runs.push_back(frontend::recipe_target(request));
    } catch (const std::exception &e) {
      std::cerr << "shardproof: " << e.what() << "\n";
      return 2;
    }
  } else if (!recipe.empty() || request.layout_given()) {
    std::cerr << "shardproof: --entry, --tp, --cp, --ep, --dp, --pp, --sp and --option "
                 "go with --framework\n";
    return 2;
  } else if (!targets.empty()) {
    for (const auto &t : targets)
      runs.push_back(analyzer::parse_target(t));
  } else if (command_line.config) {
    try {
      runs = analyzer::configured_targets(*command_line.config, request.framework);
    } catch (const std::exception &e) {
      std::cerr << "shardproof: " << e.what() << "\n";
      return 2;
    }
  }
  if (runs.empty() && failed_plans.empty()) {
    std::cerr << "shardproof: nothing to check: name targets, or list them as `targets` "
                 "in pyproject.toml's [tool.shardproof] (docs/pre-merge.md)\n";
    return 2;
  }

  if (list_only) {
    for (const auto &run : runs)
      std::cout << (run.launch.empty()
                        ? fmt::format("{} [{}]\n", run.function, run.layout)
                        : fmt::format("{}\n  {}\n",
                                      run.environment.at("SHARDPROOF_LAUNCH"),
                                      run.launch));
    for (const auto &failed : failed_plans)
      std::cout << fmt::format("{}\n  {}\n", failed.target.path, failed.failure->message);
    return 0;
  }

  analyzer::SessionOptions options;
  auto select = rule_codes(selected), ignore = rule_codes(ignored);
  if (!select || !ignore)
    return 2;
  options.rules = {*select, *ignore};
  options.prover.limits.wall =
      std::chrono::milliseconds(static_cast<long>(proof_seconds * 1000));
  options.prover.limits.memory_bytes = proof_memory_mib << 20;
  options.checks.modular = !whole_program;
  if (!reduce_dtype.empty())
    options.checks.reduce_dtype = ir::dtype_from_name(reduce_dtype);
  options.trace_time_limit =
      std::chrono::milliseconds(static_cast<long>(trace_seconds * 1000));
  options.world = world;
  options.max_paths = max_paths;
  options.cuda_path = cuda_path;
  // A nightly scan must finish: one row's slow proofs may not hold up the rest.
  if (!target_seconds && *scan)
    target_seconds = scan_launches ? 600 : 300;
  if (target_seconds)
    options.target_time_limit =
        std::chrono::milliseconds(static_cast<long>(*target_seconds * 1000));
  try {
    options.python_path =
        frontend::user_python_path(python_path, std::getenv("VIRTUAL_ENV"));
  } catch (const std::invalid_argument &e) {
    std::cerr << "shardproof: " << e.what() << "\n";
    return 2;
  }
  std::optional<analyzer::ChangedLines> changes;
  try {
    analyzer::report_outputs(premerge.formats, premerge.output); // checked before the run
    changes = analyzer::requested_changes(premerge);
  } catch (const std::invalid_argument &e) {
    std::cerr << "shardproof: " << e.what() << "\n";
    return 2;
  }
  if (changes)
    options.selects = [&](const std::vector<std::string> &files) {
      return changes->any_changed(files);
    };
  analyzer::Progress progress(analyzer::Progress::stderr_is_terminal());
  options.on_proof = [&] { progress.obligation_done(); };
  // An internal error in one target is that target's error: the others (a
  // scan's rows) are still checked and reported.
  std::vector<analyzer::TargetResult> results = std::move(failed_plans);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto &run = runs[i];
    progress.start_target(i, runs.size(),
                          run.str_with_path(analyzer::display_path(run.path)));
    try {
      if (changes && analyzer::is_cuda_target(run) && !changes->changed(run.path))
        continue;
      if (analyzer::is_cuda_target(run)) {
        auto kernels = analyzer::check_kernels(run, options, {.cuda_path = cuda_path});
        std::move(kernels.begin(), kernels.end(), std::back_inserter(results));
        continue;
      }
      results.push_back(analyzer::check_target(run, options));
      progress.finish_target(results.back().obligations.size());
    } catch (const std::exception &e) {
      results.push_back(analyzer::internal_error(run, options, e.what()));
    }
  }
  progress.clear();
  try {
    return analyzer::finish_run(std::move(results), premerge, changes,
                                static_cast<bool>(*scan));
  } catch (const std::exception &e) { // a baseline or report file
    std::cerr << "shardproof: " << e.what() << "\n";
    return 2;
  }
}
