// The CUDA frontend: parses a .cu/.cuh file with Clang LibTooling 19 and
// lifts an annotated kernel launch (annotations.h) into terms of the shared
// term store by symbolic execution of its AST over the reduced launch.
// Clang stays behind this header: the analyzer composes it with the Python
// frontend (which evaluates the reference expression) and the prover.
#pragma once

#include "frontend/cuda/annotations.h"
#include "frontend/cuda/profiles.h"
#include "models/terms/term_store.h"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace shardproof::frontend::cuda {

struct ParseOptions {
  // The CUDA toolkit (its include/ holds cuda_runtime.h): parse with its real
  // headers. Unset: shardproof's own header set (frontend/cuda/include).
  std::optional<std::string> cuda_path;
  std::vector<std::string> extra_args; // -D, -I, ... passed to clang as given
};

// One thread of the reduced launch.
struct ThreadId {
  std::array<int, 3> block{}, thread{};
  int rank = -1;           // in a multi-rank launch
  std::string str() const; // "thread (3,0,0) of block (1,0,0)[ of rank 1]"
};

// A bug of the kernel on the reduced launch, with the access that shows it
// and, for a race, the earlier conflicting access.
struct KernelFinding {
  enum class Kind {
    SharedMemoryRace,
    OutOfBounds,
    UninitialisedRead,
    UndefinedShuffleValue, // an output depends on a shuffle of an absent lane
    DivergentBarrier,
    CrossRankRace // two ranks' accesses of global memory no flag orders
  };
  Kind kind = Kind::OutOfBounds;
  ir::SourceLoc loc;
  std::string message;
  std::optional<ir::SourceLoc> other_loc;
  std::string other_note;
};

// The last write of a buffer element: the kernel line that made its value.
struct ElementWrite {
  ir::SourceLoc loc;
  ThreadId thread;
};

struct LiftedLaunch {
  // Every buffer argument's contents after the launch, row-major.
  std::map<std::string, std::vector<terms::TermId>> buffers;
  std::map<std::string, std::vector<std::optional<ElementWrite>>> writes;
  std::vector<KernelFinding> findings; // lifting stops at the first
  // Set when the kernel does something shardproof does not model: the
  // launch's values are then not trusted ("could not prove").
  std::optional<Diagnostic> unsupported;
};

// Where a pointer the host code passes points: an element of a storage of
// an extension call (a tensor's memory, CudaExtension::run).
struct StorageRef {
  int storage = -1;
  std::int64_t offset = 0; // in elements
};

// A kernel launch a host function of the file makes, as it computed it.
struct HostLaunch {
  std::string kernel; // its name (KernelSignature::name)
  HostChoice choice;
  ir::SourceLoc loc;        // the <<<...>>> launch
  bool null_buffer = false; // a pointer argument is null
  // In an extension call: the source that defines the kernel, where each
  // pointer parameter points and each floating-point parameter's value.
  int file = 0;
  std::map<std::string, StorageRef> buffers;
  std::map<std::string, double> reals;
};

// One run of a host function at concrete integer arguments.
struct HostRun {
  enum class End {
    Returned,    // it returned (its launches, if any, are in `launches`)
    Rejected,    // an assertion failed or it threw: the host refuses the sizes
    NotModelled, // it did something the host interpreter does not follow
  };
  End end = End::Returned;
  std::vector<HostLaunch> launches;
  ir::SourceLoc at; // the rejection, the construct not followed, or the last switch
  std::string why;
  // The last switch it ran: its condition as written and its value.
  std::string switch_on;
  std::int64_t switch_value = 0;
};

// A parsed file, ready to lift the launches it was parsed for.
class CudaExtension;
class CudaFile {
public:
  struct Impl;
  explicit CudaFile(std::unique_ptr<Impl> impl);
  CudaFile(CudaFile &&) noexcept;
  ~CudaFile();

  // Runs `launch` over the reduced grid, the buffer arguments holding
  // `inputs` (every buffer arg, by name, row-major). Never throws for what
  // the kernel does: that is a finding or `unsupported`.
  LiftedLaunch
  lift(terms::TermStore &store, const KernelLaunch &launch,
       const std::map<std::string, std::vector<terms::TermId>> &inputs) const;

  // Runs the host function `callee` (one parse_file was given) with its
  // integer parameters as `ints` (by name; reals are opaque, pointers are
  // not null but those `null_pointers` names). The kernels it launches can
  // be lifted afterwards, their launches named KERNEL<HostChoice::template_args>.
  HostRun run_host(const std::string &callee,
                   const std::map<std::string, std::int64_t> &ints,
                   const std::set<std::string> &null_pointers = {}) const;

private:
  friend class CudaExtension; // runs host code across its files' units
  std::unique_ptr<Impl> impl_;
};

// An extension function's tensor argument, as its host code sees it.
struct HostTensor {
  ir::DType dtype = ir::DType::Float32;
  ir::Shape shape;
  bool contiguous = true;
};
// None, a tensor, an int, a float, a bool, or a list of ints.
using HostArgument = std::variant<std::monostate, HostTensor, std::int64_t, double, bool,
                                  std::vector<std::int64_t>>;

