// Reverses rows of 32 through shared memory (and scales them by
// 1/sqrt(v*v + 1) with __frsqrt_rn), reading the tile back with
// inline PTX as DeepSpeed's mem_access::load_shared does: the address is
// converted to the shared window (__cvta_generic_to_shared) and loaded with
// ld.shared into the register `v` through its address. The branch is the
// one nvcc 11 and later compile.
#include <cuda_runtime.h>

__device__ void load_shared_word(void *dst, const void *src) {
  unsigned *data = reinterpret_cast<unsigned *>(dst);
#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 11
  unsigned src_shr = static_cast<unsigned>(__cvta_generic_to_shared(src));
  asm volatile("ld.shared.u32 {%0}, [%1];\n" : "=r"(*data) : "r"(src_shr));
#else
  *data = 0; // what an older nvcc would compile: not this kernel's path
#endif
}

// shardproof: launch reverse_rows grid=(2) block=(32)
// shardproof: arg x = float32[2,32]
// shardproof: arg out = float32[2,32]
// shardproof: reference out = x[:, torch.arange(31, -1, -1)] * torch.rsqrt(x[:, torch.arange(31, -1, -1)] ** 2 + 1)
__global__ void reverse_rows(const float *x, float *out) {
  __shared__ float tile[32];
  int tid = threadIdx.x;
  tile[tid] = x[blockIdx.x * 32 + tid];
  __syncthreads();
  float v;
  load_shared_word(&v, &tile[31 - tid]);
  out[blockIdx.x * 32 + tid] = v * __frsqrt_rn(v * v + 1.0f);
}
