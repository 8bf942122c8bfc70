// The CUDA frontend: parses a .cu/.cuh file with Clang LibTooling 19 and
// lifts an annotated kernel launch (annotations.h) into terms of the shared
// term store by symbolic execution of its AST over the reduced launch.
// Clang stays behind this header: the analyzer composes it with the Python
// frontend (which evaluates the reference expression) and the prover.
#pragma once

#include "frontend/cuda/annotations.h"
#include "models/terms/term_store.h"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
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
  std::string str() const; // "thread (3,0,0) of block (1,0,0)"
};

// A bug of the kernel on the reduced launch, with the access that shows it
// and, for a race, the earlier conflicting access.
struct KernelFinding {
  enum class Kind { SharedMemoryRace, OutOfBounds };
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

// A parsed file, ready to lift the launches it was parsed for.
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

private:
  std::unique_ptr<Impl> impl_;
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
// instantiated as the launches name them).
ParsedFile parse_file(const std::string &path, const std::vector<KernelLaunch> &launches,
                      const ParseOptions &options);

// The clang arguments parse_file uses (for tests and --verbose reports).
std::vector<std::string> clang_arguments(const ParseOptions &options);

} // namespace shardproof::frontend::cuda
