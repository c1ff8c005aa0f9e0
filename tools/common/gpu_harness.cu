// tools/common/gpu_harness.cu — the device code of gpu_harness.cuh: random fill, the error norm and the
// float64-accumulating reference GEMM, with their typed launchers.
#include "gpu_harness_kernels.hpp"

namespace ktune::tools {
namespace detail {

template <class T> __device__ __forceinline__ T from_f(float v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <class T> __device__ __forceinline__ float to_f(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// Uniform magnitudes in [1/16, 1) with random sign: never zero, exactly representable ranges in
// every type, and sums over K stay far from fp16 overflow.
template <class T>
__global__ void fill_random_kernel(T* p, std::int64_t n, std::uint64_t seed) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t h = splitmix64(seed ^ (std::uint64_t(i) * 0xD1B54A32D192ED03ull));
    const float mag = 0.0625f + 0.9375f * float(h >> 40) * (1.0f / 16777216.0f);
    p[i] = from_f<T>((h & 1u) ? -mag : mag);
  }
}

// out[0] += Σ (x − ref)², out[1] += Σ ref², out[2] += count of non-finite x or ref.
template <class T, class R>
__global__ void diff_norm_kernel(const T* x, const R* ref, std::int64_t n, double* out) {
  double d = 0.0, r = 0.0, bad = 0.0;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double a = to_f(x[i]), b = to_f(ref[i]);
    if (!isfinite(a) || !isfinite(b)) bad += 1.0;
    d += (a - b) * (a - b);
    r += b * b;
  }
  for (int o = 16; o > 0; o /= 2) {
    d += __shfl_down_sync(0xffffffffu, d, o);
    r += __shfl_down_sync(0xffffffffu, r, o);
    bad += __shfl_down_sync(0xffffffffu, bad, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(out + 0, d);
    atomicAdd(out + 1, r);
    atomicAdd(out + 2, bad);
  }
}

// Straightforward shared-memory-tiled GEMM with float64 accumulation: the independent check of the
// cuBLAS reference (and of the layout mapping). D32 is M×N row-major fp32: relu(A·B + bias) if asked.
template <class T, class TB>
__global__ void reference_gemm_kernel(int m, int n, int k, const T* A, std::int64_t lda, bool a_row, const T* B,
                                      std::int64_t ldb, bool b_row, const TB* bias, bool relu, float* D32) {
  __shared__ float As[16][17];
  __shared__ float Bs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  double acc = 0.0;
  for (int k0 = 0; k0 < k; k0 += 16) {
    const int ar = blockIdx.y * 16 + ty, ak = k0 + tx;
    As[ty][tx] = (ar < m && ak < k) ? to_f(a_row ? A[std::int64_t(ar) * lda + ak] : A[std::int64_t(ak) * lda + ar]) : 0.0f;
    const int bk = k0 + ty, bc = blockIdx.x * 16 + tx;
    Bs[ty][tx] = (bk < k && bc < n) ? to_f(b_row ? B[std::int64_t(bk) * ldb + bc] : B[std::int64_t(bc) * ldb + bk]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) acc += double(As[ty][kk]) * double(Bs[kk][tx]);
    __syncthreads();
  }
  if (row < m && col < n) {
    float v = static_cast<float>(acc);
    if (bias != nullptr) v += to_f(bias[col]);
    if (relu) v = fmaxf(v, 0.0f);
    D32[std::int64_t(row) * n + col] = v;
  }
}

}  // namespace detail

Status fill_random(void* p, DType t, std::int64_t n, std::uint64_t seed, cudaStream_t s) {
  return detail::with_type(t, [&](auto tag) {
    using T = decltype(tag);
    detail::fill_random_kernel<T><<<detail::grid_for(n), 256, 0, s>>>(static_cast<T*>(p), n, seed);
    return cuda_status(cudaGetLastError(), "fill_random_kernel launch");
  });
}

namespace detail {

Status launch_diff_norm(const void* x, DType tx, const void* ref, DType tr, std::int64_t n, double* acc, cudaStream_t s) {
  return with_type(tx, [&](auto xt) {
    return with_type(tr, [&](auto rt) {
      using X = decltype(xt);
      using R = decltype(rt);
      diff_norm_kernel<X, R><<<grid_for(n), 256, 0, s>>>(static_cast<const X*>(x), static_cast<const R*>(ref), n, acc);
      return cuda_status(cudaGetLastError(), "diff_norm_kernel launch");
    });
  });
}

Status launch_reference_gemm(const GemmDesc& d, const void* a, const void* b, const void* bias, bool relu, float* out,
                             cudaStream_t s) {
  return with_type(d.ab_type, [&](auto tag) {
    return with_type(d.d_type, [&](auto btag) {
      using T = decltype(tag);
      using TB = decltype(btag);
      const dim3 block(16, 16);
      const dim3 grid(static_cast<unsigned>((d.n + 15) / 16), static_cast<unsigned>((d.m + 15) / 16));
      reference_gemm_kernel<T, TB><<<grid, block, 0, s>>>(
          static_cast<int>(d.m), static_cast<int>(d.n), static_cast<int>(d.k), static_cast<const T*>(a), d.lda,
          d.a_layout == Layout::row, static_cast<const T*>(b), d.ldb, d.b_layout == Layout::row,
          static_cast<const TB*>(bias), relu, out);
      return cuda_status(cudaGetLastError(), "reference_gemm_kernel launch");
    });
  });
}

}  // namespace detail
}  // namespace ktune::tools
