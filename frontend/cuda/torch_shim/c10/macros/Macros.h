// shardproof's stand-in for c10/macros/Macros.h (see ATen/ATen.h).
#pragma once
#define C10_WARP_SIZE 32
#define C10_HOST_DEVICE __host__ __device__
#define C10_DEVICE __device__
#define C10_HOST __host__
#define C10_LIKELY(x) (x)
#define C10_UNLIKELY(x) (x)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
#define C10_CUDA_CHECK(expr) ((void)(expr))
