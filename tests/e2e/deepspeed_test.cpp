// The DeepSpeed recipes against a real DeepSpeed tree: the pinned deepspeed
// release ctest installs from the Python Package Index into
// build/frameworks/deepspeed, with pydantic 2 in build/frameworks/deepspeed-deps
// (tests/frameworks/pins.txt, the frameworks.install fixture), or the tree
// DEEPSPEED_ROOT names: DEEPSPEED_ROOT=/path/to/DeepSpeed ctest -R DeepSpeed
// (and, for trees that need pydantic 2, DEEPSPEED_PYTHON_PATH=<a folder that
// holds it>, build/frameworks/deepspeed-deps for one). Without either the
// tests fail saying so; they never skip. tests/CMakeLists.txt labels the slow
// ones (instantiations named DeepSpeedSlow).
#include "tests/e2e/framework_trees.h"
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

using shardproof::testing::run_cli;
using shardproof::testing::use_deepspeed;

namespace {
std::vector<std::string> deepspeed_check(const std::string &entry,
                                         std::vector<std::string> layout) {
  std::vector<std::string> args{"check",       std::getenv("DEEPSPEED_ROOT"),
                                "--framework", "deepspeed",
                                "--entry",     entry};
  args.insert(args.end(), layout.begin(), layout.end());
  if (const char *path = std::getenv("DEEPSPEED_PYTHON_PATH"))
    args.insert(args.end(), {"--python-path", path});
  return args;
}

// moe_engine at tp 1 x dp 2 with `options` is proved, with each of `lines`.
void expect_moe_engine_proved(std::vector<std::string> options,
                              const std::vector<std::string> &lines) {
  ASSERT_TRUE(use_deepspeed());
  std::vector<std::string> layout{"--tp", "1", "--dp", "2"};
  for (std::string &option : options)
    layout.insert(layout.end(), {"--option", std::move(option)});
  auto r = run_cli(deepspeed_check("moe_engine", layout));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const std::string &line : lines)
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}
} // namespace

class DeepSpeedMoeEngine : public ::testing::TestWithParam<const char *> {};

// Both experts on every rank: the engine's reduction of the gate's and the
// experts' gradients at each ZeRO stage (stage 1 and 2 re-point every
// weight at its view of the optimizer's flat buffer while it is built).
TEST_P(DeepSpeedMoeEngine, ProvedWithDataParallelExperts) {
  expect_moe_engine_proved(
      {GetParam()},
      {": proved (", "proved: gradient: "
                     "'module.moe.deepspeed_moe.experts.deepspeed_experts.0.weight'"});
}

INSTANTIATE_TEST_SUITE_P(DeepSpeed, DeepSpeedMoeEngine,
                         ::testing::Values("stage=0", "stage=1", "stage=2"));

class DeepSpeedClippedMoeEngine : public ::testing::TestWithParam<const char *> {};

// gradient_clipping 1.0: the norm each ZeRO stage clips by (ZeRO 0's
// clip_grad_norm_, ZeRO 1/2's partitioned norm with the expert group's
// norms averaged over its ranks and squared back) and the stepped weights.
TEST_P(DeepSpeedClippedMoeEngine, TheNormAndTheStepAreProvedWithDataParallelExperts) {
  expect_moe_engine_proved(
      {"clip=1", GetParam()},
      {"proved: grad_norm: the norm is replicated",
       "proved: step: 'module.moe.deepspeed_moe.experts.deepspeed_experts.0.weight'"});
}

INSTANTIATE_TEST_SUITE_P(DeepSpeed, DeepSpeedClippedMoeEngine,
                         ::testing::Values("stage=0", "stage=1", "stage=2"));

namespace {
// pipeline_engine at `layout` with `options`: its exit code, with each of
// `lines` in the output.
void expect_pipeline_engine(std::vector<std::string> layout,
                            std::vector<std::string> options, int exit_code,
                            const std::vector<std::string> &lines) {
  ASSERT_TRUE(use_deepspeed());
  for (std::string &option : options)
    layout.insert(layout.end(), {"--option", std::move(option)});
  auto r = run_cli(deepspeed_check("pipeline_engine", layout));
  EXPECT_EQ(r.exit_code, exit_code) << r.out << r.err;
  for (const std::string &line : lines)
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}
} // namespace

class DeepSpeedPipelineEngine : public ::testing::TestWithParam<const char *> {};

// Two stages: the engine's schedule sends each activation's shape first (an
// int32 header the receiving stage turns into sizes), then the activations
// and gradients; the reduced gradients and the stepped weights of both
// stages are the single-stage engine's, at ZeRO 0 and 1.
TEST_P(DeepSpeedPipelineEngine, TwoStagesAreProvedWithoutClipping) {
  expect_pipeline_engine({"--tp", "1", "--pp", "2"}, {"clip=0", GetParam()}, 0,
                         {"proved: gradient: 'engine.module.0.weight'",
                          "proved: step: 'engine.module.3.weight'"});
}

INSTANTIATE_TEST_SUITE_P(DeepSpeed, DeepSpeedPipelineEngine,
                         ::testing::Values("stage=0", "stage=1"));

TEST(DeepSpeedPipelineEngine, DataParallelStagesAreProvedWithoutClipping) {
  expect_pipeline_engine({"--tp", "1", "--pp", "2", "--dp", "2"}, {"clip=0"}, 0,
                         {"proved: step: 'engine.module.3.weight'"});
}

// DeepSpeed's default gradient clipping (1.0) without ZeRO: clip_grad_norm_
// counts the gradients of model-parallel rank 0 only, and a pipeline grid's
// model-parallel group is its stages, so the norm leaves out every stage
// but the first and every stage clips by it.
TEST(DeepSpeedPipelineEngine, ClippingByTheFirstStagesNormIsRefuted) {
  expect_pipeline_engine({"--tp", "1", "--pp", "2"}, {}, 1,
                         {"deepspeed/runtime/utils.py:",
                          "the gradient norm differs from the single-device reference "
                          "[SP006]",
                          "'engine.module.3.weight' after the optimizer step differs"});
}

// Tied first and last layers (TiedLayerSpec): each end stage holds a copy,
// and the schedule's ReduceTiedGrads sums the two uses' gradients; its twin
// without that instruction keeps one use's gradient on each stage.
TEST(DeepSpeedPipelineEngine, TiedLayersAreProvedAndTheirUnreducedTwinRefuted) {
  expect_pipeline_engine({"--tp", "1", "--pp", "2"}, {"clip=0", "tied=1"}, 0,
                         {"proved: gradient: 'engine.module.tied_modules.tied.weight'"});
  if (HasFatalFailure())
    return;
  auto r = run_cli(deepspeed_check("pipeline_engine_without_tied_reduction",
                                   {"--tp", "1", "--pp", "2", "--option", "clip=0"}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("refuted: gradient: 'engine.module.tied_modules.tied.weight'"),
            std::string::npos)
      << r.out;
}

// Four stages, one layer each: the middle stages receive and send both ways.
TEST(DeepSpeedPipelineEngine, FourStagesAreProvedWithoutClipping) {
  expect_pipeline_engine({"--tp", "1", "--pp", "4"}, {"clip=0"}, 0,
                         {"proved: step: 'engine.module.2.weight'"});
}
