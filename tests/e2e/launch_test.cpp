// `shardproof check TREE --launch FILE` (docs/launch.md): the CLI on launch
// files and trees made here, and, when the machine has a Megatron-LM tree
// (MEGATRON_ROOT), launches of our own against the tree's training step.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

using shardproof::testing::run_cli;
using shardproof::testing::source_path;
namespace fs = std::filesystem;

namespace {
// A folder that looks like a Megatron-LM tree to the planner: megatron/core
// and an entry script that trains (no importable package: a run stops).
fs::path fake_tree() {
  fs::path tree = fs::temp_directory_path() / "shardproof_launch_tree";
  fs::create_directories(tree / "megatron" / "core");
  std::ofstream(tree / "pretrain_gpt.py") << "from megatron.training import pretrain\n"
                                          << "pretrain(None, None, None, None)\n";
  return tree;
}

fs::path write(const fs::path &path, const std::string &text) {
  std::ofstream(path) << text;
  return path;
}
} // namespace

TEST(LaunchCli, AnUnreadableLaunchNamesItsFileAndLine) {
  auto tree = fake_tree();
  auto config = write(tree / "model_config.yaml", "MODEL_ARGS:\n  --num-layers: [2\n");
  auto r = run_cli({"check", tree.string(), "--launch", config.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("model_config.yaml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not YAML"), std::string::npos) << r.err;
}

TEST(LaunchCli, AWorldTheParallelSizesDoNotDivideIsAnError) {
  auto tree = fake_tree();
  auto args =
      write(tree / "tp4.args", "--tensor-model-parallel-size 4\n--num-layers 2\n");
  auto r = run_cli({"check", tree.string(), "--launch", args.string(), "--world", "6"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("tp4.args:1: world 6 is not a multiple"), std::string::npos)
      << r.err;
}

TEST(LaunchCli, ParallelSizesComeFromTheLaunchNotTheCommandLine) {
  auto tree = fake_tree();
  auto args = write(tree / "tp2.args", "--tensor-model-parallel-size 2\n");
  auto r = run_cli({"check", tree.string(), "--launch", args.string(), "--tp", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--launch takes its parallel sizes from the launch"),
            std::string::npos)
      << r.err;
}

TEST(LaunchCli, ThePlanIsShownWithTheVerdict) {
  // The fake tree's entry script cannot import Megatron: an error, with the
  // plan (world from the torchrun line, the reduction) beside it.
  auto tree = fake_tree();
  auto script = write(tree / "train.sh", "#!/bin/bash\n"
                                         "TP=(--tensor-model-parallel-size 2)\n"
                                         "torchrun --nproc_per_node 2 --nnodes 2 "
                                         "pretrain_gpt.py ${TP[@]} --num-layers 12 "
                                         "--sequence-parallel\n");
  auto r = run_cli({"check", tree.string(), "--launch", script.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("launch: pretrain_gpt.py at tp=2 cp=1 dp=2 pp=1 sp=1 (world 4)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("num-layers 12->2"), std::string::npos) << r.err;
}

TEST(LaunchCli, AScriptThatDoesNotTrainIsNotALaunch) {
  auto tree = fake_tree();
  write(tree / "convert.py", "print('converting')\n");
  auto args = write(tree / "convert.args", "convert.py\n--num-layers 2\n");
  auto r = run_cli({"check", tree.string(), "--launch", args.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("convert.py is not a training launch"), std::string::npos)
      << r.err;
}

namespace {
// A Megatron-LM checkout with its training entry scripts (MEGATRON_ROOT):
// the megatron-core release CI installs has no megatron/training, so
// without such a tree these tests say so and skip.
std::optional<fs::path> megatron_tree() {
  const char *root = std::getenv("MEGATRON_ROOT");
  if (!root || !fs::exists(fs::path(root) / "pretrain_gpt.py") ||
      !fs::exists(fs::path(root) / "megatron" / "training"))
    return std::nullopt;
  return fs::path(root);
}

// The tree with one file's text replaced, in a folder of hard links (the
// edited file is written anew, so the tree itself is never touched).
fs::path tree_with(const fs::path &root, const std::string &file, const std::string &from,
                   const std::string &to) {
  fs::path copy = fs::temp_directory_path() / "shardproof_megatron_injected";
  fs::remove_all(copy);
  fs::copy(root, copy, fs::copy_options::recursive | fs::copy_options::create_hard_links);
  std::ifstream in(root / file);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from << " not in " << file;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  fs::remove(copy / file);
  std::ofstream(copy / file) << text;
  return copy;
}

const char *kDataParallelLaunch = "tests/e2e/launch/megatron/gpt_dp_noclip.args";
} // namespace

// The whole step of a 2-layer GPT under data parallelism with the
// distributed optimizer: loss, every gradient where its rank owns it, the
// norm and every stepped parameter, each against world 1.
TEST(MegatronLaunch, DataParallelStepWithTheDistributedOptimizerIsProved) {
  auto root = megatron_tree();
  if (!root)
    GTEST_SKIP() << "MEGATRON_ROOT names no Megatron-LM checkout with pretrain_gpt.py";
  auto r = run_cli({"check", root->string(), "--launch", source_path(kDataParallelLaunch),
                    "--world", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("--world 2: proved ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 refuted, 0 could not prove"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("proved: step: 'chunks.0.module.decoder.final_layernorm.weight'"),
            std::string::npos)
      << r.out;
}

// The same launch where the schedule no longer divides each micro-batch's
// loss by the number of micro-batches: the reference sums 4 micro-batches,
// each rank 2 before data parallelism averages, so every gradient is half
// the reference's (SP005). Steps may stay "could not prove": Adam's first
// step hardly depends on the gradient's scale.
TEST(MegatronLaunch, AMicroBatchLossLeftUnaveragedIsRefuted) {
  auto root = megatron_tree();
  if (!root)
    GTEST_SKIP() << "MEGATRON_ROOT names no Megatron-LM checkout with pretrain_gpt.py";
  fs::path buggy = tree_with(*root, "megatron/core/pipeline_parallel/schedules.py",
                             "output_tensor /= torch.clamp(num_tokens, min=1)\n"
                             "                    output_tensor /= num_microbatches",
                             "output_tensor /= torch.clamp(num_tokens, min=1)");
  auto r = run_cli({"check", buggy.string(), "--launch", source_path(kDataParallelLaunch),
                    "--world", "2", "--timeout", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("--world 2: refuted ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is the reference times 1/2 on every rank"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[SP005]"), std::string::npos) << r.out;
  fs::remove_all(buggy);
}
