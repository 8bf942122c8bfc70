// shardproof's own CUDA device declarations for parsing without a toolkit
// (-nocudainc -nocudalib): what kernels use, declared so that clang 19
// accepts them. The lifter intercepts these functions by name; their bodies
// (clang builtins) are never read. Names glibc or libstdc++ already declare
// for the host (expf, std::exp) are given as __device__ overloads only:
// __host__ __device__ redeclarations of them are errors in clang.
#pragma once

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict

// The toolkit's version macros (cuda.h, cuda_runtime_api.h) as CUDA 12.0
// gives them, matching __CUDACC_VER_MAJOR__: code that picks the sync
// shuffles by `#if CUDA_VERSION >= 9000` is read as nvcc compiles it.
#define CUDA_VERSION 12000
#define CUDART_VERSION 12000

#include <stddef.h>
#include <stdlib.h> // before any <new>: clang's cuda_wrappers/new uses ::malloc

// Complete before clang's builtin variables, which forward-declare them.
struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1,
                                     unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ constexpr operator uint3() const { return uint3{x, y, z}; }
};

#include <__clang_cuda_builtin_vars.h>

struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
struct int2 {
  int x, y;
};
struct int4 {
  int x, y, z, w;
};
struct uint2 {
  unsigned int x, y;
};
struct uint4 {
  unsigned int x, y, z, w;
};
// The vector constructors of vector_functions.h.
static __host__ __device__ inline float2 make_float2(float x, float y) { return {x, y}; }
static __host__ __device__ inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
static __host__ __device__ inline int2 make_int2(int x, int y) { return {x, y}; }
static __host__ __device__ inline int4 make_int4(int x, int y, int z, int w) {
  return {x, y, z, w};
}
static __host__ __device__ inline uint2 make_uint2(unsigned int x, unsigned int y) {
  return {x, y};
}
static __host__ __device__ inline uint4 make_uint4(unsigned int x, unsigned int y,
                                                   unsigned int z, unsigned int w) {
  return {x, y, z, w};
}

typedef struct CUstream_st *cudaStream_t;
struct cudaDeviceProp {
  int maxGridSize[3];
  int maxThreadsDim[3];
  int maxThreadsPerBlock;
  int multiProcessorCount;
  int maxThreadsPerMultiProcessor;
  int warpSize;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int major, minor;
};
typedef enum cudaError { cudaSuccess = 0, cudaErrorUnknown = 999 } cudaError_t;
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};
extern "C" cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
extern "C" cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr,
                                              int device);
// The pre-9.2 launch API that clang looks up for <<<...>>> with -nocudainc.
extern "C" int cudaConfigureCall(dim3 grid, dim3 block, size_t shared = 0,
                                 cudaStream_t stream = 0);
extern "C" cudaError_t cudaGetLastError(void);

#define __SP_DEVICE static __device__ __inline__
// Barriers and warp intrinsics (__syncthreads is a clang builtin).
__SP_DEVICE void __syncwarp(unsigned mask = 0xffffffffu) {}
__SP_DEVICE void __threadfence() {}
__SP_DEVICE void __threadfence_block() {}
__SP_DEVICE void __threadfence_system() {}
#define __SP_SHUFFLE(T)                                                                  \
  __SP_DEVICE T __shfl_sync(unsigned mask, T var, int src, int width = 32) {             \
    return var;                                                                          \
  }                                                                                      \
  __SP_DEVICE T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {   \
    return var;                                                                          \
  }                                                                                      \
  __SP_DEVICE T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) { \
    return var;                                                                          \
  }                                                                                      \
  __SP_DEVICE T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {   \
    return var;                                                                          \
  }
__SP_SHUFFLE(float)
__SP_SHUFFLE(double)
__SP_SHUFFLE(int)
__SP_SHUFFLE(unsigned)
#undef __SP_SHUFFLE
__SP_DEVICE int __all_sync(unsigned mask, int predicate) { return predicate; }
__SP_DEVICE int __any_sync(unsigned mask, int predicate) { return predicate; }
__SP_DEVICE unsigned __ballot_sync(unsigned mask, int predicate) { return 0; }
__SP_DEVICE unsigned __activemask() { return 0xffffffffu; }

// Atomics.
__SP_DEVICE float atomicAdd(float *address, float value) { return *address; }
__SP_DEVICE int atomicAdd(int *address, int value) { return *address; }
__SP_DEVICE float atomicMax(float *address, float value) { return *address; }
__SP_DEVICE int atomicMax(int *address, int value) { return *address; }
__SP_DEVICE int atomicCAS(int *address, int compare, int value) { return *address; }
__SP_DEVICE int atomicExch(int *address, int value) { return *address; }

// Single-precision math as device overloads of the host names.
#define __SP_UNARY(name, builtin)                                                        \
  __SP_DEVICE float name(float x) { return builtin(x); }
__SP_UNARY(expf, __builtin_expf)
__SP_UNARY(__expf, __builtin_expf)
__SP_UNARY(logf, __builtin_logf)
__SP_UNARY(__logf, __builtin_logf)
__SP_UNARY(sqrtf, __builtin_sqrtf)
__SP_UNARY(rsqrtf, 1.0f / __builtin_sqrtf)
__SP_UNARY(rsqrt, 1.0f / __builtin_sqrtf)
__SP_UNARY(tanhf, __builtin_tanhf)
__SP_UNARY(erff, __builtin_erff)
__SP_UNARY(sinf, __builtin_sinf)
__SP_UNARY(cosf, __builtin_cosf)
__SP_UNARY(__sinf, __builtin_sinf)
__SP_UNARY(__cosf, __builtin_cosf)
__SP_UNARY(fabsf, __builtin_fabsf)
#undef __SP_UNARY
__SP_DEVICE void sincosf(float x, float *s, float *c) {
  *s = __builtin_sinf(x);
  *c = __builtin_cosf(x);
}
// std:: spellings of the same (apex's std::exp on float accumulators).
namespace std {
#define __SP_UNARY(name, builtin)                                                        \
  __SP_DEVICE float name(float x) { return builtin(x); }
__SP_UNARY(exp, __builtin_expf)
__SP_UNARY(log, __builtin_logf)
__SP_UNARY(sqrt, __builtin_sqrtf)
__SP_UNARY(tanh, __builtin_tanhf)
__SP_UNARY(erf, __builtin_erff)
__SP_UNARY(sin, __builtin_sinf)
__SP_UNARY(cos, __builtin_cosf)
__SP_UNARY(fabs, __builtin_fabsf)
#undef __SP_UNARY
} // namespace std
__SP_DEVICE float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__SP_DEVICE float fminf(float a, float b) { return __builtin_fminf(a, b); }
__SP_DEVICE float fmaf(float a, float b, float c) { return a * b + c; }
__SP_DEVICE float __fdividef(float a, float b) { return a / b; }
__SP_DEVICE float __frcp_rn(float a) { return 1.0f / a; }
__SP_DEVICE float __frsqrt_rn(float a) { return 1.0f / __builtin_sqrtf(a); }
__SP_DEVICE float __fsqrt_rn(float a) { return __builtin_sqrtf(a); }
// A shared pointer's address in the shared window, for inline PTX's
// ld.shared / st.shared (the lifter keeps it the pointer it was).
__device__ size_t __cvta_generic_to_shared(const void *ptr);
__SP_DEVICE int min(int a, int b) { return a < b ? a : b; }
__SP_DEVICE int max(int a, int b) { return a > b ? a : b; }

extern "C" __device__ void __assertfail(const char *message, const char *file,
                                        unsigned line, const char *function,
                                        size_t char_size);
#undef __SP_DEVICE
