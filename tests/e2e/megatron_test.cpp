// The Megatron-LM recipes against a real Megatron-LM tree, when the machine
// has one: MEGATRON_ROOT=/path/to/Megatron-LM ctest -R Megatron. Skipped (and
// reported as skipped) otherwise: CI has no network to fetch the tree.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

using shardproof::testing::run_cli;

class MegatronRecipes : public ::testing::TestWithParam<const char *> {};

TEST_P(MegatronRecipes, ProvedAtWorldTwo) {
  if (!std::getenv("MEGATRON_ROOT"))
    GTEST_SKIP() << "set MEGATRON_ROOT to a Megatron-LM checkout to run this";
  auto r =
      run_cli({"check", std::string("integrations/megatron/recipes.py::") + GetParam(),
               "--world", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": proved ("), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Megatron, MegatronRecipes,
    ::testing::Values("column_parallel_linear", "column_parallel_linear_sp",
                      "row_parallel_linear", "row_parallel_linear_sp",
                      "vocab_parallel_embedding", "mlp", "mlp_swiglu", "mlp_ddp",
                      "mlp_dp", "vocab_parallel_cross_entropy",
                      "vocab_parallel_cross_entropy_sp", "self_attention",
                      "self_attention_sp", "transformer_layer", "transformer_layer_sp",
                      "gpt_model", "gpt_model_sp", "moe_layer_replay",
                      "moe_layer_replay_allgather"));

TEST(MegatronScan, EveryRecipeOfTheTableIsProvedOrAbsent) {
  const char *root = std::getenv("MEGATRON_ROOT");
  if (!root)
    GTEST_SKIP() << "set MEGATRON_ROOT to a Megatron-LM checkout to run this";
  auto r = run_cli({"scan", root, "--format", "json"});
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_FALSE(doc["targets"].empty());
  for (const auto &t : doc["targets"])
    EXPECT_TRUE(t["verdict"] == "proved" || t["verdict"] == "absent") << t.dump(2);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}
