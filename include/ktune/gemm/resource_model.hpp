// ktune/gemm/resource_model.hpp — what an instance costs (shared memory, threads, registers) and
// whether it is valid for an architecture. Everything is constexpr: families are filtered with it at
// compile time, and the GPU check compares the model against the compiler's numbers.
#pragma once
#include "ktune/arch.hpp"
#include "ktune/constraints.hpp"
#include "ktune/gemm/config.hpp"

namespace ktune {

// Shared-memory layout constants shared by the kernels and the model (one source of truth).
namespace smem_layout {
// SIMT kernels store both operands MN-contiguous as [BK][BM + pad] floats; the pad keeps the
// transposing stores of K-contiguous operands free of bank conflicts and rows 16-byte aligned.
inline constexpr int simt_pad = 4;
// The epilogue stages each warp's accumulators through shared memory one 16-row band at a time
// (rows padded by 4 floats), so stores are coalesced 16-byte vectors and the epilogue code exists
// once instead of once per accumulator register.
inline constexpr int epilogue_band_rows = 16;
inline constexpr int epilogue_pad = 4;

// sm90 (TMA + wgmma) kernels. Every operand row in shared memory is one 128-byte swizzle row (BK = 64
// 16-bit elements, or 32 fp32 elements for tf32: a stage holds half the K of a 16-bit one); TMA
// writes and wgmma reads whole 1024-byte swizzle atoms, so the ring starts on a
// 1024-byte boundary (the dynamic allocation is over-allocated by one atom and rounded up). Each
// consumer warp stages its accumulators 16 rows × 32 columns at a time (rows padded by 8 floats: the
// fragment stores and the row reads are free of bank conflicts). Each stage has a full and an empty
// mbarrier (8 bytes each).
inline constexpr int sm90_swizzle_bytes = 128;
inline constexpr int sm90_atom_bytes = 1024;
inline constexpr int sm90_epilogue_cols = 32;
inline constexpr int sm90_epilogue_pad = 8;
inline constexpr int sm90_producer_registers = 40;   // setmaxnreg.dec for the TMA warpgroup
inline constexpr int sm90_consumer_registers = 232;  // setmaxnreg.inc for 2 consumer warpgroups
}  // namespace smem_layout

// Shared memory of an sm90 instance: alignment slack, the stage ring, epilogue staging (per consumer
// warp: ping-pong instances have two consumer warpgroups of one tile each), barriers.
// Staging per consumer warp: at least one 16×32 fp32 chunk with padded rows (2560 bytes); where the
// block cannot share its multiprocessor anyway (it needs more than half the opt-in shared memory), what
// the opt-in limit leaves after ring, barriers and bias buffers, in 512-byte steps, up to 8 KB: the
// asynchronous TMA store of 16-bit D uses every 1024-byte aligned 1 KB atom of it as a box buffer, and
// more buffers let more of a tile's store run under the next tile's wgmma (kernel/sm90/epilogue.cuh).
inline constexpr int sm90_min_warp_staging_bytes =
    smem_layout::epilogue_band_rows * (smem_layout::sm90_epilogue_cols + smem_layout::sm90_epilogue_pad) * 4;
inline constexpr int sm90_max_warp_staging_bytes = 8192;
constexpr int sm90_warp_staging_bytes(const GemmConfig& c);
constexpr int sm90_staging_bytes(const GemmConfig& c) { return c.consumer_warpgroups() * 4 * sm90_warp_staging_bytes(c); }
constexpr int sm90_barrier_bytes(const GemmConfig& c) { return 2 * c.stages * 8; }
// Two bias buffers per consumer warpgroup (its WN columns, up to 4 bytes each; the fragment epilogue
// copies the next tile's bias into one while the current tile reads the other). The kernel has them only
// where they fit in the opt-in shared memory; without them a bias takes the staged store.
constexpr int sm90_bias_buffer_bytes(const GemmConfig& c) { return c.consumer_warpgroups() * 2 * c.warp.n * 4; }
// An sm90 instance's shared memory without the bias buffers: alignment slack, ring, staging, barriers.
constexpr int sm90_base_smem_bytes(const GemmConfig& c);
// Registers a consumer thread may use: 232 with two consumer warpgroups (40 + 2·232 per lane-slot
// of 3 warpgroups fits 64K registers), 255 with one (no register reallocation needed).
constexpr int sm90_consumer_register_budget(const GemmConfig& c) {
  return c.consumer_warpgroups() >= 2 ? smem_layout::sm90_consumer_registers : 255;
}

struct GemmResources {
  int threads = 0;
  int smem_bytes = 0;       // dynamic shared memory per block
  int registers = 0;        // estimated registers per thread
  friend constexpr bool operator==(const GemmResources&, const GemmResources&) = default;
};

template <class I>
constexpr I ceil_div(I a, I b) { return (a + b - 1) / b; }

constexpr int simt_thread_tile_m(const GemmConfig& c) { return c.warp.m / 4; }  // warp = 4×8 threads
constexpr int simt_thread_tile_n(const GemmConfig& c) { return c.warp.n / 8; }

constexpr int stage_bytes(const GemmConfig& c) {
  const int es = size_of(c.operand());
  if (c.math == MathOp::simt_f32)
    return c.tile.k * (c.tile.m + smem_layout::simt_pad) * 4 + c.tile.k * (c.tile.n + smem_layout::simt_pad) * 4;
  return (c.tile.m + c.tile.n) * c.tile.k * es;
}

constexpr int sm90_warp_staging_bytes(const GemmConfig& c) {
  const int warps = 4 * c.consumer_warpgroups();
  const int fixed = smem_layout::sm90_atom_bytes + c.stages * stage_bytes(c) + sm90_barrier_bytes(c) + sm90_bias_buffer_bytes(c);
  const int least = sm90_min_warp_staging_bytes;
  if (warps < 1 || 2 * (fixed + warps * least + 1024) <= sm90.smem_per_sm_bytes) return least;  // two blocks may share an SM
  const int room = (sm90.smem_optin_bytes - fixed) / warps / 512 * 512;
  return room < least ? least : room > sm90_max_warp_staging_bytes ? sm90_max_warp_staging_bytes : room;
}

constexpr int sm90_base_smem_bytes(const GemmConfig& c) {
  return smem_layout::sm90_atom_bytes + c.stages * stage_bytes(c) + sm90_staging_bytes(c) + sm90_barrier_bytes(c);
}

// Does the mma.sync mainloop read an MN-contiguous operand (stored [BK][tile_mn], swizzled) with constant
// ldmatrix.trans offsets, one register per XOR value (MmaMainloop::fast_a / fast_b, which assert that
// they agree)? Yes when the swizzle repeats every 16 rows (a k16 step) and the warp's 16-wide
// fragments stay inside one 128-byte-aligned span; tf32 reads such operands without ldmatrix.
constexpr bool mma_sm80_fixed_trans_offsets(const GemmConfig& c, int tile_mn, int warp_mn) {
  if (c.math != MathOp::mma_f16 && c.math != MathOp::mma_bf16) return false;
  const int es = size_of(c.operand()), row_bytes = tile_mn * es, lines = row_bytes >= 128 ? row_bytes / 128 : 1;
  const int span = warp_mn * es, span_align = span % 128 == 0 ? 128 : span % 64 == 0 ? 64 : span % 32 == 0 ? 32 : 16;
  return (16 * row_bytes) % (1024 * lines) == 0 && (warp_mn / 16) * 32 <= span_align;
}

// Does the mma.sync mainloop copy its operands with k-tile iterators (smem.cuh OperandTileIterator::applies
// for both A and B: the block's threads cover whole rows of each operand's shared-memory tile, cp.async
// vectors of at least 4 bytes, at most 32 vectors per thread, a swizzle that repeats every row step)?
// MmaMainloop::iterated_copies asserts that it agrees. Checked per operand: its tile's MN extent and
// whether K is its contiguous dimension.
constexpr bool mma_sm80_operand_iterable(const GemmConfig& c, int tile_mn, bool k_contiguous) {
  const int es = size_of(c.operand()), threads = c.threads();
  const int rows = k_contiguous ? tile_mn : c.tile.k, cols = k_contiguous ? c.tile.k : tile_mn;
  if (c.align <= 0 || threads <= 0 || cols % c.align != 0) return false;
  const int vectors_per_row = cols / c.align;
  if (vectors_per_row <= 0 || threads % vectors_per_row != 0) return false;
  const int row_step = threads / vectors_per_row, iterations = rows * cols / c.align / threads;
  const int row_bytes = cols * es, lines = row_bytes >= 128 ? row_bytes / 128 : 1;
  return c.align * es >= 4 && iterations <= 32 && (row_step * row_bytes) % (1024 * lines) == 0;
}
constexpr bool mma_sm80_iterated_copies(const GemmConfig& c) {
  return uses_tensor_cores(c.math) && !is_wgmma(c.math) && mma_sm80_operand_iterable(c, c.tile.m, c.a_k_contiguous()) &&
         mma_sm80_operand_iterable(c, c.tile.n, c.b_k_contiguous());
}

// Registers of one operand's global→shared copies computed per vector (TileCopy): each vector a
// thread issues per stage keeps a 64-bit address live.
constexpr int mma_sm80_vector_copy_registers(const GemmConfig& c, int tile_mn) {
  return c.threads() > 0 && c.align > 0 ? 2 * (tile_mn * c.tile.k / c.align / c.threads()) : 0;
}
// A k-tile iterator's state, whatever the number of vectors: source pointer (2), stride (2), shared
// offset, K bound, MN mask. (The per-vector charge put 128x256x64 / 256x128x64 with 64x64 warps at 256
// registers; ptxas: 244 / 242 on sm_90a, 0 spills.)
inline constexpr int mma_sm80_iterator_registers = 7;
// Registers the mainloop's global→shared copies of both operands keep live.
constexpr int mma_sm80_copy_registers(const GemmConfig& c) {
  if (mma_sm80_iterated_copies(c)) return 2 * mma_sm80_iterator_registers;
  return mma_sm80_vector_copy_registers(c, c.tile.m) + mma_sm80_vector_copy_registers(c, c.tile.n);
}

// A K-contiguous operand read by ldmatrix at constant offsets (MmaMainloop::fast_kc: rows of at most 128
// bytes, the swizzle repeating every 16 rows) keeps one offset register per k-step of a tile (the XOR
// value); the fixed term of the estimate covers two (BK = 32 for 16-bit operands), deeper tiles add the
// rest (sm_90a, 128x256x64: 'tn' 244 registers, 'nt' 231).
constexpr int mma_sm80_kstep_offset_registers(const GemmConfig& c, bool k_contiguous) {
  if (!k_contiguous || !uses_tensor_cores(c.math) || is_wgmma(c.math)) return 0;
  const int es = size_of(c.operand()), row_bytes = c.tile.k * es, steps = c.tile.k / instr_shape(c.math).k;
  const bool fast = row_bytes <= 128 && steps * 32 <= row_bytes && (16 * row_bytes) % 1024 == 0;
  return fast && steps > 2 ? steps - 2 : 0;
}

constexpr GemmResources estimate_resources(const GemmConfig& c) {
  GemmResources r;
  r.threads = c.threads();
  if (is_wgmma(c.math)) {
    r.smem_bytes = sm90_base_smem_bytes(c);
    if (r.smem_bytes + sm90_bias_buffer_bytes(c) <= sm90.smem_optin_bytes) r.smem_bytes += sm90_bias_buffer_bytes(c);
    // The launch-time register count (the warpgroups then trade registers with setmaxnreg): what
    // __launch_bounds__(threads, 1) leaves per thread, in the allocation granularity of 8.
    r.registers = r.threads > 0 ? (65536 / r.threads < 255 ? 65536 / r.threads : 255) / 8 * 8 : 0;
    return r;
  }
  const int staging = c.warps() * smem_layout::epilogue_band_rows * (c.warp.n + smem_layout::epilogue_pad) * 4;
  r.smem_bytes = c.stages * stage_bytes(c) > staging ? c.stages * stage_bytes(c) : staging;
  // Registers: accumulators + two sets of operand fragments (double-buffered across k-steps) + the
  // copies' addresses (mma_sm80_copy_registers) + addressing / predicates / epilogue scratch (~40,
  // measured on sm80/sm90 builds).
  const int acc = c.warp.m * c.warp.n / 32;
  int frags = 0;
  if (c.math == MathOp::simt_f32) {
    // SIMT: one set of fragments (the compiler streams them), 4-byte copies, lighter addressing.
    const int simt_copies = r.threads > 0 ? (c.tile.m + c.tile.n) * c.tile.k / (c.align > 0 ? c.align : 1) / r.threads : 0;
    r.registers = acc + simt_thread_tile_m(c) + simt_thread_tile_n(c) + 2 * simt_copies + 24;
    return r;
  } else {
    const InstrShape is = instr_shape(c.math);
    const int words_a = is.m * is.k * size_of(c.operand()) / 4 / 32;  // 32-bit words per lane per mma
    const int words_b = is.n * is.k * size_of(c.operand()) / 4 / 32;
    frags = 2 * ((c.warp.m / is.m) * words_a + (c.warp.n / is.n) * words_b);
  }
  // An MN-contiguous operand read with ldmatrix.trans at offsets computed per fragment and k-step: ~6
  // more live registers each (sm90a, before the XOR-then-add offsets: 128x256 'nt' spilled 12 B under
  // a 244 estimate). With fixed offsets (mma_sm80_fixed_trans_offsets) they cost nothing extra: 'nt'
  // 128x256x32 / 128x128x32 with 64x64 warps compile to 231 / 230 registers on sm_90a, 228 / 224 on
  // sm_80, 0 spills, like 'tn' (230).
  const int trans = uses_tensor_cores(c.math)
                        ? 6 * ((!c.a_k_contiguous() && !mma_sm80_fixed_trans_offsets(c, c.tile.m, c.warp.m)) +
                               (!c.b_k_contiguous() && !mma_sm80_fixed_trans_offsets(c, c.tile.n, c.warp.n)))
                        : 0;
  const int ksteps = mma_sm80_kstep_offset_registers(c, c.a_k_contiguous()) + mma_sm80_kstep_offset_registers(c, c.b_k_contiguous());
  r.registers = acc + frags + mma_sm80_copy_registers(c) + ksteps + trans + 40;
  return r;
}

// Estimated registers of one consumer thread of an sm90 instance: fp32 accumulators (WM·WN/128 per
// thread) plus descriptors, pipeline state and epilogue addressing.
constexpr int sm90_consumer_registers(const GemmConfig& c) { return c.warp.m * c.warp.n / 128 + 40; }

// wgmma reads MN-major (transposed) shared-memory operands only for 16-bit types: with tf32 both A and
// B must be K-major. Returns how many operands break that (0 = fine).
constexpr int sm90_mn_major_operands_unsupported(const GemmConfig& c) {
  if (size_of(c.operand()) == 2) return 0;
  return int(!c.a_k_contiguous()) + int(!c.b_k_contiguous());
}

// The wgmma m64nNk* wrappers kernel/sm90/wgmma.cuh has (the instruction takes N = 8..256 in steps of 8
// for f16/bf16, but each N needs its own inline-asm operand list): N = 64, 128, 192, 256 for every math,
// and 96, 112 for f16/bf16 (non-power-of-two tiles such as cuBLASLt's 64x112 / 128x96 on short-M GEMMs;
// the swap-AB families Sm90WgmmaF16Swap/Swap2Wg and the probes, tools/sm90-probes).
constexpr bool sm90_wgmma_n_available(MathOp m, int n) {
  if (n == 64 || n == 128 || n == 192 || n == 256) return true;
  return (n == 96 || n == 112) && (m == MathOp::wgmma_f16 || m == MathOp::wgmma_bf16);
}

// Swap AB (WgSchedule::swap_ab, kernel/sm90/kernel.cuh): the launcher hands the kernel A' = B and B' = A,
// which its TMA maps and wgmma descriptors read K-major ('tn'), with 16-bit operands (the transposed
// store, epilogue.cuh store_tile_swapped, writes 16-bit D), on cooperative consumers (the schedule itself:
// never ping-pong) and on the wgmma kernel only. How many of these a configuration breaks (0 = fine).
constexpr int swap_ab_violations(const GemmConfig& c) {
  if (c.schedule != WgSchedule::swap_ab) return 0;
  return int(!is_wgmma(c.math)) + int(c.a_layout != Layout::row || c.b_layout != Layout::col) +
         int(c.math != MathOp::wgmma_f16 && c.math != MathOp::wgmma_bf16 && is_wgmma(c.math));
}

// The sm90 (TMA + wgmma, warp-specialized) constraints, in the order they are checked.
constexpr Verdict validate_sm90(const GemmConfig& c, const ArchTraits& arch) {
  const int es = size_of(c.operand());
  if (auto v = require(arch.has_wgmma, Rule::math_needs_arch, arch.cc, 90); !v.ok()) return v;
  if (auto v = require(swap_ab_violations(c) == 0, Rule::swap_ab_operands, swap_ab_violations(c), 0); !v.ok()) return v;
  if (auto v = require(sm90_mn_major_operands_unsupported(c) == 0, Rule::wgmma_k_major, sm90_mn_major_operands_unsupported(c), 0); !v.ok()) return v;
  // One k-tile row is one swizzle row: 128 bytes (BK = 64 for 16-bit operands, 32 for fp32 / tf32), or 64 bytes
  // with the 64-byte swizzle (BK = 32, 16-bit, both operands K-major: the MN-major boxes are 64 K-rows deep).
  const bool half_rows = c.tile.k * es == smem_layout::sm90_swizzle_bytes / 2 && es == 2 && c.a_k_contiguous() && c.b_k_contiguous();
  if (auto v = require(c.tile.k * es == smem_layout::sm90_swizzle_bytes || half_rows, Rule::swizzle_row_bytes, c.tile.k * es, smem_layout::sm90_swizzle_bytes); !v.ok()) return v;
  if (auto v = require(c.warp.m > 0 && c.tile.m % c.warp.m == 0, Rule::warp_divides_tile, c.tile.m, c.warp.m); !v.ok()) return v;
  if (auto v = require(c.warp.n > 0 && c.tile.n % c.warp.n == 0, Rule::warp_divides_tile, c.tile.n, c.warp.n); !v.ok()) return v;
  // Ping-pong consumers take turns on whole tiles: each warpgroup tile is the block tile.
  if (auto v = require(c.schedule != WgSchedule::pingpong || c.warps_m() * c.warps_n() == 1, Rule::pingpong_whole_tile, c.warps_m() * c.warps_n(), 1); !v.ok()) return v;
  // Each consumer warpgroup issues m64 instructions, one instruction wide: N = WN, one of the wgmma
  // wrappers the kernel has (sm90_wgmma_n_available). An MN-major B splits into whole 64-element TMA
  // boxes: WN a multiple of 64 (96 / 112 take K-major B: 'tn', 'nn'). A WN that is not a multiple of 32
  // (112) stages its epilogue in 16-column chunks, at most 8 per warp band (epilogue.cuh:
  // stage_chunk_at): one m64 block (WM = 64).
  if (auto v = require(c.warp.m % 64 == 0, Rule::instr_divides_warp, c.warp.m, 64); !v.ok()) return v;
  if (auto v = require(sm90_wgmma_n_available(c.math, c.warp.n), Rule::wgmma_n_shape, c.warp.n, 0); !v.ok()) return v;
  if (auto v = require(c.b_k_contiguous() || c.warp.n % 64 == 0, Rule::instr_divides_warp, c.warp.n, 64); !v.ok()) return v;
  if (auto v = require(c.warp.n % 32 == 0 || c.warp.m == 64, Rule::instr_divides_warp, c.warp.n, 32); !v.ok()) return v;
  // Consumer warpgroups split the tile along M while each keeps whole m64 blocks: per k16 step a 128x256
  // tile's wgmmas then read 20 KB of shared memory as 2 x m64n256, 24 KB as 4 x m64n128 (A and B slices
  // once per instruction). Measured on the H200 (bf16, f16, tf32; 1024^3..8192^3): 128x256 with 128x128
  // warpgroup tiles ran 2-12% slower than with 64x256 at every shape (s4-batchA).
  if (auto v = require(c.warp.n == c.tile.n || c.tile.m / (c.warps_m() * c.warps_n()) < 64, Rule::wgmma_full_width, c.warp.n, c.tile.n); !v.ok()) return v;
  if (auto v = require(c.tile.m <= 256, Rule::tma_box_extent, c.tile.m, 256); !v.ok()) return v;
  if (auto v = require(c.tile.n <= 256, Rule::tma_box_extent, c.tile.n, 256); !v.ok()) return v;
  const int wgs = c.consumer_warpgroups();
  if (auto v = require(wgs >= 1 && wgs <= 2, Rule::warpgroups_in_range, wgs, 2); !v.ok()) return v;
  const GemmResources r = estimate_resources(c);
  if (auto v = require(r.threads <= arch.max_threads_per_block, Rule::threads_in_range, r.threads, arch.max_threads_per_block); !v.ok()) return v;
  // Up to 16: a 64x64 tile's 16 KB stages fit 13 deep (Sm90WgmmaF16N64Deep; the ring has no other limit).
  if (auto v = require(c.stages >= 2 && c.stages <= 16, Rule::stages_in_range, c.stages, 16); !v.ok()) return v;
  if (auto v = require(r.smem_bytes <= arch.smem_optin_bytes, Rule::smem_fits, r.smem_bytes, arch.smem_optin_bytes); !v.ok()) return v;
  if (auto v = require(sm90_consumer_registers(c) <= sm90_consumer_register_budget(c), Rule::registers_per_thread, sm90_consumer_registers(c), sm90_consumer_register_budget(c)); !v.ok()) return v;
  // 16-byte vectors: 8 16-bit elements or 4 fp32 elements.
  if (auto v = require(c.align * es == 16, Rule::tma_alignment, c.align * es, 16); !v.ok()) return v;
  return {};
}

// Blocks per multiprocessor an instance is compiled for (the minimum in __launch_bounds__). SIMT
// instances take two when the register estimate allows: their FFMA loops need the extra warps to
// hide shared-memory latency (measured on H200: 36.7 → 38.9 TF/s at 4096³). Tensor-core instances
// leave the compiler all 255 registers.
constexpr int target_blocks_per_sm(const GemmConfig& c, const ArchTraits& arch = sm80) {
  if (c.math != MathOp::simt_f32) return 1;
  const GemmResources r = estimate_resources(c);
  return r.threads * r.registers * 2 <= arch.regs_per_sm ? 2 : 1;
}

// The named constraints, in the order they are checked. The first violated one is the reason.
constexpr Verdict validate(const GemmConfig& c, const ArchTraits& arch) {
  if (is_wgmma(c.math)) return validate_sm90(c, arch);
  if (auto v = require(swap_ab_violations(c) == 0, Rule::swap_ab_operands, swap_ab_violations(c), 0); !v.ok()) return v;
  if (auto v = require(c.schedule == WgSchedule::cooperative, Rule::pingpong_whole_tile, c.warps_m() * c.warps_n(), 0); !v.ok()) return v;
  const bool simt = c.math == MathOp::simt_f32;
  const InstrShape is = instr_shape(c.math);
  const int es = size_of(c.operand());
  if (auto v = require(!uses_tensor_cores(c.math) || arch.cc >= 80, Rule::math_needs_arch, arch.cc, 80); !v.ok()) return v;
  if (auto v = require(c.warp.m > 0 && c.tile.m % c.warp.m == 0, Rule::warp_divides_tile, c.tile.m, c.warp.m); !v.ok()) return v;
  if (auto v = require(c.warp.n > 0 && c.tile.n % c.warp.n == 0, Rule::warp_divides_tile, c.tile.n, c.warp.n); !v.ok()) return v;
  // The epilogue works in 16-row bands of each warp tile, 4 columns per vector.
  if (auto v = require(c.warp.m % smem_layout::epilogue_band_rows == 0, Rule::instr_divides_warp, c.warp.m, smem_layout::epilogue_band_rows); !v.ok()) return v;
  if (auto v = require(c.warp.n % 4 == 0, Rule::instr_divides_warp, c.warp.n, 4); !v.ok()) return v;
  if (simt) {
    const int tm = simt_thread_tile_m(c), tn = simt_thread_tile_n(c);
    if (auto v = require(c.warp.m % 4 == 0 && (tm == 4 || tm == 8), Rule::thread_tile_shape, tm, 8); !v.ok()) return v;
    if (auto v = require(c.warp.n % 8 == 0 && (tn == 4 || tn == 8), Rule::thread_tile_shape, tn, 8); !v.ok()) return v;
  } else {
    if (auto v = require(c.warp.m % is.m == 0, Rule::instr_divides_warp, c.warp.m, is.m); !v.ok()) return v;
    // B fragments are fetched two n-blocks at a time (ldmatrix.x4), so WN is a multiple of 16.
    if (auto v = require(c.warp.n % (2 * is.n) == 0, Rule::instr_divides_warp, c.warp.n, 2 * is.n); !v.ok()) return v;
    // The mainloop double-buffers fragments across k-steps and tiles: an even number of steps per tile.
    if (auto v = require(c.tile.k % (2 * is.k) == 0, Rule::instr_divides_bk, c.tile.k, 2 * is.k); !v.ok()) return v;
  }
  const GemmResources r = estimate_resources(c);
  if (auto v = require(r.threads >= 32 && r.threads <= arch.max_threads_per_block, Rule::threads_in_range, r.threads, arch.max_threads_per_block); !v.ok()) return v;
  if (auto v = require(c.stages >= 2 && c.stages <= 8, Rule::stages_in_range, c.stages, 8); !v.ok()) return v;
  if (auto v = require(r.smem_bytes <= arch.smem_optin_bytes, Rule::smem_fits, r.smem_bytes, arch.smem_optin_bytes); !v.ok()) return v;
  if (auto v = require(r.registers <= arch.max_regs_per_thread, Rule::registers_per_thread, r.registers, arch.max_regs_per_thread); !v.ok()) return v;
  if (auto v = require(r.registers * r.threads <= arch.regs_per_sm, Rule::registers_per_sm, static_cast<long long>(r.registers) * r.threads, arch.regs_per_sm); !v.ok()) return v;
  const int vbytes = c.align * es;
  const bool pow2 = c.align > 0 && (c.align & (c.align - 1)) == 0;
  if (auto v = require(pow2 && (c.align == 1 || (vbytes >= 4 && vbytes <= 16)), Rule::vector_width_legal, vbytes, 16); !v.ok()) return v;
  // Contiguous extents of the A and B smem tiles must hold whole vectors.
  const int a_contig = c.a_k_contiguous() ? c.tile.k : c.tile.m;
  const int b_contig = c.b_k_contiguous() ? c.tile.k : c.tile.n;
  if (auto v = require(a_contig % c.align == 0, Rule::vector_divides_tile, a_contig, c.align); !v.ok()) return v;
  if (auto v = require(b_contig % c.align == 0, Rule::vector_divides_tile, b_contig, c.align); !v.ok()) return v;
  const int a_vectors = c.tile.m * c.tile.k / c.align, b_vectors = c.tile.n * c.tile.k / c.align;
  if (auto v = require(a_vectors % r.threads == 0, Rule::copy_divides_threads, a_vectors, r.threads); !v.ok()) return v;
  if (auto v = require(b_vectors % r.threads == 0, Rule::copy_divides_threads, b_vectors, r.threads); !v.ok()) return v;
  return {};
}

}  // namespace ktune
