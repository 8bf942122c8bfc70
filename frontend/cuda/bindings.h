// The kernels behind a PyTorch extension's Python functions (issue 13): each
// registration (pybind11's m.def, TORCH_LIBRARY's m.def / m.impl) linked
// through the call graph of the extension's files (the binding's .cpp, the
// .cu files that define what it calls) to the kernels launched.
#pragma once

#include "frontend/cuda/cuda_frontend.h"

#include <optional>
#include <string>
#include <vector>

namespace shardproof::frontend::cuda {

struct ReachedKernel {
  std::string kernel;
  ir::SourceLoc launch;         // the <<<...>>> that launches it
  std::vector<std::string> via; // the functions from the bound one to the launcher
};

struct ExtensionFunction {
  ExtensionBinding binding;
  std::optional<ir::SourceLoc> defined_at; // the bound function's definition
  std::vector<ReachedKernel> kernels;
  // Functions it reaches that the files declare but none defines (their .cu
  // was not given): the kernels behind them are unknown.
  std::vector<std::string> undefined;
};

// Every Python-visible function the files' registrations declare, in the
// order they are registered. An operator's schema (m.def) and its
// implementation (m.impl) are one function; a schema no file implements is
// listed with no function.
std::vector<ExtensionFunction> link_extensions(const std::vector<FileListing> &files);

} // namespace shardproof::frontend::cuda
