// The one registry of rule codes (ruff-style): id, name, severity, summary
// and help, the help doubling as the rule's documentation page.
#pragma once

#include "models/ir/trace.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shardproof::checkers {

enum class Severity { Error, Warning, Note };
std::string_view severity_name(Severity severity);

struct Rule {
  std::string_view id;   // stable: SP001, ...
  std::string_view name; // kebab-case
  Severity severity;
  std::string_view summary;
  std::string_view help;
};

std::span<const Rule> all_rules();
const Rule &rule(std::string_view id); // throws std::out_of_range

struct Finding {
  std::string rule_id;
  Severity severity = Severity::Error;
  ir::SourceLoc loc;
  std::string message;
  std::vector<std::string> details; // the Alive2-style explanation, line by line
  struct Note {
    ir::SourceLoc loc;
    std::string message;
  };
  std::vector<Note> notes; // related places, printed as clang-style notes

  // A finding of `rule_id` at its rule's default severity.
  static Finding of(std::string_view rule_id, ir::SourceLoc loc, std::string message);
};

} // namespace shardproof::checkers
