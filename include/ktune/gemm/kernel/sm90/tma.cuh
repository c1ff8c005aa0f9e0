// ktune/gemm/kernel/sm90/tma.cuh — tensor-memory-accelerator (TMA) loads: tensor maps made on the host
// with the driver's cuTensorMapEncodeTiled (reached through the runtime's driver entry point, so no
// -lcuda is needed), and the device-side 2D tile copy global → shared through cuda::ptx.
#pragma once
#include <cuda.h>  // CUtensorMap and its enums (types only)
#include <cuda_runtime.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <cstdint>
#include <string>

#include "ktune/device.hpp"
#include "ktune/status.hpp"
#include "ktune/types.hpp"

#if defined(__CUDA_ARCH__)
#include <cuda/ptx>
#endif

namespace ktune::kernel::sm90 {

// ---- Host -----------------------------------------------------------------------------------------

// A driver function through the runtime's entry point (so no -lcuda is needed); null where the driver
// lacks it at that version.
inline void* driver_entry_point(const char* name, int version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return p;
}

// The driver encodes a tensor map in the calling thread's current context, and a thread whose first CUDA
// call is ktune's has none until a runtime call binds the device's primary context (H200, s12: a GEMM
// from a fresh std::thread got CUresult 201, CUDA_ERROR_INVALID_CONTEXT, from cuTensorMapEncodeTiled).
// Bind it (cudaSetDevice on the thread's device: no synchronisation) where the thread has none.
inline Status bind_current_context() {
  static const auto get_current = reinterpret_cast<PFN_cuCtxGetCurrent_v4000>(driver_entry_point("cuCtxGetCurrent", 4000));
  CUcontext ctx = nullptr;
  if (get_current != nullptr && get_current(&ctx) == CUDA_SUCCESS && ctx != nullptr) return {};
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaSetDevice(device);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::cuda_error, std::string("no CUDA context for the tensor map: ") + cudaGetErrorString(e));
  }
  return {};
}

// cuTensorMapEncodeTiled, with the thread's context bound.
inline Status tensor_map_encoder(PFN_cuTensorMapEncodeTiled_v12000& out) {
  KTUNE_RETURN_IF_ERROR(bind_current_context());
  static const auto fn =
      reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(driver_entry_point("cuTensorMapEncodeTiled", 12000));
  if (fn == nullptr)
    return error(StatusCode::cuda_error, "the CUDA driver does not provide cuTensorMapEncodeTiled (needs CUDA 12 or later)");
  out = fn;
  return {};
}

// The TMA swizzle of a k-tile row of `row_bytes` (the mainloop's layout: 128-byte rows, or 64-byte ones).
inline CUtensorMapSwizzle tma_swizzle_for_row(std::uint32_t row_bytes) {
  return row_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
}

// A 2D tensor map over a matrix of f16, bf16 or f32 elements: `inner` contiguous elements per row,
// `outer` rows `ld` elements apart; boxes of box_inner × box_outer elements land in shared memory with
// the 128-byte swizzle (box_inner · element size 128) or the 64-byte one (64: BK = 32 16-bit k-tiles).
// Out-of-bounds box elements read as zero.
// f32 is copied bit for bit (FLOAT32): wgmma .tf32 then reads each element's upper 19 bits; with
// `tf32_map` the map says TFLOAT32 instead: the TMA rounds each element to tf32 (the GEMM kernel's
// default for tf32, see uses_tf32_tensor_map).
inline Status make_tensor_map(CUtensorMap& map, DType t, const void* base, std::uint64_t inner, std::uint64_t outer,
                              std::uint64_t ld, std::uint32_t box_inner, std::uint32_t box_outer, bool tf32_map = false) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  KTUNE_RETURN_IF_ERROR(tensor_map_encoder(encode));
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {ld * static_cast<std::uint64_t>(size_of(t))};  // bytes, rows 1..
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUtensorMapDataType dt = t == DType::bf16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                 : t == DType::f32 ? (tf32_map ? CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32)
                                                   : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = encode(&map, dt, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle_for_row(box_inner * size_of(t)),
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return error(StatusCode::cuda_error, "cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                                             ") for a " + std::to_string(outer) + "x" + std::to_string(inner) +
                                             " matrix with leading dimension " + std::to_string(ld));
  return {};
}

// ---- Device ---------------------------------------------------------------------------------------
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

// Copies the box at element coordinates (c0 = inner, c1 = outer) into `dst` (1024-byte aligned) and
// counts its bytes on the mbarrier `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, std::uint64_t* bar) {
  const std::int32_t coords[2] = {c0, c1};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar);
}

// The same box delivered to the same shared-memory offset of every CTA in `cta_mask` (of this cluster),
// counting its bytes on the mbarrier at `bar`'s offset in each of them.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, int c0, int c1,
                                                      std::uint64_t* bar, std::uint16_t cta_mask) {
  const std::int32_t coords[2] = {c0, c1};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar, cta_mask);
}

// Shared → global: the box at (c0 = inner, c1 = outer) from `src` (1024-byte aligned for the 128-byte
// swizzle), as one bulk async-group of this thread; out-of-bounds box elements are not written.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, int c0, int c1, const void* src) {
  const std::int32_t coords[2] = {c0, c1};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, coords, src);
}

#endif

}  // namespace ktune::kernel::sm90
