// The DeepSpeed training step a user launches (docs/launch.md, "DeepSpeed"):
// `shardproof check TREE --launch ds_config.json --entry model.py::build
// --world N` on our own small models and configs of tests/e2e/launch/deepspeed,
// against a real DeepSpeed tree: the pinned release ctest installs
// (tests/e2e/framework_trees.h) or DEEPSPEED_ROOT=/path/to/DeepSpeed ctest -R
// DeepSpeedLaunch (and, for trees that need pydantic 2,
// DEEPSPEED_PYTHON_PATH=<a folder that holds it>). The same verdicts under real PyTorch
// and DeepSpeed (CPU, gloo): tests/groundtruth/launch_deepspeed.py.
#include "tests/e2e/framework_trees.h"
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>

using shardproof::testing::run_cli;
using shardproof::testing::source_path;
using shardproof::testing::use_deepspeed;

namespace {
struct Launch {
  const char *name;   // the test's name
  const char *config; // in tests/e2e/launch/deepspeed
  const char *model;  // MODEL.py::FUNCTION there, or "" for none
  int world;          // 0: the world the launch plans
  int exit_code;
  std::vector<std::string> lines; // each in the output
};

void PrintTo(const Launch &launch, std::ostream *out) { *out << launch.name; }

std::string launch_name(const ::testing::TestParamInfo<Launch> &info) {
  return info.param.name;
}

void expect_launch(const Launch &launch) {
  ASSERT_TRUE(use_deepspeed());
  const std::string folder = source_path("tests/e2e/launch/deepspeed/");
  std::vector<std::string> args{"check", std::getenv("DEEPSPEED_ROOT"), "--launch",
                                folder + launch.config};
  if (*launch.model)
    args.insert(args.end(), {"--entry", folder + launch.model});
  if (launch.world)
    args.insert(args.end(), {"--world", std::to_string(launch.world)});
  if (const char *path = std::getenv("DEEPSPEED_PYTHON_PATH"))
    args.insert(args.end(), {"--python-path", path});
  auto r = run_cli(args);
  EXPECT_EQ(r.exit_code, launch.exit_code) << r.out << r.err;
  for (const std::string &line : launch.lines)
    EXPECT_NE((r.out + r.err).find(line), std::string::npos) << line << "\n"
                                                             << r.out << r.err;
}
} // namespace

class DeepSpeedLaunch : public ::testing::TestWithParam<Launch> {};
class DeepSpeedLaunchSlow : public ::testing::TestWithParam<Launch> {};

TEST_P(DeepSpeedLaunch, VerdictIsAsTheLaunchComputes) { expect_launch(GetParam()); }
TEST_P(DeepSpeedLaunchSlow, VerdictIsAsTheLaunchComputes) { expect_launch(GetParam()); }

