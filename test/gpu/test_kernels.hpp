// test/gpu/test_kernels.hpp — what the GPU tests' device code (test_kernels.cu, the one nvcc TU among them)
// shares with test_util.cuh, which includes this: KT_CUDA, the deterministic random numbers, and the
// declarations of the random fill and the float64 reference GEMM. Apart so that nvcc's front end and
// host pass over test_kernels.cu do not parse ktune/gemm.hpp and the rest of test_util.cuh.
#pragma once
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "ktune/problem.hpp"
#include "ktune/types.hpp"

namespace kt {
using namespace ktune;

#define KT_CUDA(expr)                                                                              \
  do {                                                                                             \
    const cudaError_t kt_err_ = (expr);                                                            \
    REQUIRE_MESSAGE(kt_err_ == cudaSuccess, #expr << ": " << std::string(cudaGetErrorName(kt_err_)) \
                                                  << " (" << std::string(cudaGetErrorString(kt_err_)) \
                                                  << ")");                                         \
  } while (0)

// ---- Random numbers (deterministic, identical on every machine) ---------------------------------

__host__ __device__ inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-1, -1e-3] ∪ [1e-3, 1] (non-zero: no element can hide a missing term).
__host__ __device__ inline double nonzero_uniform(std::uint64_t bits) {
  const double u = static_cast<double>(bits >> 12) * 0x1.0p-52;  // [0, 1)
  const double mag = 1e-3 + u * (1.0 - 1e-3);
  return (bits & 1) ? -mag : mag;
}

// ---- GPU side: random fill and a float64 reference for large shapes (test_kernels.cu) -----------

// Fill the data of a (packed or padded) matrix with nonzero_uniform(hash(seed, element)).
void fill_random(DType t, void* p, std::int64_t lines, std::int64_t contiguous, std::int64_t ld, std::uint64_t seed);

// float64 reference of A·B (out: M×N row-major) for a problem already in device memory.
void reference_gemm_gpu(const GemmDesc& d, const void* A, const void* B, double* out);

}  // namespace kt
