// ktune/gemm/route/repack.cuh — the repack copy: lines of 2-byte elements at any 2-byte alignment
// into 16-byte-aligned scratch lines, zero-padded to the scratch leading dimension. A and B are
// copied by one launch.
//
// One warp copies one line at a time (so a line's misalignment is warp-uniform), each lane writing
// 16-byte vectors. A lane reads the two aligned 16-byte vectors that cover its 8 source elements and
// shifts them into place (a funnel shift by the line's misalignment): every global access is a 16-byte
// vector, and each warp-wide load is fully coalesced. Vectors at a line's ends, where an aligned read
// would touch bytes outside the line, read element by element instead (no byte outside the user's
// operand is ever read).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ktune/device.hpp"
#include "ktune/gemm/route/plan.hpp"
#include "ktune/status.hpp"

namespace ktune::route {

// One operand's copy: `lines` lines of `contiguous` elements.
struct RepackJob {
  const std::uint16_t* src = nullptr;
  std::int64_t ld_src = 0;
  std::uint16_t* dst = nullptr;  // 16-byte aligned
  std::int64_t ld = 0;           // multiple of 8
  std::int64_t lines = 0, contiguous = 0;
};

struct RepackParams {
  RepackJob job[2];
  int jobs = 0;
};

namespace detail {

// The 16 bytes at byte offset Shift (even, 2..14) of the 32 bytes w[0..7].
template <int Shift>
__device__ __forceinline__ uint4 extract(const std::uint32_t (&w)[8]) {
  constexpr int q = Shift / 4;
  std::uint32_t o[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (Shift % 4 == 0)
      o[i] = w[q + i];
    else
      o[i] = __funnelshift_r(w[q + i], w[q + i + 1], 16);
  }
  return make_uint4(o[0], o[1], o[2], o[3]);
}

__device__ __forceinline__ uint4 extract(const std::uint32_t (&w)[8], int shift) {
  switch (shift) {
    case 2: return extract<2>(w);
    case 4: return extract<4>(w);
    case 6: return extract<6>(w);
    case 8: return extract<8>(w);
    case 10: return extract<10>(w);
    case 12: return extract<12>(w);
    default: return extract<14>(w);
  }
}

__device__ __forceinline__ void copy_line(const std::uint16_t* src, std::int64_t contiguous, uint4* dst,
                                          std::int64_t vectors, int lane) {
  const auto addr = reinterpret_cast<std::uintptr_t>(src);
  const int shift = static_cast<int>(addr & 15);  // bytes; even
  const auto* aligned = reinterpret_cast<const uint4*>(addr - shift);  // vector j covers elements 8j - shift/2 ..
  for (std::int64_t v = lane; v < vectors; v += 32) {
    const std::int64_t e0 = v * 8;
    uint4 out;
    // Bytes the aligned reads would touch: [2·e0 − shift, 2·e0 − shift + (shift ? 32 : 16)).
    const bool fast = shift == 0 ? e0 + 8 <= contiguous : (e0 > 0 && 2 * e0 - shift + 32 <= 2 * contiguous);
    if (fast) {
      if (shift == 0) {
        out = __ldg(aligned + v);
      } else {
        std::uint32_t w[8];
        *reinterpret_cast<uint4*>(w) = __ldg(aligned + v);
        *reinterpret_cast<uint4*>(w + 4) = __ldg(aligned + v + 1);
        out = extract(w, shift);
      }
    } else {
      std::uint16_t e[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) e[i] = e0 + i < contiguous ? __ldg(src + e0 + i) : std::uint16_t{0};
      out = make_uint4(e[0] | (std::uint32_t{e[1]} << 16), e[2] | (std::uint32_t{e[3]} << 16),
                       e[4] | (std::uint32_t{e[5]} << 16), e[6] | (std::uint32_t{e[7]} << 16));
    }
    dst[v] = out;
  }
}

}  // namespace detail

// Warps walk the lines of job 0, then of job 1. (A template only so that the header can be included by
// several translation units.)
template <int Threads>
__global__ void __launch_bounds__(Threads) repack_kernel(const RepackParams p) {
  const int lane = threadIdx.x & 31;
  const std::int64_t warp = (std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t warps = (std::int64_t{gridDim.x} * blockDim.x) >> 5;
  const std::int64_t lines0 = p.job[0].lines, total = lines0 + (p.jobs > 1 ? p.job[1].lines : 0);
  for (std::int64_t line = warp; line < total; line += warps) {
    const bool first = line < lines0;
    const RepackJob& j = first ? p.job[0] : p.job[1];
    const std::int64_t l = first ? line : line - lines0;
    detail::copy_line(j.src + l * j.ld_src, j.contiguous, reinterpret_cast<uint4*>(j.dst + l * j.ld), j.ld / 8, lane);
  }
}

// Copy the plan's operands (2-byte elements) into `workspace` (16-byte aligned) on `stream`.
inline Status launch_repack(const RepackPlan& plan, const void* a, const void* b, void* workspace, cudaStream_t stream) {
  RepackParams p;
  auto add = [&](const RepackOperand& o, const void* src) {
    if (!o.repack) return;
    RepackJob& j = p.job[p.jobs++];
    j.src = static_cast<const std::uint16_t*>(src);
    j.ld_src = o.ld_src;
    j.dst = reinterpret_cast<std::uint16_t*>(static_cast<char*>(workspace) + o.offset);
    j.ld = o.ld;
    j.lines = o.lines;
    j.contiguous = o.contiguous;
  };
  add(plan.a, a);
  add(plan.b, b);
  if (p.jobs == 0) return {};
  DeviceInfo dev;
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  const std::int64_t lines = p.job[0].lines + (p.jobs > 1 ? p.job[1].lines : 0);
  constexpr int threads = 256, warps_per_block = threads / 32;
  // Enough warps for one line each, at most 16 blocks per multiprocessor (the rest loop).
  const std::int64_t want = (lines + warps_per_block - 1) / warps_per_block;
  const std::int64_t cap = std::int64_t{std::max(1, dev.sm_count)} * 16;
  repack_kernel<threads><<<static_cast<unsigned>(std::min(want, cap)), threads, 0, stream>>>(p);
  return cuda_status(cudaGetLastError(), "repack kernel launch");
}

}  // namespace ktune::route
