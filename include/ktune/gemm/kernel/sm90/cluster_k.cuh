// ktune/gemm/kernel/sm90/cluster_k.cuh — split-K inside a thread-block cluster (warp_specialized_gemm's
// ClusterK mode; conv's tma_im2col route uses it: ConvLaunchOptions::cluster_k). The CTAs of a cluster
// of S compute the same output tile, CTA rank r the k-tiles of slice r of S (k_slice); then every
// rank r > 0 writes its fp32 accumulators into rank 0's shared-memory ring through distributed shared
// memory, and rank 0 adds them (rank order: the same bits run to run) and stores the tile through the
// kernel's usual epilogue. No global workspace, no second kernel: the partials never leave the GPC
// (global split-K writes and re-reads S·M·N·4 bytes, which cost more than the idle multiprocessors on
// the 7x7 ResNet-50 layers: notes/split-k.md, 1568x512x2048).
//
// Each CTA runs exactly one (tile, slice) unit (the launcher's grid is tiles × S, not persistent), so
// once its consumers are done with their last k-tile rank 0's ring is free: nothing else is loaded into
// it. Two cluster barriers, which every thread of every CTA of the cluster takes (the producer
// warpgroup too: cluster_k_producer_sync):
//   1. rank 0's consumers have read their last stage (its ring may be overwritten);
//   2. every rank > 0 has written its partial (release/acquire: rank 0 sees them).
// Layout of rank r's partial in rank 0's ring: float4 j of consumer thread t at ((r − 1)·J + j)·T + t
// (T consumer threads, J float4 per thread), so a warp's stores and loads are 512 contiguous bytes.
// Reduce-scatter (two consumer warpgroups, a cluster of 2): rank r keeps warpgroup sub-tile r instead —
// each rank sends the other half of its accumulators and stores half the tile, so each multiprocessor's
// distributed-shared-memory traffic and epilogue are halved (H200 s6-batchA, gather to rank 0: 7x7 3x3
// 512->512 128x128 @ck2 21.2 us vs 25.8 whole K, the exchange of 64 KB per tile costing several us).
#pragma once
#include <cuda/ptx>

namespace ktune::kernel::sm90 {

// Bytes of rank 0's ring that a cluster of `cluster` CTAs needs for the partials of ranks 1..cluster−1.
constexpr long cluster_k_bytes(int consumer_threads, int acc_floats_per_thread, int cluster) {
  return static_cast<long>(cluster - 1) * consumer_threads * acc_floats_per_thread * 4;
}

// Does a cluster of `cluster` CTAs with `consumer_wgs` consumer warpgroups reduce-scatter (else gather)?
constexpr bool cluster_k_scatter(int consumer_wgs, unsigned cluster) { return consumer_wgs == 2 && cluster == 2; }
// Does consumer warpgroup `cw` of cluster rank `rank` store its sub-tile (hold the sum)?
constexpr bool cluster_k_owner(int consumer_wgs, unsigned rank, unsigned cluster, int cw) {
  return cluster_k_scatter(consumer_wgs, cluster) ? rank == static_cast<unsigned>(cw) : rank == 0u;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void cluster_k_barrier() {
  cuda::ptx::barrier_cluster_arrive();  // .release by default
  cuda::ptx::barrier_cluster_wait();    // .acquire by default
}

// The producer warpgroup's part: the two barriers of cluster_k_sum, per unit its CTA computed.
__device__ __forceinline__ void cluster_k_producer_sync() {
  cluster_k_barrier();
  cluster_k_barrier();
}

// Consumer thread `t` (0 .. Threads − 1 over all consumer warpgroups) with accumulators `acc` of its
// slice: threads whose warpgroup does not own its sub-tile (cluster_k_owner) hand their sums to the
// owner and return false (nothing more to do for the tile); owners return true with the whole sum in
// `acc`. `ring` is this CTA's ring (the same offset in every CTA). rank: this CTA's k-slice of `cluster`;
// k-slice j is CTA j · stride + share_rank of the launch's cluster (stride > 1: multicast groups of
// `stride` CTAs split K together, each group member reducing with its own tile's slices).
template <class ML, int Threads>
__device__ __forceinline__ bool cluster_k_sum(typename ML::Accumulators& acc, char* ring, unsigned rank,
                                              unsigned cluster, unsigned stride, unsigned share_rank, int t) {
  auto cta_of = [&](unsigned k_slice) { return k_slice * stride + share_rank; };
  constexpr int per_mi = ML::WN / 8;  // float4 per m64 block
  constexpr int J = ML::MI * per_mi;
  cluster_k_barrier();  // 1: the owners' rings are free
  if (cluster_k_scatter(Threads / 128, cluster)) {  // warpgroup cw's sub-tile to rank cw
    const int cw = t / 128, tw = t % 128;
    const bool owner = rank == static_cast<unsigned>(cw);
    if (!owner) {
      float4* dst = static_cast<float4*>(__cluster_map_shared_rank(static_cast<void*>(ring), cta_of(static_cast<unsigned>(cw)))) + tw;
#pragma unroll
      for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
        for (int j = 0; j < per_mi; ++j)
          dst[(mi * per_mi + j) * 128] = make_float4(acc[mi][4 * j], acc[mi][4 * j + 1], acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
    }
    cluster_k_barrier();  // 2: each owner's other half is in its ring
    if (!owner) return false;
    const float4* src = reinterpret_cast<const float4*>(ring) + tw;
#pragma unroll
    for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
      for (int j = 0; j < per_mi; ++j) {  // a + b == b + a: the same bits as rank 0's sum in rank order
        const float4 v = src[(mi * per_mi + j) * 128];
        acc[mi][4 * j] += v.x;
        acc[mi][4 * j + 1] += v.y;
        acc[mi][4 * j + 2] += v.z;
        acc[mi][4 * j + 3] += v.w;
      }
    return true;
  }
  if (rank != 0) {
    float4* dst = static_cast<float4*>(__cluster_map_shared_rank(static_cast<void*>(ring), cta_of(0))) +
                  static_cast<long>(rank - 1) * J * Threads + t;
#pragma unroll
    for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
      for (int j = 0; j < per_mi; ++j)
        dst[(mi * per_mi + j) * Threads] =
            make_float4(acc[mi][4 * j], acc[mi][4 * j + 1], acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
  }
  cluster_k_barrier();  // 2: the partials are in rank 0's ring
  if (rank != 0) return false;
  const float4* src = reinterpret_cast<const float4*>(ring) + t;
#pragma unroll 1
  for (unsigned r = 1; r < cluster; ++r, src += J * Threads)
#pragma unroll
    for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
      for (int j = 0; j < per_mi; ++j) {
        const float4 v = src[(mi * per_mi + j) * Threads];
        acc[mi][4 * j] += v.x;
        acc[mi][4 * j + 1] += v.y;
        acc[mi][4 * j + 2] += v.z;
        acc[mi][4 * j + 3] += v.w;
      }
  return true;
}
#endif

}  // namespace ktune::kernel::sm90
