// The stand-in torch against real PyTorch: every op of tests/differential
// and its gradient, on the same random inputs.
#include "frontend/python/interpreter.h"

#include <gtest/gtest.h>

#include <Python.h>

#include <cstdio>
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

// Autograd hooks fire in the order, and with the gradients, of PyTorch's
// engine: live against Debian's 1.13, and against the log PyTorch 2.x wrote
// (hook_reference.py says how) for the hooks 1.13 lacks.
TEST(StandInTorch, HooksRunInPyTorchsOrder) {
  std::string dir = std::string(SHARDPROOF_SOURCE_DIR) + "/tests/differential/";
  std::string json = testing::TempDir() + "hook_reference.json";
  std::string cmd = "/usr/bin/python3 " + dir + "hook_reference.py " + json;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "real PyTorch could not run the hook cases";
  EXPECT_EQ(shardproof::frontend::run_python_script(
                dir + "hook_check.py", {json, dir + "hook_expected_torch2.json"}),
            0)
      << "see the FAIL lines above";
}

// Every parameter PyTorch takes by keyword is a parameter of that name in the
// stand-in, for the ops in common use (tests/surface/keyword_names.py); the
// real names come from Debian's PyTorch, as the cases' values do.
TEST(StandInTorch, KeywordNamesMatchRealPyTorch) {
  std::string script =
      std::string(SHARDPROOF_SOURCE_DIR) + "/tests/surface/keyword_names.py";
  std::string json = testing::TempDir() + "torch_signatures.json";
  std::string cmd = "/usr/bin/python3 " + script + " --real " + json;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "real PyTorch's signatures could not be read";
  EXPECT_EQ(shardproof::frontend::run_python_script(script, {json}), 0)
      << "see the FAIL lines above";
}

// A stand-in tensor used when no trace is recording (a value kept past its
// run, a finalizer): a Python RuntimeError, not a dereference of a store
// that is gone (this was a SIGSEGV).
TEST(StandInTorch, UseOutsideATracedRunIsAPythonError) {
  std::string script = testing::TempDir() + "keep_tensor.py";
  {
    FILE *f = std::fopen(script.c_str(), "w");
    std::fputs("import builtins, torch\nbuiltins.KEPT = torch.ones(2)\n", f);
    std::fclose(f);
  }
  ASSERT_EQ(shardproof::frontend::run_python_script(script, {}), 0);
  // The script's recording context has ended; the tensor lives on.
  EXPECT_EQ(PyRun_SimpleString("import builtins\n"
                               "try:\n"
                               "    builtins.KEPT * 3\n"
                               "except RuntimeError as e:\n"
                               "    assert 'outside a traced run' in str(e), str(e)\n"
                               "else:\n"
                               "    raise AssertionError('no error')\n"),
            0);
}

TEST(StandInTorch, TheModuleStubDocumentsEveryName) {
  std::string dir = std::string(SHARDPROOF_SOURCE_DIR) + "/tests/differential/";
  EXPECT_EQ(shardproof::frontend::run_python_script(dir + "stub_matches_module.py", {}),
            0);
}

TEST(StandInTorch, ConcreteQuotientsAreExact) {
  std::string dir = std::string(SHARDPROOF_SOURCE_DIR) + "/tests/differential/";
  EXPECT_EQ(shardproof::frontend::run_python_script(dir + "exact_constants.py", {}), 0)
      << "see the FAIL lines above";
}
