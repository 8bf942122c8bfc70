// The Megatron-LM recipes against a real Megatron-LM tree: the pinned
// megatron-core release ctest installs from the Python Package Index into
// build/frameworks/megatron-core (tests/frameworks/pins.txt, the
// frameworks.install fixture), or the tree MEGATRON_ROOT names:
// MEGATRON_ROOT=/path/to/Megatron-LM ctest -R Megatron. Without either the
// tests fail saying so (only the scan, which checks the newest tree, skips
// without MEGATRON_ROOT). tests/CMakeLists.txt labels the slow ones
// (instantiations named MegatronSlow, the scan, the optimizer).
#include "tests/e2e/framework_trees.h"
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>

using shardproof::testing::run_cli;
using shardproof::testing::use_megatron;

class MegatronRecipes : public ::testing::TestWithParam<const char *> {};

TEST_P(MegatronRecipes, ProvedAtWorldTwo) {
  ASSERT_TRUE(use_megatron());
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

namespace {
// tests/upstream/bugs.toml as JSON (Python's tomllib reads it).
nlohmann::json upstream_bugs() {
  std::string command = "/usr/bin/python3 -c 'import json, sys, tomllib; "
                        "print(json.dumps(tomllib.load(open(sys.argv[1], \"rb\"))))' " +
                        std::string(SHARDPROOF_SOURCE_DIR) + "/tests/upstream/bugs.toml";
  std::string text;
  if (FILE *pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
      text.append(buffer, n);
    pclose(pipe);
  }
  return nlohmann::json::parse(text);
}

// The files of a target's error findings, relative to the tree (those
// outside it whole).
std::vector<std::string> error_files(const nlohmann::json &doc,
                                     const nlohmann::json &target,
                                     const std::string &root) {
  std::vector<std::string> files;
  for (const auto &f : doc["findings"])
    if (f["target"] == target["target"] && f["severity"] == "error") {
      std::string file = f["file"];
      files.push_back(file.starts_with(root + "/") ? file.substr(root.size() + 1) : file);
    }
  return files;
}
} // namespace

// A row is proved or absent, or refuted by a bug of tests/upstream/bugs.toml
// whose file has an error finding; no finding points into shardproof's own
// files. The rows are what the newest tree does (the nightly scan): it runs
// against the tree MEGATRON_ROOT names, not the pinned release, whose tree
// raises in rows that need Transformer Engine (docs/coverage.md).
TEST(MegatronScan, EveryRowIsProvedAbsentOrAKnownUpstreamBug) {
  const char *root = std::getenv("MEGATRON_ROOT");
  if (!root)
    GTEST_SKIP() << "the scan checks the newest tree: set MEGATRON_ROOT to a "
                    "Megatron-LM checkout to run this";
  std::string tree = std::filesystem::canonical(root).string();
  nlohmann::json bugs = upstream_bugs()["bug"];
  auto r = run_cli({"scan", tree, "--recipes", "--format", "json"});
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_FALSE(doc["targets"].empty());
  for (const auto &t : doc["targets"]) {
    if (t["verdict"] == "proved" || t["verdict"] == "absent")
      continue;
    ASSERT_EQ(t["verdict"], "refuted") << t.dump(2);
    auto files = error_files(doc, t, tree);
    bool known = std::any_of(bugs.begin(), bugs.end(), [&](const nlohmann::json &bug) {
      return bug["framework"] == "megatron" &&
             t["target"].get<std::string>().find("::" + bug["recipe"].get<std::string>() +
                                                 " [" + bug["layout"].get<std::string>() +
                                                 "]") != std::string::npos &&
             std::find(files.begin(), files.end(), bug["file"]) != files.end();
    });
    EXPECT_TRUE(known) << "refuted, and not by a bug of tests/upstream/bugs.toml:\n"
                       << t.dump(2);
    for (const auto &file : files)
      EXPECT_EQ(file.find("integrations/"), std::string::npos)
          << "a finding points into shardproof's own recipe: " << file;
  }
}

// Recipes are built from the asked configuration at sizes that scale with it
// (integrations/megatron/recipes.py: Sizes): any degree the tree accepts is
// checked, one it refuses is absent in the tree's own words.
struct Configuration {
  std::vector<std::string> arguments; // after --entry
  std::vector<std::string> expected;  // one of them in the output
};

// The test's name in ctest: the arguments.
void PrintTo(const Configuration &configuration, std::ostream *out) {
  for (std::size_t i = 0; i < configuration.arguments.size(); ++i)
    *out << (i ? " " : "") << configuration.arguments[i];
}

class MegatronConfigurations : public ::testing::TestWithParam<Configuration> {};

TEST_P(MegatronConfigurations, CheckedAtTheirSizesOrRefusedByTheTree) {
  ASSERT_TRUE(use_megatron());
  const char *root = std::getenv("MEGATRON_ROOT");
  std::vector<std::string> args{"check", root, "--framework", "megatron", "--entry"};
  args.insert(args.end(), GetParam().arguments.begin(), GetParam().arguments.end());
  auto r = run_cli(args);
  const auto &expected = GetParam().expected;
  EXPECT_TRUE(std::any_of(
      expected.begin(), expected.end(),
      [&](const std::string &e) { return (r.out + r.err).find(e) != std::string::npos; }))
      << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Megatron, MegatronConfigurations,
    ::testing::Values(
        Configuration{{"transformer_layer", "--tp", "4", "--sp"},
                      {"--world 4: proved ("}},
        Configuration{{"moe_layer_replay", "--tp", "2", "--ep", "2", "--sp"},
                      {"--world 4: proved ("}},
        Configuration{{"vocab_parallel_cross_entropy", "--tp", "4"},
                      {"--world 4: proved ("}},
        // Two pipeline stages of two tensor-parallel ranks each.
        Configuration{{"gpt_model_pp", "--tp", "2", "--pp", "2"},
                      {"--world 4: proved ("}},
        // Fewer key-value groups than tensor-parallel ranks (each rank
        // holds a copy of the one group); trees before core_v0.16.0 (the
        // pinned release among them) refuse it in their TransformerConfig.
        Configuration{{"self_attention", "--tp", "2", "--option", "kv_groups=1"},
                      {"--world 2: proved (",
                       "absent: this tree does not build self_attention() with this "
                       "parallel configuration: ValueError: num_query_groups (1) must be "
                       "a multiple of tensor_model_parallel_size (2)."}},
        // The local attention core has no context parallelism: the tree says so.
        Configuration{{"self_attention", "--tp", "2", "--cp", "2"},
                      {"absent: this tree does not build self_attention() with this "
                       "parallel configuration: AssertionError: Context parallelism is "
                       "only supported by TEDotProductAttention!"}}));

// The whole model at tp=4: minutes on 2 cores (labelled slow).
INSTANTIATE_TEST_SUITE_P(MegatronSlow, MegatronConfigurations,
                         ::testing::Values(Configuration{{"gpt_model", "--tp", "4"},
                                                         {"--world 4: proved ("}}));

// Pipeline parallelism: the tree's GPTModel in two stages (the tied
// embedding on the first, its copy as the output layer on the last), one
// step on 4 micro-batches by the tree's own 1F1B schedule
// (forward_backward_pipelining_without_interleaving) with its
// p2p_communication, and finalize_model_grads, against the same model on one
// device under forward_backward_no_pipelining.
TEST(MegatronPipeline, GptModelInTwoStagesIsProved) {
  ASSERT_TRUE(use_megatron());
  auto r = run_cli(
      {"check", "integrations/megatron/recipes.py::gpt_model_pp", "--world", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("--world 2: proved ("), std::string::npos) << r.out;
  // The stages' parameters were matched to the reference's layers: the last
  // stage's layer 0 is the reference's layer 1, its tied output weight the
  // reference's word embedding.
  EXPECT_NE(
      r.out.find(
          "proved: gradient: 'model.module.decoder.layers.1.mlp.linear_fc2.weight'"),
      std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("proved: gradient: 'model.module.embedding.word_embeddings.weight'"),
      std::string::npos)
      << r.out;
}

// The twin: without finalize_model_grads' all-reduce over the embedding
// group, each stage keeps only its own use's share of the tied weight's
// gradient.
TEST(MegatronPipeline, WithoutTheEmbeddingGradReductionIsRefuted) {
  ASSERT_TRUE(use_megatron());
  auto r = run_cli({"check",
                    "integrations/megatron/recipes.py::"
                    "gpt_model_pp_without_embedding_grad_reduction",
                    "--world", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(
      r.out.find("refuted: gradient: 'model.module.embedding.word_embeddings.weight'"),
      std::string::npos)
      << r.out;
  EXPECT_TRUE(r.out.find("[SP006]") != std::string::npos ||
              r.out.find("[SP007]") != std::string::npos)
      << r.out;
}

// The tree's optimizer (Adam, clipping at 1.0) after the gradient reduction:
// the norm and every stepped parameter. The decision to clip is explored path
// by path, past the 5 minutes exploration gets by default on a busy 2-core
// machine (the MegatronOptimizer tests are labelled slow).
TEST(MegatronOptimizer, TheNormAndTheStepAreProved) {
  ASSERT_TRUE(use_megatron());
  auto r = run_cli({"check", "integrations/megatron/recipes.py::mlp_optimizer", "--world",
                    "2", "--target-timeout", "3600"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": proved ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("proved: grad_norm: the norm is replicated"), std::string::npos)
      << r.out;
}

// The optimizer's gradient norm: counting the replicated bias on every
// tensor-parallel rank makes the norm, the clipping and so the step wrong.
TEST(MegatronOptimizer, ANormCountingDuplicatesIsRefuted) {
  ASSERT_TRUE(use_megatron());
  // The refutation's queries take longer than the default 20 s beside
  // other tests on 2 cores.
  auto r = run_cli(
      {"check", "integrations/megatron/recipes.py::mlp_optimizer_norm_with_duplicates",
       "--world", "2", "--timeout", "120"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("refuted: grad_norm: the norm is replicated"), std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("the gradient norm differs from the single-device reference [SP006]"),
      std::string::npos)
      << r.out;
}
