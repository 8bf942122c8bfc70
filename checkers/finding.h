// What a check reports, as typed data: the rule, where, why, and for a
// refutation the Example that shows it. The text and JSON reports are
// renderers of this data (analyzer/report.cpp); no check formats an example.
#pragma once

#include "checkers/rules.h"
#include "models/ir/trace.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardproof::checkers {

// Values for which the distributed run and the reference differ (Alive2
// style): minimised inputs, the element compared, the reference's value and
// every rank's.
struct Example {
  struct Input {
    std::string name; // "fc1.bias[7]"
    double value = 0;
  };
  struct RankValue {
    int rank = 0;        // global rank; kSumOverRanks for the ranks' sum
    std::string element; // as that rank indexes its value: "out[0,3]"
    double value = 0;
    std::optional<double> expected; // what it should be, where it differs
  };
  static constexpr int kSumOverRanks = -1;

  int world = 0;
  std::string obligation;    // "forward: 'out' is replicated"
  std::string layout;        // what the value must be: "replicated", ...
  std::vector<Input> inputs; // the nonzero ones: every other input is 0
  std::string element;       // the reference's element: "out[0,3]"
  double reference = 0;      // NaN where it cannot be evaluated
  std::vector<RankValue> ranks;

  // The ranks whose value differs from what it should be, in order.
  std::vector<int> disagreeing_ranks() const {
    std::vector<int> out;
    for (const RankValue &r : ranks)
      if (r.expected && r.rank != kSumOverRanks)
        out.push_back(r.rank);
    return out;
  }
};

struct Finding {
  RuleCode rule{};
  Severity severity = Severity::Error;
  ir::SourceLoc loc;
  std::string message;
  std::optional<Example> example;   // for a refuted equivalence
  std::vector<std::string> details; // further explanation, line by line
  struct Note {
    ir::SourceLoc loc;
    std::string message;
  };
  std::vector<Note> notes; // related places, printed as clang-style notes

  std::string_view rule_id() const { return checkers::rule(rule).id; }
  // A finding of `code` at its rule's default severity.
  static Finding of(RuleCode code, ir::SourceLoc loc, std::string message) {
    return {code, checkers::rule(code).severity, std::move(loc), std::move(message), {},
            {}, {}};
  }
};

} // namespace shardproof::checkers
