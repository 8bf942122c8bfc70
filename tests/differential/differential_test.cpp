// The stand-in torch against real PyTorch: every op of tests/differential
// and its gradient, on the same random inputs.
#include "frontend/python/interpreter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

TEST(StandInTorch, OpsAndGradientsMatchRealPyTorch) {
  std::string dir = std::string(SHARDPROOF_SOURCE_DIR) + "/tests/differential/";
  std::string json = testing::TempDir() + "torch_reference.json";
  std::string cmd = "/usr/bin/python3 " + dir + "torch_reference.py " + json;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "real PyTorch could not run the cases";
  EXPECT_EQ(shardproof::frontend::run_python_script(dir + "standin_check.py", {json}), 0)
      << "see the FAIL lines above";
}
