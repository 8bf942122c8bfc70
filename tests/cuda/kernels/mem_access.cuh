// Sixteen-byte global loads and stores through uint4, in the style of
// DeepSpeed's mem_access::load_global / store_global (written for these
// tests, the C++ branch of them: no inline PTX). The predicated load gives
// zero bits where do_access is false.
#pragma once
#include <cuda_runtime.h>

namespace mem_access {
template <int bytes> __device__ void load_global(void *dst, const void *src);
template <int bytes>
__device__ void load_global(void *dst, const void *src, bool do_access);
template <int bytes> __device__ void store_global(void *dst, const void *src);

template <> __device__ void load_global<16>(void *dst, const void *src) {
  uint4 *data = reinterpret_cast<uint4 *>(dst);
  const uint4 *src_cast = reinterpret_cast<const uint4 *>(src);
  data[0] = src_cast[0];
}

template <> __device__ void load_global<16>(void *dst, const void *src, bool do_access) {
  uint4 *data = reinterpret_cast<uint4 *>(dst);
  const uint4 *src_cast = reinterpret_cast<const uint4 *>(src);
  if (do_access) {
    data[0] = src_cast[0];
  } else {
    data[0].x = 0;
    data[0].y = 0;
    data[0].z = 0;
    data[0].w = 0;
  }
}

template <> __device__ void store_global<16>(void *dst, const void *src) {
  const uint4 *data = reinterpret_cast<const uint4 *>(src);
  uint4 *dst_cast = reinterpret_cast<uint4 *>(dst);
  dst_cast[0] = data[0];
}
} // namespace mem_access
