// Modular proofs (checkers/lemmas.h): identical layers are proved once, and
// they change no verdict and no finding.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <tuple>

using shardproof::testing::run_cli;

namespace {
constexpr const char *kStack = "tests/benchmarks/layer_stack.py::";

nlohmann::json check_json(const std::string &entry, bool modular) {
  std::vector<std::string> args{"check", kStack + entry, "--world", "2", "--format",
                                "json"};
  if (!modular)
    args.push_back("--no-modular");
  auto r = run_cli(args);
  return nlohmann::json::parse(r.out);
}

std::set<std::tuple<std::string, int, std::string>> findings(const nlohmann::json &doc) {
  std::set<std::tuple<std::string, int, std::string>> out;
  for (const auto &f : doc["findings"])
    out.insert({f["rule_id"].get<std::string>(), f["line"].get<int>(),
                f["message"].get<std::string>()});
  return out;
}
} // namespace

TEST(Modular, IdenticalLayersAreProvedOnce) {
  auto doc = check_json("layers_4", true);
  ASSERT_EQ(doc["verdict"], "proved") << doc.dump(2);
  int memoized = 0, layer_gradients = 0;
  for (const auto &o : doc["targets"][0]["obligations"]) {
    std::string name = o["name"];
    if (o["method"] == "memoized")
      ++memoized;
    // Layers 1-3's parameter gradients are layer 0's up to renaming.
    if (name.starts_with("gradient: 'layers.") && !name.starts_with("gradient: 'layers.0")) {
      ++layer_gradients;
      EXPECT_EQ(o["method"], "memoized") << name;
    }
  }
  EXPECT_EQ(layer_gradients, 12);
  EXPECT_GE(memoized, 12 + 6); // + the layers' forward and backward boundaries
}

TEST(Modular, SameVerdictAndFindingsAsWholeProofs) {
  for (const char *entry : {"layers_2", "layers_3_missing_copy_in_layer_1"}) {
    auto modular = check_json(entry, true), whole = check_json(entry, false);
    EXPECT_EQ(modular["verdict"], whole["verdict"]) << entry;
    EXPECT_EQ(findings(modular), findings(whole)) << entry;
  }
  EXPECT_EQ(check_json("layers_3_missing_copy_in_layer_1", true)["verdict"], "refuted");
}

TEST(Modular, OnlyAWholeObligationIsRefuted) {
  // Module-boundary lemmas are recorded only when proved.
  auto doc = check_json("layers_3_missing_copy_in_layer_1", true);
  for (const auto &o : doc["targets"][0]["obligations"])
    if (std::string(o["name"]).starts_with("module "))
      EXPECT_EQ(o["verdict"], "proved") << o.dump();
}
