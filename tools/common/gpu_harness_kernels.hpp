// tools/common/gpu_harness_kernels.hpp — the part of gpu_harness.cuh that its kernels' TU (gpu_harness.cu)
// needs: the launchers' declarations and the helpers they share with the host code. Kept apart so that
// nvcc's front end and host pass over gpu_harness.cu do not parse cuBLAS and ktune/gemm.hpp (16.6 s of CPU
// for the TU with them).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ktune/device.hpp"
#include "ktune/problem.hpp"
#include "ktune/status.hpp"
#include "ktune/types.hpp"

namespace ktune::tools {

// ---- Random data, error norm, reference GEMM ----------------------------------------------------------
// The kernels are in gpu_harness.cu (one nvcc TU), so the tools and tests that include gpu_harness.cuh are
// host code that g++ compiles.

namespace detail {

__host__ __device__ inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class F>
Status with_type(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
  }
  return error(StatusCode::internal, "unknown dtype");
}

inline int grid_for(std::int64_t n) { return static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 132 * 16)); }

}  // namespace detail

// n elements of type t at p: uniform magnitudes in [1/16, 1) with random sign (never zero).
Status fill_random(void* p, DType t, std::int64_t n, std::uint64_t seed, cudaStream_t s);

namespace detail {
// acc[0] += Σ (x − ref)², acc[1] += Σ ref², acc[2] += count of non-finite values (acc: 3 doubles, device).
Status launch_diff_norm(const void* x, DType tx, const void* ref, DType tr, std::int64_t n, double* acc, cudaStream_t s);
// out (M×N row-major fp32, packed) = [relu](A·B [+ bias]) accumulated in float64; bias of type d.d_type.
Status launch_reference_gemm(const GemmDesc& d, const void* a, const void* b, const void* bias, bool relu, float* out,
                             cudaStream_t s);
}  // namespace detail

}  // namespace ktune::tools
