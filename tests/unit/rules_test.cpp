// The rule registry and the checks' declarations of what they report.
#include "checkers/check.h"
#include "checkers/rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

using namespace shardproof::checkers;

TEST(Rules, EveryRuleIsFoundByItsIdAndItsName) {
  for (const Rule &r : all_rules()) {
    EXPECT_EQ(&rule(r.code), &r);
    EXPECT_EQ(find_rule(r.id), &r);
    EXPECT_EQ(find_rule(r.name), &r);
  }
  EXPECT_EQ(find_rule("SP999"), nullptr);
  EXPECT_EQ(find_rule(""), nullptr);
}

// A rule neither a check nor the session may report is dead documentation; two checks of one name
// could not be told apart in a report.
TEST(Rules, EveryRuleIsDeclaredByACheckAndCheckNamesAreUnique) {
  std::set<RuleCode> declared;
  std::set<std::string> names;
  CheckOptions options;
  options.reduce_dtype = shardproof::ir::DType::Float32;
  for (const auto &check : make_checks(options)) {
    EXPECT_TRUE(names.insert(std::string(check->name())).second) << check->name();
    for (RuleCode code : check->rules())
      declared.insert(code);
  }
  for (RuleCode code : session_rules())
    EXPECT_TRUE(declared.insert(code).second)
        << rule(code).id << " is reported by a check and by the session";
  for (const Rule &r : all_rules())
    EXPECT_TRUE(declared.count(r.code)) << r.id << " is reported by no check";
}

TEST(Rules, SelectionSelectsThenIgnores) {
  RuleSelection every;
  EXPECT_TRUE(every.reports(RuleCode::ForwardMismatch));
  RuleSelection some{{RuleCode::MissingReduction, RuleCode::WrongScaling},
                     {RuleCode::WrongScaling}};
  EXPECT_TRUE(some.reports(RuleCode::MissingReduction));
  EXPECT_FALSE(some.reports(RuleCode::WrongScaling));
  EXPECT_FALSE(some.reports(RuleCode::ForwardMismatch));
  RuleSelection ignoring{{}, {RuleCode::ExpOverflow}};
  EXPECT_FALSE(ignoring.reports(RuleCode::ExpOverflow));
  EXPECT_TRUE(ignoring.reports(RuleCode::CommDtype));
}
