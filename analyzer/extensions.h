// `shardproof bindings PATH...` (issue 13): the functions PyTorch extensions
// expose to Python (pybind11, TORCH_LIBRARY) and the kernels each runs,
// linked across the extension's files; and, for the Python frontend, the
// functions of one extension built from given sources.
#pragma once

#include "frontend/cuda/bindings.h"
#include "frontend/frontend.h"

#include <string>
#include <vector>

namespace shardproof::analyzer {

struct ExtensionListing {
  std::vector<frontend::cuda::ExtensionFunction> functions;
  // A file clang could not parse (its registrations and calls are unknown).
  std::vector<frontend::cuda::Diagnostic> errors;
};

// The C++/CUDA sources under `paths` (files, or folders searched for .cpp,
// .cc, .cu and .cuh), each parsed as kernel_check parses it.
ExtensionListing list_extensions(const std::vector<std::string> &paths,
                                 const frontend::cuda::ParseOptions &parse);

// One line per function ("MODULE.NAME (FILE:LINE) -> FUNCTION -> ...:
// kernels K (FILE:LINE)"), then the parse errors; or the same as JSON.
std::string render_extensions(const ExtensionListing &listing, bool json);

// What the Python frontend's torch.utils.cpp_extension.load(name, sources)
// builds: the pybind11 functions its sources register for module `name`
// (TORCH_EXTENSION_NAME, which load defines so), read with the toolkit's
// headers at `cuda_path` (unset: shardproof's own), and calls of them; an
// error when a source cannot be parsed.
frontend::ExtensionResolver extension_resolver(std::optional<std::string> cuda_path);

} // namespace shardproof::analyzer
