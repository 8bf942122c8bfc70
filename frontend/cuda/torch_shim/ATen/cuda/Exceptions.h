// shardproof's stand-in for ATen/cuda/Exceptions.h (see ATen/ATen.h): the
// checks of a CUDA call's status, which the kernel check does not run.
#pragma once
#include <ATen/ATen.h>
#define AT_CUDA_CHECK(EXPR) ((void)(EXPR))
#define C10_CUDA_CHECK(EXPR) ((void)(EXPR))
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
#define TORCH_CUDABLAS_CHECK(EXPR) ((void)(EXPR))
