// Empty on purpose: CUDA 13 no longer ships this header, which clang 19's
// __clang_cuda_runtime_wrapper.h still includes (shared BUILD-NOTES).
#pragma once
