// ktune/gemm/kernel/params.cuh — what a GEMM kernel receives, and its element types.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ktune/gemm/kernel/schedule.cuh"
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
  // Split-K (split_k > 1; see gemm/split_k.hpp): slice s = blockIdx.y stores its fp32 partial tile at
  // partials + s·partial_slice (rows partial_ld apart). Serial mode: the last slice to arrive at a
  // tile (semaphores[tile], zeroed before the launch) adds the slices in order and applies the epilogue.
  int split_k;       // ≤ 1: no split
  bool split_serial;
  int split_cluster;  // > 1: cluster mode (cluster_split_k.cuh), CTAs per cluster along grid y
  float* partials;
  std::int64_t partial_ld, partial_slice;
  int* semaphores;
  // Stream-K (sm90; schedule.cuh): the work walk, and where split tiles' pieces go: partials holds one
  // fp32 warpgroup sub-tile per (CTA, sub-tile) (rows partial_ld apart), semaphores one flag each.
  bool stream_k = false;
  StreamKSchedule sk{};
};

template <DType T> struct element;
template <> struct element<DType::f32> { using type = float; };
template <> struct element<DType::f16> { using type = __half; };
template <> struct element<DType::bf16> { using type = __nv_bfloat16; };
template <DType T> using element_t = typename element<T>::type;

}  // namespace ktune::kernel
