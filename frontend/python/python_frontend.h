// The Python frontend: runs a target's real source on the embedded CPython
// with the stand-in torch, once at world 1 and once per simulated rank, and
// builds framework recipes (Megatron-LM, DeepSpeed) into targets.
#pragma once

#include "frontend/frontend.h"

#include <map>
#include <string>
#include <vector>

namespace shardproof::frontend {

class PythonFrontend final : public Frontend {
public:
  TracedProgram trace(terms::TermStore &store, const Target &target,
                      const TraceOptions &options) override;
};

// The folders the analysed code imports its own dependencies from: `given`
// (--python-path, each item os.pathsep-separated), then the site-packages of
// the virtual environment `virtual_env` (VIRTUAL_ENV) when not null. Throws
// std::invalid_argument naming a folder that does not exist or a virtual
// environment of another Python version.
std::vector<std::string> user_python_path(const std::vector<std::string> &given,
                                          const char *virtual_env);

// "megatron" or "deepspeed" from the folders of a checkout, else "".
std::string detect_framework(const std::string &root);

// A component of the framework tree at `root` (docs/coverage.md), built by
// the framework's recipe file at a parallel layout.
struct RecipeRequest {
  std::string root;
  std::string framework; // "megatron" or "deepspeed"
  std::string entry;     // the recipe
  // Parallel sizes by axis (tp, cp, ep, dp, pp); 0 = not given.
  std::map<std::string, int> axes;
  bool sequence_parallel = false;
  // The recipe's model options, "NAME=VALUE" (--option bias=0).
  std::vector<std::string> options;
  // Whether any axis, --sp or option was given: otherwise the recipe's own world.
  bool layout_given() const;
};
Target recipe_target(const RecipeRequest &request);

// The training step a user launches (`check TREE --launch FILE`): the
// framework's launch module (integrations/<framework>/launch.py) plans the
// layout and world from the launch file (a Megatron model_config.yaml, an
// arguments file or launch script; a DeepSpeed JSON config with the user's
// model builder `model_entry`) and builds that step on every rank. `world` is
// --world, or 0 to take the launch's own. Throws std::invalid_argument
// naming the file and line when the launch cannot be read.
struct LaunchRequest {
  std::string root;
  std::string framework;
  std::string launch_file;
  std::string model_entry; // FILE.py::FUNC, or ""
  int world = 0;
};
Target launch_target(const LaunchRequest &request);

// The launch configurations the framework tree at `root` ships (Megatron's
// functional-test model_config.yaml files), for `scan --launches`.
std::vector<std::string> launch_files(const std::string &root,
                                      const std::string &framework);

// Every row of the framework's SCAN table as a target. Throws
// std::invalid_argument naming the file and line when it cannot be read.
std::vector<Target> scan_targets(const std::string &root, const std::string &framework);

} // namespace shardproof::frontend
