// Layer and RMS norm dividing the sum of squares by n2 - 1 (a twin,
// written for these tests): the unbiased variance, which layer norm
// does not use.
#include <cuda_runtime.h>

template <typename T> struct SharedMemory;

template <> struct SharedMemory<float> {
  __device__ float *getPointer() {
    extern __shared__ float s_float[];
    return s_float;
  }
};

template <typename U>
__device__ void cuWelfordOnlineSum(const U curr, U &mu, U &sigma2, U &count) {
  count = count + U(1);
  U delta = curr - mu;
  U lmean = mu + delta / count;
  mu = lmean;
  U delta2 = curr - lmean;
  sigma2 = sigma2 + delta * delta2;
}

template <typename U>
__device__ void cuChanOnlineSum(const U muB, const U sigma2B, const U countB, U &mu,
                                U &sigma2, U &count) {
  U delta = muB - mu;
  U nA = count;
  U nB = countB;
  count = count + countB;
  U nX = count;
  if (nX > U(0)) {
    nA = nA / nX;
    nB = nB / nX;
    mu = nA * mu + nB * muB;
    sigma2 = sigma2 + sigma2B + delta * delta * nA * nB * nX;
  } else {
    mu = U(0);
    sigma2 = U(0);
  }
}

template <typename T, typename U>
__device__ void cuWelfordMuSigma2(const T *vals, const int n1, const int n2, const int i1,
                                  U &mu, U &sigma2, U *buf, bool rms_only) {
  U count = U(0);
  mu = U(0);
  sigma2 = U(0);
  if (i1 >= n1)
    return;
  const int numx = blockDim.x * blockDim.y;
  const int thrx = threadIdx.x + threadIdx.y * blockDim.x;
  const T *lvals = vals + i1 * n2;
  for (int l = thrx; l < n2; l += numx) {
    U curr = static_cast<U>(lvals[l]);
    if (!rms_only)
      cuWelfordOnlineSum<U>(curr, mu, sigma2, count);
    else
      sigma2 = sigma2 + curr * curr;
  }
  // Across the warp: each lane combines with the lane 2^l after it.
  for (int l = 0; l <= 4; ++l) {
    int src_lane = (threadIdx.x + (1 << l)) & 31;
    U sigma2B = __shfl_sync(0xffffffff, sigma2, src_lane);
    if (!rms_only) {
      U muB = __shfl_sync(0xffffffff, mu, src_lane);
      U countB = __shfl_sync(0xffffffff, count, src_lane);
      cuChanOnlineSum<U>(muB, sigma2B, countB, mu, sigma2, count);
    } else {
      sigma2 = sigma2 + sigma2B;
    }
  }
  // Across the warps of the block: halving, through shared memory.
  if (blockDim.y > 1) {
    U *ubuf = buf;
    U *ibuf = ubuf + blockDim.y;
    for (int offset = blockDim.y / 2; offset > 0; offset /= 2) {
      if (threadIdx.x == 0 && threadIdx.y >= offset && threadIdx.y < 2 * offset) {
        const int wrt_y = threadIdx.y - offset;
        if (!rms_only) {
          ubuf[2 * wrt_y] = mu;
          ibuf[wrt_y] = count;
        }
        ubuf[2 * wrt_y + 1] = sigma2;
      }
      __syncthreads();
      if (threadIdx.x == 0 && threadIdx.y < offset) {
        U sigma2B = ubuf[2 * threadIdx.y + 1];
        if (!rms_only) {
          U muB = ubuf[2 * threadIdx.y];
          U countB = ibuf[threadIdx.y];
          cuChanOnlineSum<U>(muB, sigma2B, countB, mu, sigma2, count);
        } else {
          sigma2 = sigma2 + sigma2B;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      if (!rms_only)
        ubuf[0] = mu;
      ubuf[1] = sigma2;
    }
    __syncthreads();
    if (!rms_only)
      mu = ubuf[0];
    sigma2 = ubuf[1] / U(n2 - 1);
  } else {
    if (!rms_only)
      mu = __shfl_sync(0xffffffff, mu, 0);
    sigma2 = __shfl_sync(0xffffffff, sigma2 / U(n2), 0);
  }
}

template <typename T, typename U, typename V>
__device__ void cuApplyLayerNorm_(V *output_vals, U *mean, U *invvar, const T *vals,
                                  const int n1, const int n2, const U epsilon,
                                  const V *gamma, const V *beta, bool rms_only) {
  for (int i1 = blockIdx.y; i1 < n1; i1 += gridDim.y) {
    SharedMemory<U> shared;
    U *buf = shared.getPointer();
    U mu, sigma2;
    cuWelfordMuSigma2(vals, n1, n2, i1, mu, sigma2, buf, rms_only);
    const T *lvals = vals + i1 * n2;
    V *ovals = output_vals + i1 * n2;
    U c_invvar = rsqrt(sigma2 + epsilon);
    const int numx = blockDim.x * blockDim.y;
    const int thrx = threadIdx.x + threadIdx.y * blockDim.x;
    if (gamma != NULL && (beta != NULL || rms_only)) {
      for (int i = thrx; i < n2; i += numx) {
        U curr = static_cast<U>(lvals[i]);
        if (!rms_only)
          ovals[i] = gamma[i] * static_cast<V>(c_invvar * (curr - mu)) + beta[i];
        else
          ovals[i] = gamma[i] * static_cast<V>(c_invvar * curr);
      }
    } else {
      for (int i = thrx; i < n2; i += numx) {
        U curr = static_cast<U>(lvals[i]);
        ovals[i] = static_cast<V>(c_invvar * (rms_only ? curr : curr - mu));
      }
    }
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      if (!rms_only)
        mean[i1] = mu;
      invvar[i1] = c_invvar;
    }
    __syncthreads();
  }
}

template <typename T, typename U, typename V = T>
__global__ void cuApplyLayerNorm(V *__restrict__ output_vals, U *__restrict__ mean,
                                 U *__restrict__ invvar, const T *__restrict__ vals,
                                 const int n1, const int n2, const U epsilon,
                                 const V *__restrict__ gamma, const V *__restrict__ beta) {
  cuApplyLayerNorm_<T, U, V>(output_vals, mean, invvar, vals, n1, n2, epsilon, gamma, beta,
                             false);
}

template <typename T, typename U, typename V = T>
__global__ void cuApplyRMSNorm(V *__restrict__ output_vals, U *__restrict__ invvar,
                               const T *__restrict__ vals, const int n1, const int n2,
                               const U epsilon, const V *__restrict__ gamma) {
  cuApplyLayerNorm_<T, U, V>(output_vals, nullptr, invvar, vals, n1, n2, epsilon, gamma,
                             nullptr, true);
}
