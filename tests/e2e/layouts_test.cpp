// Parameter layouts inferred where the declared ones do not reconcile
// (analyzer/layout_inference.h, rule SP011), on tests/e2e/layouts.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

using shardproof::testing::run_cli;

namespace {
nlohmann::json check(const std::string &entry, int world) {
  auto r = run_cli({"check", "tests/e2e/layouts/swiglu_strides.py::" + entry, "--world",
                    std::to_string(world), "--format", "json"});
  EXPECT_NE(r.exit_code, 2) << r.err;
  return nlohmann::json::parse(r.out);
}
} // namespace

TEST(LayoutInference, ADeclaredStrideIsProvedWithoutAWarning) {
  auto doc = check("declared", 2);
  EXPECT_EQ(doc["verdict"], "proved") << doc.dump(1);
  EXPECT_TRUE(doc["findings"].empty()) << doc.dump(1);
}

TEST(LayoutInference, AnUndeclaredStrideIsProvedUnderTheInferredOneWithAWarning) {
  for (int world : {2, 4}) {
    auto doc = check("undeclared", world);
    EXPECT_EQ(doc["verdict"], "proved") << doc.dump(1);
    std::set<std::string> warned;
    for (const auto &f : doc["findings"]) {
      EXPECT_EQ(f["rule_id"], "SP011");
      EXPECT_EQ(f["severity"], "warning");
      EXPECT_NE(f["message"].get<std::string>().find("(partition_stride 2)"),
                std::string::npos)
          << f["message"];
      EXPECT_EQ(f["file"], "tests/e2e/layouts/swiglu_strides.py");
      std::string message = f["message"];
      auto open = message.find('\'');
      warned.insert(message.substr(open + 1, message.find('\'', open + 1) - open - 1));
    }
    EXPECT_EQ(warned, (std::set<std::string>{"fc1_bias", "fc1_weight"})) << doc.dump(1);
    for (const auto &o : doc["targets"][0]["obligations"])
      if (o["name"].get<std::string>().starts_with("gradient: 'fc1_weight'"))
        EXPECT_NE(o["name"].get<std::string>().find("stride 2"), std::string::npos) << o;
  }
}

// No layout makes a module with a missing all-reduce right: it stays refuted
// (under its declared layout) and no layout is claimed for it.
TEST(LayoutInference, ARealBugStaysRefutedWhateverTheLayout) {
  for (int world : {2, 4}) {
    auto doc = check("undeclared_unreduced", world);
    EXPECT_EQ(doc["verdict"], "refuted") << doc.dump(1);
    EXPECT_FALSE(doc["findings"].empty());
    for (const auto &f : doc["findings"]) {
      EXPECT_NE(f["rule_id"], "SP011") << "a layout was inferred for a buggy module";
      EXPECT_EQ(f["severity"], "error");
    }
  }
}
