// ktune/gemm/heuristic.hpp — an analytic cost model that ranks instances for a problem without
// running anything: wave quantization, tile efficiency and occupancy. It is the deterministic choice
// of the one-call API when no tuning result exists, and the tuner's pre-ranking.
#pragma once
#include <algorithm>
#include <cmath>

#include "ktune/arch.hpp"
#include "ktune/dispatch.hpp"

namespace ktune {

// Blocks of this instance that fit on one multiprocessor (registers, shared memory, threads).
inline int blocks_per_sm(const GemmResources& r, const DeviceInfo& dev) {
  const ArchTraits* arch = arch_for_cc(dev.cc);
  const int regs_per_sm = arch ? arch->regs_per_sm : 65536;
  const int smem_per_sm = arch ? arch->smem_per_sm_bytes : dev.smem_optin_bytes;
  const int threads_per_sm = arch ? arch->max_threads_per_sm : 2048;
  const int by_regs = regs_per_sm / std::max(1, r.registers * r.threads);
  const int by_smem = smem_per_sm / std::max(1, r.smem_bytes + 1024);  // 1 KB per block reserved by the driver
  const int by_threads = threads_per_sm / std::max(1, r.threads);
  return std::max(1, std::min({by_regs, by_smem, by_threads}));
}

// A route's work outside its inner kernel (gemm/route/): its memory traffic and one more launch.
// heuristic_cost's unit is one multiply-add per multiprocessor at full tensor-core rate (H200: 3.7e12
// per second per SM; A100: 1.4e12), and a byte of DRAM traffic takes about as long (H200: 4.25e12 B/s
// device-wide, A100: 1.5e12), so bytes are charged one unit each; a launch ≈ 3 µs ≈ 1e7 units.
inline double route_cost(const GemmKernelEntry& e, const GemmDesc& d) {
  if (e.extra_traffic == nullptr) return 0.0;
  return e.extra_traffic(d) + 1e7;
}

// Hopper wgmma instances: rate per unit of work relative to the best block tile, from H200 timings paired
// with cuBLASLt (notes/sm90-gemm.md, s6-batchB; bf16/f16/tf32 4096^3, bf16 8192^3 and 3072^3). On 132
// multiprocessors every power-of-two shape gives 128x256, 256x128 and 128x128 tiles the same padded work
// per wave, so this is what orders them. Ping-pong 128x128 (each warpgroup's epilogue under the other's
// mainloop) ran 1.016x / 1.016x / 1.034x cuBLASLt (bf16, f16 4096^3; bf16 8192^3), the cooperative
// 128x256 / 256x128 and ping-pong 64x256 ~3% slower, the cooperative 128x128 (two 64x128 warpgroups,
// its epilogue not overlapped: tensor pipe 88.5% active against 95.1%) ~5% slower. One consumer warpgroup
// (64x128) ran 0.64-0.70x cuBLASLt on those full-GPU shapes; its 0.85 (s4) only decides where its extra
// tiles fill SMs that larger tiles leave idle (small M or N), which these runs did not re-measure.
// 64-column warpgroup tiles (Sm90WgmmaF16N64/N64Deep, session 9): not measured yet. An m64n64k16 reads
// 4 KB of shared memory per 32 tensor-core cycles, at the 128 B/cycle limit, so below the measured tiles;
// ranked low (0.4) so the analytic pick stays what it was on every default shape until H200 numbers set
// the rate (the tuner still times them: its top 48).
inline constexpr double sm90_n64_tile_rate = 0.4;
// Swap-AB tiles (Sm90WgmmaF16Swap/Swap2Wg: 64x112 and 128x96 in the swapped orientation), H200 paired with
// cuBLASLt, bf16 'tn': 1568x512x2048 64x112 1.07x (the best default instance 0.89x), 6272x256x1024 128x96
// 0.99x bias+ReLU / 0.96x identity (best default 0.84x). Both were one wave of their tiles; per unit of
// padded work they ran about as fast as the default 128x128 tiles do on full-GPU shapes: 0.9, so that on
// small-M-by-N problems their finer tiles (less padding, more of the 132 multiprocessors busy) rank them
// first, and on large square ones (4096^3: many waves, where they were never measured) the 128x256 /
// 256x128 / ping-pong tiles stay ahead.
inline constexpr double sm90_swap_tile_rate = 0.9;
inline double sm90_tile_rate(const GemmConfig& c) {
  if (!is_wgmma(c.math)) return 1.0;
  if (c.schedule == WgSchedule::swap_ab) return sm90_swap_tile_rate;
  if (c.warp.n < 128) return sm90_n64_tile_rate;
  if (c.consumer_warpgroups() < 2) return 0.85;
  if (c.tile.m == 128 && c.tile.n == 128) return c.schedule == WgSchedule::pingpong ? 1.0 : 0.95;
  return 0.97;
}

// Short K on Hopper: with at most 2 k-tiles per tile the kernel is mostly a store of D, and tiles that take
// the wide TMA store (kernel/sm90/epilogue.cuh, sm90_wide_store_choice: cooperative tiles with two
// consumer warpgroups and 128- or 256-column warp tiles; 16-bit D with 16-byte aligned rows, N % 64 = 0,
// an epilogue that ends in the identity store) ran it 1.2-2.5x faster than the others (H200 s6-batchA,
// 8192x8192x64 bf16: 128x256 39.4 µs, 256x128 40.3; ping-pong 128x128 ~55, 64x128 ~99 µs). The two rank
// equal (sessions 7 and before picked 128x256 there): with session 8's lean wide store (H200 s8-batchA,
// paired with cuBLASLt) 128x256 ran 38.6 µs 1.143x, 256x128 39.9 µs 1.114x; bias+ReLU 1.051x / 1.053x.
// (Ranking 256x128 1.08x above, from session 7's timings of the older store, picked the slower one.)
inline double sm90_short_k_store_rate(const GemmConfig& c, const GemmDesc& d) {
  if (!is_wgmma(c.math) || size_of(d.d_type) != 2 || d.n % 64 != 0 || (d.ldd > 0 && d.ldd % 8 != 0)) return 1.0;
  const EpilogueSpec& e = d.epilogue;
  const bool plain = e.beta == 0.0f && !e.residual && (e.activation == Activation::none || e.activation == Activation::relu);
  if (!plain || std::ceil(double(d.k) / c.tile.k) > 2) return 1.0;
  const bool wide = c.consumer_warpgroups() >= 2 && c.schedule != WgSchedule::pingpong && c.warp.n % 128 == 0 &&
                    c.warp.m * c.warp.n >= 128 * 128;
  return wide ? 1.3 : 1.0;
}

// Relative cost (lower is better; arbitrary units proportional to time).
inline double heuristic_cost(const GemmKernelEntry& e, const GemmDesc& d, const DeviceInfo& dev) {
  const GemmConfig& c = e.config;
  const TileShape pt = problem_tile(c);  // (swap AB: the tile in the problem's orientation)
  const double tiles = std::ceil(double(d.m) / pt.m) * std::ceil(double(d.n) / pt.n);
  const double slots = double(std::max(1, dev.sm_count)) * blocks_per_sm(e.resources, dev);
  const double waves = std::ceil(tiles / slots);
  // Per-tile time ∝ its padded work over its efficiency: bigger warp tiles reuse fragments better,
  // more resident warps hide latency better, wider vectors move data in fewer instructions.
  const double k_steps = std::ceil(double(d.k) / c.tile.k) * c.tile.k;
  const double work = double(c.tile.m) * c.tile.n * k_steps;
  const double warp_reuse = double(c.warp.m) * c.warp.n / double(c.warp.m + c.warp.n);   // 32 for 64×64
  const double resident_warps = double(blocks_per_sm(e.resources, dev)) * c.warps();
  // On Hopper, mma.sync reaches about half of wgmma's rate (H200 bf16 4096³: 361 vs 722 TF/s).
  const bool ampere_mma_on_hopper = dev.cc >= 90 && (c.math == MathOp::mma_f16 || c.math == MathOp::mma_bf16 || c.math == MathOp::mma_tf32);
  const double efficiency = std::min(1.0, warp_reuse / 32.0) * std::min(1.0, resident_warps / 8.0) *
                            (c.align >= 16 / size_of(c.operand()) ? 1.0 : 0.5) * (1.0 - 0.02 * (c.stages < 3)) *
                            (ampere_mma_on_hopper ? 0.5 : 1.0) * sm90_tile_rate(c) * sm90_short_k_store_rate(c, d);
  // A wave runs `slots` tiles concurrently; the per-tile time is work / efficiency / per-SM share.
  double kernel = waves * work * blocks_per_sm(e.resources, dev) / std::max(1e-9, efficiency);
  // Swap AB: every M tile (the kernel's N) streams the whole weight panel (our B) again, so a mostly empty
  // last M tile costs a full extra read of B that the single-wave term above does not see (H200,
  // 4d6d459: bf16 128x4096x4096, two 112-row tiles for 128 rows, the swap 64x112 heuristic pick ran 0.47x
  // cuBLASLt against 0.70x for 64x128 before it). Scaled by the padded share of M (1 when M fills its
  // tiles, as on the ResNet 1x1 GEMMs the swap tiles were measured on).
  if (is_swap_ab(c)) kernel *= std::ceil(double(d.m) / pt.m) * pt.m / std::max(1.0, double(d.m));
  return kernel + route_cost(e, d);
}

}  // namespace ktune
