// Inside the kernel check: what the annotated launches and the profiled
// kernels (kernel_check_profiles.cpp) share.
#pragma once

#include "analyzer/kernel_check.h"

namespace shardproof::analyzer {

// A result that failed before a proof: BadInput (the user's to fix) or
// Unsupported (could not prove, with the reason as its one obligation).
TargetResult failed(const Target &target, frontend::TraceFailure::Kind kind,
                    frontend::cuda::Diagnostic why);

// Findings of rules --select / --ignore leave out are kept apart, never
// dropped (their refutation makes the verdict "accepted", not "proved").
void apply_rule_selection(TargetResult &result, const checkers::RuleSelection &rules);

// The parse options for a file: `parse` with the flags of the file's
// compile_commands.json entry (when there is one above it) and, for a
// PyTorch extension, the defines torch.utils.cpp_extension gives nvcc.
frontend::cuda::ParseOptions build_options(const std::string &path,
                                           frontend::cuda::ParseOptions parse);

// One launch of a parsed file: reference, lift, proof (target.function is
// set to the launch's callee).
TargetResult check_launch(const Target &file, const frontend::cuda::CudaFile &parsed,
                          const frontend::cuda::KernelLaunch &launch,
                          const SessionOptions &options);

// The file's kernels that a profile recognises (frontend/cuda/profiles.h),
// each at the launches of the host dispatchers of the file that launch it,
// or else at its profile's own reduced launches; the dispatchers' sizes
// that launch nothing are SP015. Empty when no kernel is profiled.
std::vector<TargetResult>
check_profiled_kernels(const Target &target, const SessionOptions &options,
                       const frontend::cuda::ParseOptions &parse);

} // namespace shardproof::analyzer
