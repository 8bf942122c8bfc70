// shardproof stand-in (see ATen/ATen.h): PyTorch's CUDA streams.
#pragma once
#include <ATen/cuda/CUDAContext.h>
namespace c10::cuda {
using at::cuda::CUDAStream;
using at::cuda::getCurrentCUDAStream;
} // namespace c10::cuda
