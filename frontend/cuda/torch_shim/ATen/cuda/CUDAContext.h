// shardproof's stand-in for ATen/cuda/CUDAContext.h (see ATen/ATen.h).
#pragma once
#include <ATen/ATen.h>
struct cublasContext; // as cublas_api.h declares it
typedef struct cublasContext *cublasHandle_t;
namespace at::cuda {
struct CUDAStream {
  cudaStream_t stream() const;
  operator cudaStream_t() const;
};
CUDAStream getCurrentCUDAStream(int device = -1);
CUDAStream getStreamFromPool(bool high_priority = false, int device = -1);
cudaDeviceProp *getCurrentDeviceProperties();
::cublasHandle_t getCurrentCUDABlasHandle();
} // namespace at::cuda
