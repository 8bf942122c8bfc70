#include "tests/e2e/framework_trees.h"

#include <cstdlib>
#include <filesystem>
#include <string>

namespace shardproof::testing {

::testing::AssertionResult use_megatron() {
  if (!std::getenv("MEGATRON_ROOT"))
    setenv("MEGATRON_ROOT", SHARDPROOF_FRAMEWORKS_DIR "/megatron-core", 1);
  std::string root = std::getenv("MEGATRON_ROOT");
  if (!std::filesystem::is_directory(root + "/megatron/core"))
    return ::testing::AssertionFailure()
           << root << " holds no megatron/core: run the tests with ctest (its "
           << "frameworks.install test installs the pinned megatron-core, "
           << "tests/frameworks/install.sh) or set MEGATRON_ROOT to a Megatron-LM tree";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult use_deepspeed() {
  if (!std::getenv("DEEPSPEED_ROOT")) {
    setenv("DEEPSPEED_ROOT", SHARDPROOF_FRAMEWORKS_DIR "/deepspeed", 1);
    if (!std::getenv("DEEPSPEED_PYTHON_PATH"))
      setenv("DEEPSPEED_PYTHON_PATH", SHARDPROOF_FRAMEWORKS_DIR "/deepspeed-deps", 1);
  }
  std::string root = std::getenv("DEEPSPEED_ROOT");
  const char *path = std::getenv("DEEPSPEED_PYTHON_PATH");
  if (!std::filesystem::is_directory(root + "/deepspeed") ||
      (path && !std::filesystem::is_directory(path)))
    return ::testing::AssertionFailure()
           << root
           << " holds no deepspeed/ (or DEEPSPEED_PYTHON_PATH=" << (path ? path : "")
           << " is no folder): run the tests with ctest (its "
           << "frameworks.install test installs the pinned deepspeed, "
           << "tests/frameworks/install.sh) or set DEEPSPEED_ROOT to a DeepSpeed tree";
  return ::testing::AssertionSuccess();
}

} // namespace shardproof::testing
