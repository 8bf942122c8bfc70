// Profiles of common kernels (issue 13): a kernel recognised by its name and
// parameters (apex's and Megatron's fused softmax kernels, the fused rotary
// embedding, DeepSpeed's bias-GeLU) is checked without annotations. Its
// profile gives the PyTorch expression the output must equal (with the
// kernel's documented special cases) and completes a launch of it: either
// the profile's own reduced launch, which mirrors the host code that
// launches the kernel upstream, or the launch a host dispatcher of the file
// makes (host.h), given the template arguments, grid, block and integer
// arguments it chose.
#pragma once

#include "frontend/cuda/annotations.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::frontend::cuda {

// A __global__ function of the file (or a header beside it), as declared.
struct KernelSignature {
  std::string name;
  ir::SourceLoc loc;
  std::vector<std::string> template_params; // their names, in order
  std::vector<std::string> params;          // the parameters' names, in order
};

// What a host chooses for a launch: template arguments (as C++ spells
// them), grid, block, dynamic shared memory, and the integer arguments by
// the kernel's parameter names.
struct HostChoice {
  std::vector<std::string> template_args;
  std::array<int, 3> grid{1, 1, 1}, block{1, 1, 1};
  int shared_bytes = 0;
  std::map<std::string, std::int64_t> ints;
  // A host dispatcher's own integer arguments (rows, sizes), by its
  // parameters' names; empty for a profile's own launch.
  std::map<std::string, std::int64_t> host_ints;
};

class KernelProfile {
public:
  virtual ~KernelProfile() = default;
  // "apex scaled masked softmax (forward)"
  virtual std::string name() const = 0;
  virtual bool matches(const KernelSignature &kernel) const = 0;
  // The launches the profile checks when no host code of the file launches
  // the kernel: reduced sizes chosen as the upstream host code would.
  virtual std::vector<HostChoice> own_launches(const KernelSignature &kernel) const = 0;
  // The launch with its buffers, scalars and reference, for a host's
  // choice; nullopt (with `why`) when the choice leaves a buffer's shape
  // unknown to the profile.
  virtual std::optional<KernelLaunch> complete(const KernelSignature &kernel,
                                               const HostChoice &choice,
                                               std::string &why) const = 0;
};

// Every profile, in the order they are tried.
const std::vector<const KernelProfile *> &kernel_profiles();
// The profile of `kernel`, or null.
const KernelProfile *profile_for(const KernelSignature &kernel);

} // namespace shardproof::frontend::cuda
