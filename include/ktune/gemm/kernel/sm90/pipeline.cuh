// ktune/gemm/kernel/sm90/pipeline.cuh — the shared-memory stage ring between the producer warpgroup
// (TMA) and the consumer warpgroups (wgmma): per stage a `full` mbarrier (one producer arrival plus the
// TMA's transaction bytes) and an `empty` mbarrier (one arrival per consumer warp once its wgmmas have
// read the stage). Both sides walk the ring with a (stage, phase) state and wait on phase parity.
// In a cluster of CTAs that multicast an operand into each other's rings, a slot is free only when the
// consumers of every CTA of the cluster released it: each consumer warp arrives on the empty barrier
// of every CTA (the count is consumer warps × cluster size).
#pragma once
#include <cstdint>

#if defined(__CUDA_ARCH__)
#include <cuda/ptx>
#endif

namespace ktune::kernel::sm90 {

template <int Stages>
struct RingState {
  int stage = 0;
  std::uint32_t phase = 0;  // parity of the ring's current lap
  int stages = Stages;      // slots walked: fewer where the wide store uses the rest (kernel.cuh: Sm90WideStore)
  __device__ __forceinline__ void advance() {
    if (++stage == stages) {
      stage = 0;
      phase ^= 1u;
    }
  }
  // Pass over n slots that another consumer reads (ping-pong consumers take turns on whole tiles).
  __device__ __forceinline__ void skip(int n) {
    const int t = stage + n;
    stage = t % stages;
    phase ^= static_cast<std::uint32_t>(t / stages) & 1u;
  }
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

// Waits for the phase of parity `parity` to complete. try_wait with a suspend-time hint: the waiting
// thread sleeps in the barrier until the phase completes (or the hint elapses, then it asks again) instead
// of re-polling after the hardware's short default limit. Without the hint the producer thread (always a
// few slots ahead, so nearly always waiting) polled without pause: H200 ncu, bf16 4096^3, s6-batchA:
// 51.5M warp instructions per launch (cuBLASLt's kernel: 16.6M), the issue slot of the consumer warps
// sharing its scheduler taken, tensor pipe active 88.6% (cuBLASLt 95.2%), 7% more cycles at the same
// clock. 10 ms is CUTLASS's hint too: a phase always completes long before.
__device__ __forceinline__ void wait_parity(std::uint64_t* bar, std::uint32_t parity) {
  const std::uint32_t suspend_hint_ns = 10'000'000;  // cuda::ptx takes it by reference: a local, not a host constant
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity, suspend_hint_ns)) {
  }
}

template <int Stages>
struct Pipeline {
  std::uint64_t* full;   // [Stages]
  std::uint64_t* empty;  // [Stages]

  // One thread initialises; the caller then synchronises the block before any use.
  __device__ __forceinline__ void init(int consumer_arrivals) const {
    for (int s = 0; s < Stages; ++s) {
      cuda::ptx::mbarrier_init(full + s, 1u);
      cuda::ptx::mbarrier_init(empty + s, static_cast<std::uint32_t>(consumer_arrivals));
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }

  // Producer: wait until the consumers released the slot (the first lap passes at once: a fresh barrier
  // counts its phase of parity 1 as complete), then announce the bytes the TMA will deliver.
  __device__ __forceinline__ std::uint64_t* acquire(const RingState<Stages>& st, std::uint32_t bytes) const {
    wait_parity(empty + st.stage, st.phase ^ 1u);
    (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                               full + st.stage, bytes);
    return full + st.stage;
  }

  // Consumer: wait until the slot's bytes have landed.
  __device__ __forceinline__ void wait_full(const RingState<Stages>& st) const { wait_parity(full + st.stage, st.phase); }
  // Consumer: have they landed already? A test that never waits (acquire, CTA scope, as wait_full's):
  // issued a k-tile ahead, its latency runs under the wgmmas in flight, as in cuDNN's Hopper conv kernels
  // (SASS: the next slot's phase check right after the previous slot's release, its predicate tested at the
  // top of the next k-tile).
  __device__ __forceinline__ bool probe_full(const RingState<Stages>& st) const {
    return cuda::ptx::mbarrier_test_wait_parity(full + st.stage, st.phase);
  }

  // Consumer (one lane per warp): this warp's wgmmas no longer read the slot.
  __device__ __forceinline__ void release(int stage, unsigned cluster) const {  // cluster: 1 or 2
    if (cluster == 1) {
      (void)cuda::ptx::mbarrier_arrive(empty + stage);
      return;
    }
    const std::uint32_t local = static_cast<std::uint32_t>(__cvta_generic_to_shared(empty + stage));
#pragma unroll
    for (unsigned r = 0; r < 2; ++r) {  // clusters of 2 (the GEMM's only other size)
      std::uint32_t remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(r));
      // Default semantics (release, CTA scope): the wgmmas that read the slot have completed (wait_group).
      // `.release.cluster` would add MEMBAR.ALL.GPU before every arrive (measured: cluster runs at 0.6x).
      asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
    }
  }
  // The same for groups of up to 8 CTAs (conv's tma_im2col multicast) starting at cluster rank `base` (a
  // cluster of multicast groups that split K: conv's @ck<N>@mc<M>), every lane of the warp calling: lane r
  // arrives on the barrier of CTA base + r (all at once, no loop: the consumers' 128 accumulator registers
  // leave no room for one).
  __device__ __forceinline__ void release_by_lanes(int stage, unsigned group, unsigned base, unsigned lane) const {
    if (group == 1) {
      if (lane == 0) release(stage, 1u);
      return;
    }
    if (lane >= group) return;
    const std::uint32_t local = static_cast<std::uint32_t>(__cvta_generic_to_shared(empty + stage));
    std::uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(base + lane));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
  }
};

#endif

}  // namespace ktune::kernel::sm90
