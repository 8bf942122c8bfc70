// shardproof's stand-in for ATen/cuda/CUDAContext.h (see ATen/ATen.h).
#pragma once
#include <ATen/ATen.h>
namespace at::cuda {
struct CUDAStream {
  cudaStream_t stream() const;
  operator cudaStream_t() const;
};
CUDAStream getCurrentCUDAStream(int device = -1);
cudaDeviceProp *getCurrentDeviceProperties();
} // namespace at::cuda
