// The seam every frontend plugs into: a target in, the traces of its
// single-device reference and of every simulated rank out, recorded into the
// shared term store. The analyzer links and checks what comes back and never
// knows which language it was traced from.
#pragma once

#include "models/ir/trace.h"
#include "models/terms/term_store.h"
#include "models/terms/witness.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace shardproof::frontend {

// Why a target produced no (or no trustworthy) traces.
struct TraceFailure {
  enum class Kind {
    BadInput,    // the harness is wrong: syntax error, missing FUNC, FUNC raised
    Unsupported, // valid code shardproof does not model (yet): could not prove
    Absent,      // a recipe's component is not in this framework tree
  };
  Kind kind = Kind::BadInput;
  ir::SourceLoc loc;
  std::string message;
};

struct Target {
  std::string path;     // as the user wrote it (or a framework's recipe file)
  std::string function; // defaults to "entry"
  std::string layout;   // a recipe's parallel layout ("tp=2,sp=1"), if any
  // A recipe's layout fixes the world: the product of its axes.
  std::optional<int> world;
  // Variables the analysed code reads (a recipe's MEGATRON_ROOT), set for
  // its runs only and restored after: nothing is left behind in the process.
  std::map<std::string, std::string> environment;
  // A launch's plan (`check TREE --launch FILE`): the configuration, the
  // sizes it was reduced to and the fallbacks taken, shown with the verdict.
  std::string launch;

  // The launch file as the user named it (`--launch FILE`), which a launch
  // target is shown by in place of the framework's launch module.
  std::string launch_file;

  std::string str() const { return str_with_path(path); }
  // As str(), with the path shown as `shown` (relative to the working folder).
  std::string str_with_path(const std::string &shown) const {
    std::string what = launch_file.empty() ? shown + "::" + function : launch_file;
    return what + (layout.empty() ? "" : " [" + layout + "]");
  }
};

// "FILE.py::FUNC" or "FILE.py" (FUNC = entry).
Target parse_target(const std::string &text);

// A function a compiled PyTorch extension exposes to Python, and the
// kernels behind it, for the analysed code's torch.utils.cpp_extension.load.
struct ExtensionFunctionInfo {
  std::string name;                   // the module's attribute
  ir::SourceLoc registered_at;        // its m.def
  std::string function;               // the C++ function bound
  std::vector<std::string> kernels;   // "KERNEL (launched at FILE:LINE)"
  std::vector<std::string> undefined; // reached, defined in none of the sources
};
// A tensor an extension function is called with or returns: its elements
// row-major, in the shared term store.
struct ExtensionTensor {
  ir::DType dtype = ir::DType::Float32;
  ir::Shape shape;
  std::vector<terms::TermId> elements;
};
// An argument of a call: None, a tensor, an int, a float, a bool, or a
// list of ints (sizes: a Python list, tuple or torch.Size).
using ExtensionValue = std::variant<std::monostate, ExtensionTensor, std::int64_t, double,
                                    bool, std::vector<std::int64_t>>;
struct ExtensionCallResult {
  // What the C++ function returned: nothing (void), one tensor, or a
  // sequence of them (std::vector<at::Tensor>).
  std::vector<ExtensionTensor> returned;
  // For each returned tensor, the argument it is (the C++ function returned
  // its tensor argument itself), or -1 for a new tensor.
  std::vector<int> returned_arguments;
  bool returns_none = false, returns_sequence = false;
  bool returns_tuple = false; // the sequence is a std::tuple: a Python tuple
  // What a function that returns a number returned (an int, a float or a
  // bool; Megatron's get_batch_per_block).
  std::optional<ExtensionValue> returned_number;
  // The tensor arguments the kernels wrote into, by argument index: their
  // contents after the call.
  std::map<std::size_t, std::vector<terms::TermId>> written;
  // The host code refused the arguments (a failed TORCH_CHECK): PyTorch's
  // RuntimeError, with this message.
  std::optional<std::string> rejected;
  // What the call does that shardproof does not model: "could not prove".
  std::optional<std::string> unsupported;
};
// Runs the extension's function `function` (its Python name) on `args`: its
// host code at their sizes, and each kernel it launches lifted over their
// elements into `store`.
using ExtensionCaller = std::function<ExtensionCallResult(
    const std::string &function, const std::vector<ExtensionValue> &args,
    terms::TermStore &store)>;
struct ExtensionModule {
  std::vector<ExtensionFunctionInfo> functions;
  // A source that could not be read: the module's functions are unknown.
  std::optional<std::string> error;
  ExtensionCaller call; // unset: a call of a function is not modelled
};
// The module load(name, sources) would build, its sources read with the
// preprocessor flags (-I, -D, -U) the call gives the compiler. Given by the
// analyzer, which composes the frontends; unset, such a build is not modelled.
using ExtensionResolver = std::function<ExtensionModule(
    const std::string &name, const std::vector<std::string> &sources,
    const std::vector<std::string> &flags)>;

struct TraceOptions {
  int world = 2;
  // Analysed code that runs longer, per simulated rank, is stopped where it
  // is (an endless loop must not hang shardproof).
  std::chrono::milliseconds time_limit{120000};
  // Folders the analysed code imports its own dependencies from (the user's
  // environment: `--python-path`, a virtual environment's site-packages),
  // searched after shardproof's stand-ins and before the system's packages.
  std::vector<std::string> python_path;
  // Value-dependent decisions (topk, argmax, masks) are made at this
  // witness (models/terms/witness.h) and recorded as the trace's path
  // conditions; none: they stop tracing ("could not prove").
  std::optional<terms::Witness> witness;
  ExtensionResolver extensions;
};

// Source lines by file, as the frontend read them: findings are rendered and
// suppression markers read from what was analysed, not from the disk later.
using SourceFiles = std::map<std::string, std::vector<std::string>>;

struct TracedProgram {
  ir::Trace reference;          // world 1
  std::vector<ir::Trace> ranks; // one per rank of options.world
  SourceFiles sources;          // every file the traces' locations name
  // Every source file the traced runs executed (the modules they imported),
  // where the frontend knows them: `--diff` selects targets by these.
  std::vector<std::string> executed_files;
  // Set when tracing stopped: the traces are then partial and not checked.
  std::optional<TraceFailure> failure;
};

class Frontend {
public:
  virtual ~Frontend() = default;
  virtual TracedProgram trace(terms::TermStore &store, const Target &target,
                              const TraceOptions &options) = 0;
};

// The lines of every file that `program`'s locations name (a file that
// cannot be read is left out). For frontends to fill TracedProgram::sources.
SourceFiles read_sources(const TracedProgram &program);

} // namespace shardproof::frontend
