// The one registry of rule codes (ruff-style): id, name, severity, summary
// and help, the help doubling as the rule's documentation page. What a
// check reports is a Finding (finding.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shardproof::checkers {

enum class Severity { Error, Warning, Note };
std::string_view severity_name(Severity severity);

// Every rule, in registry order (SP001 first): a check names the rules it may
// emit by these, so a misspelt rule cannot compile.
enum class RuleCode {
  ForwardMismatch,       // SP001
  MissingReduction,      // SP002
  CollectiveMismatch,    // SP003
  UnmatchedParameter,    // SP004
  WrongScaling,          // SP005
  GradientMismatch,      // SP006
  ReplicaDivergence,     // SP007
  CommDtype,             // SP008
  RngDivergence,         // SP009
  ExpOverflow,           // SP010
  InferredLayout,        // SP011
  KernelMismatch,        // SP012
  MemoryRace,            // SP013
  OutOfBounds,           // SP014
  KernelNotLaunched,     // SP015
  UninitialisedRead,     // SP016
  DivergentBarrier,      // SP017
  CrossRankRace,         // SP018
  UncheckedPrecondition, // SP019
  UndefinedShuffleValue, // SP020
};

struct Rule {
  RuleCode code;
  std::string_view id;   // stable: SP001, ...
  std::string_view name; // kebab-case
  Severity severity;
  std::string_view summary;
  std::string_view help;
};

std::span<const Rule> all_rules();
// Rules that no check reports: the analyzer reports them about a whole run
// (a layout it had to infer) or about a lifted CUDA kernel, not about one
// obligation of a linked program.
std::span<const RuleCode> session_rules();
// The rules a CUDA kernel's check reports (a subset of session_rules).
std::span<const RuleCode> kernel_rules();
const Rule &rule(RuleCode code);
// The rule whose id (SP001) or name (forward-mismatch) is `text`, if any.
const Rule *find_rule(std::string_view text);

// Which rules report, from --select and --ignore (ruff's order: the selected
// rules, every rule when none is, less the ignored ones).
struct RuleSelection {
  std::vector<RuleCode> select;
  std::vector<RuleCode> ignore;
  bool reports(RuleCode code) const;
};

} // namespace shardproof::checkers
