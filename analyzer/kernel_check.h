// `shardproof check FILE.cu`: every annotated kernel launch of the file
// (frontend/cuda/annotations.h) is lifted by the CUDA frontend, its
// reference expression is evaluated by the Python frontend on the stand-in
// torch, and the two are proved equal by the prover. The two frontends never
// see each other: they meet here, in the shared term store (the reference's
// input variables are the kernel's buffer contents).
#pragma once

#include "analyzer/session.h"
#include "frontend/cuda/cuda_frontend.h"

#include <string>
#include <vector>

namespace shardproof::analyzer {

// Whether the target is a CUDA source (.cu, .cuh) for check_kernels.
bool is_cuda_target(const Target &target);

// One result per annotated launch (target.function names its kernel); one
// error result when the annotations are malformed or there are none.
std::vector<TargetResult> check_kernels(const Target &target,
                                        const SessionOptions &options,
                                        const frontend::cuda::ParseOptions &parse);

} // namespace shardproof::analyzer
