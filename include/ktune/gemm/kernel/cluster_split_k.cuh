// ktune/gemm/kernel/cluster_split_k.cuh — the pieces of split-K's cluster mode (SplitKMode::cluster;
// gemm_kernel.cuh's cluster_split_k_finish puts them together) for the sm80 mma.sync kernel running on an
// sm90 device: the split_k slices of a tile run in thread-block clusters of split_cluster CTAs (grid y,
// cluster dims (1, split_cluster, 1)). Each CTA stages its fp32 tile in its own shared memory; rank r of
// the cluster then adds part r of the tile (a contiguous range of 4-column groups) over the cluster's
// ranks in rank order, reading the peers' tiles through distributed shared memory. With one cluster per
// tile that is the whole sum: the rank applies the epilogue and stores its part of D — one kernel, no
// workspace, no fp32 partial through L2. With several clusters per tile each rank stores its part's sum
// as the cluster's partial, and the last cluster to arrive at that part (a counter per (tile, rank)) adds
// the clusters' partials in cluster order. No spinning, no ordering assumption between clusters.
// Parallel split-K writes and re-reads split_k fp32 tiles and pays a second launch (64x64x65536 on the
// H200: 1 MB of partials and the reduction kernel after the GEMM; notes/split-k.md).
#pragma once
#if defined(__CUDACC__)
#include <cuda/ptx>  // (device code only: the host parts below are plain C++)
#endif

#include "ktune/gemm/config.hpp"

namespace ktune::kernel {

// Floats between the staged tile's rows: 4 of padding, so the float2 writes of an mma fragment's 8 rows
// fall in different banks.
constexpr int cluster_tile_ld(const GemmConfig& c) { return c.tile.n + 4; }
// Shared memory the staged fp32 tile takes (the kernel's pipeline memory, free after the mainloop).
constexpr int cluster_tile_bytes(const GemmConfig& c) { return c.tile.m * cluster_tile_ld(c) * 4; }

// The part of a tile of `quads` 4-column groups that cluster rank `rank` of `ranks` adds: groups
// [first, end), contiguous, as even as possible, together covering the tile once (host tests walk it).
struct QuadRange {
  int first, end;
};
constexpr QuadRange cluster_split_part(int quads, unsigned rank, unsigned ranks) {
  return {static_cast<int>(static_cast<unsigned>(quads) * rank / ranks), static_cast<int>(static_cast<unsigned>(quads) * (rank + 1) / ranks)};
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned cluster_split_rank() { return cuda::ptx::get_sreg_cluster_ctarank(); }

// Every thread of every CTA of the cluster: what each wrote to shared memory before is visible to all
// after (release/acquire).
__device__ __forceinline__ void cluster_split_sync() {
  cuda::ptx::barrier_cluster_arrive();
  cuda::ptx::barrier_cluster_wait();
}

// x = the 4 floats at `offset` of the staged tile of ranks 0, 1, ..., ranks − 1, added in rank order.
// Loads in flight 4 ranks at a time (each into its own registers; 16 at once cost ~60 registers, which
// the mainloop's occupancy cannot spare), then their adds.
__device__ __forceinline__ void cluster_quad_sum(float* tile, unsigned ranks, int offset, float (&x)[4]) {
  constexpr unsigned batch = 4;
  x[0] = x[1] = x[2] = x[3] = -0.0f;  // -0 + v == v for every v (+0 + -0 would not be)
#pragma unroll 1
  for (unsigned r0 = 0; r0 < ranks; r0 += batch) {
    float4 v[batch];
#pragma unroll
    for (unsigned j = 0; j < batch; ++j)
      if (r0 + j < ranks) v[j] = *reinterpret_cast<const float4*>(static_cast<float*>(__cluster_map_shared_rank(tile, r0 + j)) + offset);
#pragma unroll
    for (unsigned j = 0; j < batch; ++j)
      if (r0 + j < ranks) {
        x[0] += v[j].x;
        x[1] += v[j].y;
        x[2] += v[j].z;
        x[3] += v[j].w;
      }
  }
}
#endif

}  // namespace ktune::kernel