// The memory an extension call's tensors live in: an argument's, or one the
// host code allocated (torch::empty: any values; zeros: 0), or the copy
// .contiguous() made of a strided argument.
struct HostStorage {
  enum class Init : std::uint8_t { Argument, Empty, Zeros, Ones, CopyOfArgument };
  Init init = Init::Empty;
  ir::DType dtype = ir::DType::Float32;
  std::int64_t numel = 0;
  int argument = -1;   // Argument, CopyOfArgument: the call's argument index
  std::string made_by; // Empty, Zeros, Ones: the factory ("at::empty_like") and where
  ir::SourceLoc at;
};
// A tensor the host code returns: contiguous, at `offset` of its storage.
struct HostTensorView {
  int storage = -1;
  ir::Shape shape;
  std::int64_t offset = 0;
};
// One run of an extension function's host code on an argument list.
struct ExtensionHostRun {
  HostRun run; // how it ended and the kernels it launched, in order
  std::vector<HostStorage> storages;
  std::vector<HostTensorView> returned;
  bool returns_none = false, returns_sequence = false;
  bool returns_tuple = false; // a std::tuple of tensors, not a std::vector
  std::optional<HostArgument> returned_number; // an int, float or bool returned
};

struct ParsedFile {
  std::optional<CudaFile> file;
  // Why not: clang's first error (an unsupported construct of the parser or
  // the header set, or a kernel the annotations name that does not exist).
  std::optional<Diagnostic> error;
  // The error is clang's (could not prove), not a launch of a kernel that
  // is not there (bad input).
  bool rejected_by_clang = false;
};

// Parses `path` for the launches annotated in it (their kernels, templates
// instantiated as the launches name them) and for the host functions
// `hosts` names (FUNCTION or FUNCTION<ARGS>, instantiated likewise).
ParsedFile parse_file(const std::string &path, const std::vector<KernelLaunch> &launches,
                      const ParseOptions &options,
                      const std::vector<std::string> &hosts = {});

// A host function of the file that launches kernels (a dispatcher).
struct HostFunction {
  std::string name;
  ir::SourceLoc loc;
  std::vector<std::string> template_params; // all type parameters, or not run
  std::vector<std::string> params;
  std::vector<std::string> int_params;     // its integer parameters, in order
  std::vector<std::string> pointer_params; // its pointer parameters, in order
  std::vector<std::string> launches;       // the names of the kernels it launches
};

// A function a PyTorch extension exposes to Python, as one registration
// declares it: pybind11's m.def in PYBIND11_MODULE, or an operator's m.def /
// m.impl in a TORCH_LIBRARY(_FRAGMENT/_IMPL) block.
struct ExtensionBinding {
  enum class Kind : std::uint8_t { Pybind11, TorchLibrary };
  Kind kind = Kind::Pybind11;
  // PYBIND11_MODULE's name (TORCH_EXTENSION_NAME when the build defines
  // none), or the operator namespace.
  std::string module;
  std::string name;   // the Python name (an operator's, overload dropped)
  std::string schema; // an operator's schema as m.def wrote it, if any
  ir::SourceLoc loc;  // the registration
  // The C++ function bound (qualified; a lambda's is "(lambda at FILE:LINE)"),
  // empty when the registration binds none (a schema alone).
  std::string function;
  std::string python() const; // "module.name" or "torch.ops.ns.name"
};

// A function of the file with a body and what it calls (functions declared
// outside the system headers and shardproof's stand-in PyTorch headers, by
// qualified name) and launches: the call graph that links a binding to its
// kernels across the files of an extension.
struct FunctionCalls {
  struct Launch {
    std::string kernel;
    ir::SourceLoc at; // the <<<...>>>
  };
  std::string name; // qualified
  ir::SourceLoc loc;
  std::vector<std::string> calls;
  std::vector<Launch> launches; // each kernel's first
};

struct FileListing {
  std::vector<KernelSignature> kernels;
  std::vector<HostFunction> hosts;
  std::vector<ExtensionBinding> bindings;
  std::vector<FunctionCalls> functions;
  std::optional<Diagnostic> error; // clang's first error
};

// The kernels and dispatchers of `path` and the headers beside it (not the
// toolkit's), for the profiles.
FileListing list_kernels(const std::string &path, const ParseOptions &options);

// A file's entry in the compile_commands.json nearest it (its folder or one
// above): the flags clang needs from it (-I, -isystem, -D, -U, -include,
// -std; nvcc's own flags dropped), or why the database gives none.
struct CompileCommand {
  std::string database; // the compile_commands.json read
  std::vector<std::string> flags;
  std::optional<std::string> error; // not JSON, or no entry for the file
};
std::optional<CompileCommand> compile_command_for(const std::string &path);

// Whether the file is a PyTorch extension (includes torch/extension.h, ATen
// or c10), and the flags such a file is parsed with: the defines
// torch.utils.cpp_extension gives nvcc, and shardproof's stand-in PyTorch
// headers (frontend/cuda/torch_shim) after every other include path.
bool is_torch_extension(const std::string &path);
const std::vector<std::string> &torch_extension_flags();

// The clang arguments parse_file uses (for tests and --verbose reports).
std::vector<std::string> clang_arguments(const ParseOptions &options);

} // namespace shardproof::frontend::cuda
