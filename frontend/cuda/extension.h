// One PyTorch extension's sources parsed together (issue 13): a Python call
// of one of its functions runs the function's host code across them (a
// binding in a .cpp calling its launcher in a .cu) at the call's sizes, then
// lifts each kernel it launched, in order, over the memory of the call's
// tensors, so the Python frontend traces the kernels' values.
#pragma once

#include "frontend/cuda/cuda_frontend.h"
#include "frontend/frontend.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace shardproof::frontend::cuda {

class CudaExtension {
public:
  struct Source {
    std::string path;
    ParseOptions options;
  };
  // Parses every source; the first one clang rejects is the error.
  static std::variant<CudaExtension, Diagnostic>
  parse(const std::vector<Source> &sources);
  CudaExtension(CudaExtension &&) noexcept;
  CudaExtension &operator=(CudaExtension &&) noexcept;
  ~CudaExtension();

  // The host code of `function` (qualified, or a lambda bound in place as
  // ExtensionBinding::function names it) run on `args`.
  ExtensionHostRun run(const std::string &function,
                       const std::vector<HostArgument> &args) const;

  // The call as Python makes it: `run`, then every launch lifted over the
  // elements of the memory it is given. Never throws for what the code does.
  ExtensionCallResult call(terms::TermStore &store, const std::string &function,
                           const std::vector<ExtensionValue> &args) const;

private:
  struct Impl;
  explicit CudaExtension(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace shardproof::frontend::cuda
