// test/gpu/test_kernels.cu — the device code of the GPU tests (random fill, float64 reference GEMM,
// declared in test_util.cuh; the repack copy and a spinning kernel, declared where they are used). Every
// other GPU-test file is host code compiled by g++ (see CMakeLists.txt).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpu/test_kernels.hpp"
#include "ktune/gemm/route/repack.cuh"

namespace kt {

template <class T> __device__ inline T from_double(double v);
template <> __device__ inline float from_double<float>(double v) { return static_cast<float>(v); }
template <> __device__ inline __half from_double<__half>(double v) { return __double2half(v); }
template <> __device__ inline __nv_bfloat16 from_double<__nv_bfloat16>(double v) { return __double2bfloat16(v); }
template <class T> __device__ inline double to_double(T v) { return static_cast<double>(static_cast<float>(v)); }
template <> __device__ inline double to_double<float>(float v) { return v; }

// Fill the data of a (packed or padded) matrix with nonzero_uniform(hash(seed, element)).
template <class T>
__global__ void fill_random_kernel(T* p, std::int64_t lines, std::int64_t contiguous, std::int64_t ld,
                                   std::uint64_t seed) {
  const std::int64_t n = lines * contiguous;
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < n;
       e += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t line = e / contiguous, pos = e % contiguous;
    p[line * ld + pos] = from_double<T>(nonzero_uniform(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(e)))));
  }
}

// out[i·N + j] = Σ_k A(i,k)·B(k,j) in float64. A(i,k) = A[i·a_si + k·a_sk], B(k,j) = B[k·b_sk + j·b_sj].
template <class T>
__global__ void reference_gemm_f64_kernel(int M, int N, int K, const T* A, std::int64_t a_si, std::int64_t a_sk,
                                          const T* B, std::int64_t b_sk, std::int64_t b_sj, double* out) {
  __shared__ double As[16][17];
  __shared__ double Bs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.y * 16 + ty, j = blockIdx.x * 16 + tx;
  double acc = 0.0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ka = k0 + tx, kb = k0 + ty;
    As[ty][tx] = (i < M && ka < K) ? to_double(A[i * a_si + ka * a_sk]) : 0.0;
    Bs[ty][tx] = (kb < K && j < N) ? to_double(B[kb * b_sk + j * b_sj]) : 0.0;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) acc += As[ty][kk] * Bs[kk][tx];
    __syncthreads();
  }
  if (i < M && j < N) out[static_cast<std::int64_t>(i) * N + j] = acc;
}

// Typed launchers by DType.
void fill_random(DType t, void* p, std::int64_t lines, std::int64_t contiguous, std::int64_t ld,
                        std::uint64_t seed) {
  const int blocks = 2048, threads = 256;
  switch (t) {
    case DType::f32: fill_random_kernel<<<blocks, threads>>>(static_cast<float*>(p), lines, contiguous, ld, seed); break;
    case DType::f16: fill_random_kernel<<<blocks, threads>>>(static_cast<__half*>(p), lines, contiguous, ld, seed); break;
    case DType::bf16:
      fill_random_kernel<<<blocks, threads>>>(static_cast<__nv_bfloat16*>(p), lines, contiguous, ld, seed);
      break;
  }
  KT_CUDA(cudaGetLastError());
}

// float64 reference of A·B for a problem already in device memory (resolved leading dimensions).
void reference_gemm_gpu(const GemmDesc& d0, const void* A, const void* B, double* out) {
  const GemmDesc d = resolved(d0);
  const bool ar = d.a_layout == Layout::row, br = d.b_layout == Layout::row;
  const std::int64_t a_si = ar ? d.lda : 1, a_sk = ar ? 1 : d.lda;
  const std::int64_t b_sk = br ? d.ldb : 1, b_sj = br ? 1 : d.ldb;
  const dim3 block(16, 16), grid(static_cast<unsigned>((d.n + 15) / 16), static_cast<unsigned>((d.m + 15) / 16));
  const int M = static_cast<int>(d.m), N = static_cast<int>(d.n), K = static_cast<int>(d.k);
  switch (d.ab_type) {
    case DType::f32:
      reference_gemm_f64_kernel<<<grid, block>>>(M, N, K, static_cast<const float*>(A), a_si, a_sk,
                                                 static_cast<const float*>(B), b_sk, b_sj, out);
      break;
    case DType::f16:
      reference_gemm_f64_kernel<<<grid, block>>>(M, N, K, static_cast<const __half*>(A), a_si, a_sk,
                                                 static_cast<const __half*>(B), b_sk, b_sj, out);
      break;
    case DType::bf16:
      reference_gemm_f64_kernel<<<grid, block>>>(M, N, K, static_cast<const __nv_bfloat16*>(A), a_si, a_sk,
                                                 static_cast<const __nv_bfloat16*>(B), b_sk, b_sj, out);
      break;
  }
  KT_CUDA(cudaGetLastError());
}

// route_test.cu: the repack copy on its own (ktune/gemm/route/repack.cuh holds the kernel).
Status launch_repack_copy(const route::RepackPlan& plan, const void* a, const void* b, void* workspace,
                          cudaStream_t stream) {
  return route::launch_repack(plan, a, b, workspace, stream);
}

namespace {
// Spins on one thread until *flag becomes non-zero or `timeout_ns` passed; writes 1 (saw the flag) or 0.
__global__ void spin_until_flag_kernel(const volatile int* flag, unsigned long long timeout_ns, int* result) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  int seen = 0;
  do {
    if (*flag != 0) {
      seen = 1;
      break;
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < timeout_ns);
  *result = seen;
}
}  // namespace

// concurrency_test.cu: a one-thread kernel on `stream` that keeps it busy until the host sets *flag.
void launch_spin_until_flag(const volatile int* flag, unsigned long long timeout_ns, int* result, cudaStream_t stream) {
  spin_until_flag_kernel<<<1, 1, 0, stream>>>(flag, timeout_ns, result);
}

}  // namespace kt
