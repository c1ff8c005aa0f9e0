// ktune/gemm/kernel/params.cuh — what a GEMM kernel receives, and its element types.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ktune/types.hpp"

namespace ktune::kernel {

template <class EpiParams>
struct GemmParams {
  int m, n, k;
  const void* a;
  std::int64_t lda;
  const void* b;
  std::int64_t ldb;
  void* d;
  std::int64_t ldd;
  DType d_type;
  bool d_vec4;      // D (and C, bias, residual) allow 4-element vector accesses
  int raster_group;  // tile-rows per raster group (L2 locality)
  EpiParams ep;
};

template <DType T> struct element;
template <> struct element<DType::f32> { using type = float; };
template <> struct element<DType::f16> { using type = __half; };
template <> struct element<DType::bf16> { using type = __nv_bfloat16; };
template <DType T> using element_t = typename element<T>::type;

}  // namespace ktune::kernel
