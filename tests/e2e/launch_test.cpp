// `shardproof check TREE --launch FILE` (docs/launch.md): the CLI on launch
// files and trees made here, and, when the machine has a Megatron-LM tree
// (MEGATRON_ROOT), launches of our own against the tree's training step.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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
