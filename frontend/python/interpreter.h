// The embedded CPython that runs the user's real source. One interpreter per
// process, started on first use, with the stand-in torch first on sys.path.
#pragma once

#include "frontend/frontend.h"
#include "models/ir/trace.h"
#include "models/terms/term_store.h"
#include "models/terms/witness.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::frontend {

struct RankRun {
  std::string path;     // the harness file
  std::string function; // FUNC of FILE::FUNC
  int world = 1;
  int rank = 0;
  // Python code that runs longer is interrupted where it is and reported as
  // bad input (an endless loop in the user's code must not hang shardproof).
  std::chrono::milliseconds time_limit{120000};
  // Set in Python's os.environ for this run only (a recipe's MEGATRON_ROOT
  // and SHARDPROOF_PARALLEL layout), restored after it.
  std::map<std::string, std::string> environment;
  // The user's import folders (TraceOptions::python_path), for this run only.
  std::vector<std::string> python_path;
  // Collective results an earlier pass linked to constants (see
  // ir::KnownCollectives).
  ir::KnownCollectives known_collectives;
  // The path whose witness makes value-dependent decisions (TraceOptions).
  std::optional<terms::Witness> witness;
  // The witness values of collective results an earlier pass linked (by
  // placeholder name): decisions on them are made as on any other value.
  terms::KnownPlaceholderValues known_placeholders;
  // The reference run's trace, when this run is a rank's (RecordingContext).
  const ir::Trace *reference = nullptr;
  // The extensions the analysed code builds (TraceOptions::extensions).
  const ExtensionResolver *extensions = nullptr;
  // The calls whose result may not be guessed from this pass's concrete
  // values (ir::Trace::guessed): those an earlier pass guessed and linking
  // did not confirm.
  std::set<ir::KnownCollectiveKey> not_guessed;
};

// Runs a Python script in the embedded interpreter (stand-in torch first on
// sys.path) with sys.argv = [path, args...], recording into a scratch trace;
// returns its exit status. For tests that check the stand-in itself.
int run_python_script(const std::string &path, const std::vector<std::string> &args);

// Runs FUNC once as `rank` of a world of `world` ranks and records its trace.
// Leaves created during the run get `leaf_kind` (Reference for the world-1
// run, RankLocal otherwise).
std::optional<TraceFailure> trace_rank(terms::TermStore &store, const RankRun &run,
                                       terms::VarKind leaf_kind, ir::Trace &out);

// The source files of the user modules the last traced run imported (not
// shardproof's stand-ins or what was loaded before the first run): with the
// target's own file, what `--diff` compares against the changed files.
std::vector<std::string> executed_files();

// The site-packages folder of the virtual environment at `venv` for this
// interpreter's Python version. Throws std::invalid_argument naming what is
// wrong (no such folder: a venv of another Python version, or none).
std::string virtual_environment_packages(const std::string &venv);

// One configuration of a framework recipe that `shardproof scan` checks.
struct RecipeConfig {
  std::string entry;  // FUNC in the recipe file
  std::string layout; // SHARDPROOF_PARALLEL: "tp=2,dp=1,sp=1"
};

// The recipe file's SCAN table, read with `environment` set (the tree's
// location). Throws std::invalid_argument naming the file and line when it
// cannot be read.
std::vector<RecipeConfig>
recipe_matrix(const std::string &path,
              const std::map<std::string, std::string> &environment);

// What a framework's launch file (integrations/<framework>/launch.py)
// plans for a user's launch configuration: the parallel layout the ranks
// build, the world, and one line for the report (what was launched, what was
// reduced or substituted).
struct LaunchPlan {
  std::string layout;
  int world = 0;
  std::string summary;
  // Variables the launch sets for its processes (a launch script's exports).
  std::map<std::string, std::string> environment;
};

// Calls plan(launch_file, world, model_entry) of the launch module at
// `path` with `environment` set. Throws std::invalid_argument naming the
// file and line when the launch cannot be read or planned.
LaunchPlan launch_plan(const std::string &path, const std::string &launch_file, int world,
                       const std::string &model_entry,
                       const std::map<std::string, std::string> &environment);

// The launch configurations the tree at `root` ships (configurations(root)
// of the launch module at `path`), as paths. Throws std::invalid_argument
// with the module's message when it cannot list them.
std::vector<std::string>
launch_configurations(const std::string &path, const std::string &root,
                      const std::map<std::string, std::string> &environment);

} // namespace shardproof::frontend
