// shardproof: proves that distributed training code computes what its
// single-device version computes.
#include "analyzer/report.h"
#include "analyzer/session.h"
#include "checkers/rules.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

using namespace shardproof;

int main(int argc, char **argv) {
  CLI::App app{"shardproof: proves distributed training code equal to its "
               "single-device meaning"};
  app.require_subcommand(1);

  auto *check = app.add_subcommand(
      "check", "Prove FILE.py::FUNC at world size N against world size 1");
  std::vector<std::string> targets;
  int world = 2;
  std::string format = "text";
  double solver_seconds = 10;
  std::size_t solver_memory_mib = 4096;
  check->add_option("targets", targets, "FILE.py::FUNC (FUNC defaults to entry)")
      ->required();
  check->add_option("--world", world, "simulated world size")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  check->add_option("--format", format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  check->add_option("--solver-timeout", solver_seconds,
                    "hard wall-clock limit per solver query, in seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  check->add_option("--solver-memory", solver_memory_mib,
                    "memory limit per solver query, in MiB")
      ->capture_default_str();

  auto *rules = app.add_subcommand("rules", "List every rule with its help");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  if (*rules) {
    for (const auto &r : checkers::all_rules())
      std::cout << fmt::format("{} {} ({})\n  {}\n  {}\n\n", r.id, r.name,
                               checkers::severity_name(r.severity), r.summary,
                               r.help);
    return 0;
  }

  analyzer::SessionOptions options;
  options.world = world;
  options.prover.solver_limits.wall = std::chrono::milliseconds(
      static_cast<long>(solver_seconds * 1000));
  options.prover.solver_limits.memory_bytes = solver_memory_mib << 20;
  std::vector<analyzer::TargetResult> results;
  try {
    for (const auto &t : targets)
      results.push_back(analyzer::check_target(analyzer::parse_target(t), options));
  } catch (const std::exception &e) {
    std::cerr << "shardproof: internal error: " << e.what() << "\n";
    return 2;
  }
  if (format == "json")
    analyzer::write_json(std::cout, results);
  else
    analyzer::write_text(std::cout, std::cerr, results);
  return analyzer::exit_code(results);
}