// Seconds each on 2 cores (12 in under a minute with -j2).
INSTANTIATE_TEST_SUITE_P(
    DeepSpeed, DeepSpeedLaunch,
    ::testing::Values(
        // ZeRO 0, DeepSpeed's default clipping (1.0): the norm, every
        // gradient and every stepped weight the single-device run's.
        Launch{"Zero0",
               "zero0.json",
               "mlp.py::build",
               2,
               0,
               {"DeepSpeed launch of mlp.py::build with zero0.json",
                "proved: grad_norm: the norm is replicated",
                "proved: gradient: 'engine.module.fc1.weight'",
                "proved: step: 'engine.module.fc2.bias'"}},
        // ZeRO 1 with bf16 and Adam (run as torch's Adam, the summary says).
        Launch{"Zero1Bf16Adam",
               "zero1_bf16.json",
               "mlp.py::build",
               2,
               0,
               {"ZeRO 1, bf16", "as torch's (torch_adam)",
                "proved: step: 'engine.module.fc1.weight'"}},
        // ZeRO 2 with clipping and 2 accumulation steps per rank (4 in the
        // reference: the same global batch of 8).
        Launch{"Zero2ClipAccumulation",
               "zero2_clip.json",
               "mlp.py::build",
               2,
               0,
               {"each 2 micro-batches of 2 (global batch 8); reference: world 1, 4 "
                "micro-batches",
                "proved: grad_norm: the norm is replicated",
                "proved: gradient: 'engine.module.fc2.weight'"}},
        // ZeRO 3: gradients gathered from the partitions, weights after the step.
        Launch{"Zero3",
               "zero3.json",
               "mlp.py::build",
               2,
               0,
               {"proved: gradient: 'engine.module.fc1.weight'",
                "proved: step: 'engine.module.fc1.weight'"}},
        // fp16 with dynamic loss scaling, ZeRO 2 and a WarmupLR scheduler.
        Launch{"Fp16LossScalingWarmup",
               "fp16_warmup.json",
               "mlp.py::build",
               2,
               0,
               {"ZeRO 2, fp16", "proved: grad_norm: the norm is replicated",
                "proved: step: 'engine.module.fc1.weight'"}},
        // Two pipeline stages (PipelineModule of 4 layers), no clipping.
        Launch{"Pipeline",
               "pipeline.json",
               "pipe.py::build",
               2,
               0,
               {"2 pipeline stages", "proved: gradient: 'engine.module.0.weight'",
                "proved: step: 'engine.module.3.weight'"}},
        // The same with gradient_clipping 1.0: DeepSpeed's clip_grad_norm_
        // counts the first stage's gradients only (an open DeepSpeed bug,
        // docs/coverage.md), so every stage clips by a smaller norm.
        Launch{"PipelineClipByTheFirstStagesNorm",
               "pipeline_clip.json",
               "pipe.py::build",
               2,
               1,
               {"deepspeed/runtime/utils.py:",
                "the gradient norm differs from the single-device reference [SP006]",
                "'engine.module.0.weight' after the optimizer step differs"}},
        // A config key that is not modelled stops at its line.
        Launch{"OffloadIsNotModelled",
               "offload.json",
               "mlp.py::build",
               2,
               3,
               {"offload.json:6: note: could not prove",
                "DeepSpeed config key 'zero_optimization.offload_optimizer': offload to "
                "cpu"}},
        Launch{"NotJson",
               "bad_json.json",
               "mlp.py::build",
               0,
               2,
               {"bad_json.json:4: the DeepSpeed config is not JSON: Expecting ',' "
                "delimiter"}},
        Launch{"NoBuilder",
               "zero0.json",
               "",
               0,
               2,
               {"zero0.json:1: a DeepSpeed launch needs the model's builder"}},
        Launch{
            "WorldThePipelineDoesNotDivide",
            "pipeline.json",
            "pipe.py::build",
            3,
            2,
            {"pipeline.json:6: a world of 3 does not split into 2 pipeline stage(s)"}}),
    launch_name);

// Minutes each: a refutation whose stepped weights take the prover's time
// limit, and MoE's routings, each a path.
INSTANTIATE_TEST_SUITE_P(
    DeepSpeedSlow, DeepSpeedLaunchSlow,
    ::testing::Values(
        // A model ported from a torch.distributed script that still sums each
        // gradient over the ranks in a hook: DeepSpeed's average of the sums
        // is the world size times the single-device gradient.
        Launch{
            "GradientsReducedTwiceAreRefuted",
            "zero0.json",
            "mlp_reduced_twice.py::build",
            2,
            1,
            {"mlp_reduced_twice.py:13:9: error: the value computed here (all_reduce) is "
             "the reference times 2 on every rank",
             "[SP005]"}},
        // Two experts over 2 expert-parallel ranks under ZeRO 2: every
        // routing of the two tokens a path.
        Launch{"MoeExpertParallelZero2",
               "moe.json",
               "moe.py::build",
               2,
               0,
               {"2-way expert parallelism",
                "proved: gradient: "
                "'engine.module.moe.deepspeed_moe.experts.deepspeed_experts.1.weight'",
                "proved: value-dependent decisions"}},
        // ZeRO 0 clipping with experts over ranks: DeepSpeed averages the
        // expert-parallel ranks' norms (an open DeepSpeed bug, docs/coverage.md).
        Launch{"MoeClipNormAveragedOverExpertRanks",
               "moe_clip.json",
               "moe.py::build",
               2,
               1,
               {"the gradient norm differs from the single-device reference [SP006]"}}),
    launch_name);
