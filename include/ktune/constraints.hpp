// ktune/constraints.hpp — a rule verdict: which named constraint rejected a configuration and with
// which numbers. Verdicts are constexpr values; text is made only when someone asks for it.
#pragma once
#include <string>
#include <string_view>

namespace ktune {

enum class Rule {
  none,                    // accepted
  math_needs_arch,         // the math instruction does not exist on the target architecture
  warp_divides_tile,       // BM % WM and BN % WN must be 0
  instr_divides_warp,      // WM, WN must be multiples of the instruction (or thread-tile) shape
  instr_divides_bk,        // BK must hold an even number of instruction K steps
  threads_in_range,        // 32 ≤ threads ≤ max threads per block
  stages_in_range,         // 2 ≤ stages ≤ 8, sm90 16 (a pipeline needs a slot being filled and one read)
  smem_fits,               // shared memory ≤ the architecture's opt-in limit per block
  registers_per_thread,    // estimated registers ≤ 255 (beyond that the compiler spills)
  registers_per_sm,        // threads × registers ≤ register file (one block must fit)
  vector_width_legal,      // vector access of 4..16 bytes (or one element) and a power of two
  vector_divides_tile,     // the tile's contiguous extent must be a multiple of the vector
  copy_divides_threads,    // a tile's vectors must spread evenly over the block's threads
  thread_tile_shape,       // SIMT thread tile must be 4 or 8 wide in M and N (float4 smem reads)
  // sm90 (TMA + wgmma) instances:
  swizzle_row_bytes,       // BK·element size must be one 128-byte swizzle row (or 64 bytes: 16-bit, both K-major)
  warpgroups_in_range,     // 1 or 2 consumer warpgroups (plus the producer warpgroup)
  tma_box_extent,          // a TMA box extent (BM or BN) is at most 256 elements
  tma_alignment,           // TMA needs 16-byte aligned rows and base addresses: 16-byte vectors
  wgmma_k_major,           // wgmma on 32-bit (tf32) operands reads K-major shared memory only: A row-, B column-major
  wgmma_full_width,        // a consumer warpgroup tile spans the block tile's width when the tile splits along M alone
  pingpong_whole_tile,     // ping-pong consumers (wgmma only) each compute a whole block tile: warp tile = block tile
  wgmma_n_shape,           // the warpgroup tile's N is one the kernel has a wgmma wrapper for (kernel/sm90/wgmma.cuh)
  swap_ab_operands,        // swap AB (sm90 wgmma only): 'tn' (both operands K-major), 16-bit operands, cooperative consumers
};

constexpr std::string_view rule_name(Rule r) {
  switch (r) {
    case Rule::none: return "ok";
    case Rule::math_needs_arch: return "math_needs_arch";
    case Rule::warp_divides_tile: return "warp_divides_tile";
    case Rule::instr_divides_warp: return "instr_divides_warp";
    case Rule::instr_divides_bk: return "instr_divides_bk";
    case Rule::threads_in_range: return "threads_in_range";
    case Rule::stages_in_range: return "stages_in_range";
    case Rule::smem_fits: return "smem_fits";
    case Rule::registers_per_thread: return "registers_per_thread";
    case Rule::registers_per_sm: return "registers_per_sm";
    case Rule::vector_width_legal: return "vector_width_legal";
    case Rule::vector_divides_tile: return "vector_divides_tile";
    case Rule::copy_divides_threads: return "copy_divides_threads";
    case Rule::thread_tile_shape: return "thread_tile_shape";
    case Rule::swizzle_row_bytes: return "swizzle_row_bytes";
    case Rule::warpgroups_in_range: return "warpgroups_in_range";
    case Rule::tma_box_extent: return "tma_box_extent";
    case Rule::tma_alignment: return "tma_alignment";
    case Rule::wgmma_k_major: return "wgmma_k_major";
    case Rule::wgmma_full_width: return "wgmma_full_width";
    case Rule::pingpong_whole_tile: return "pingpong_whole_tile";
    case Rule::wgmma_n_shape: return "wgmma_n_shape";
    case Rule::swap_ab_operands: return "swap_ab_operands";
  }
  return "?";
}

struct Verdict {
  Rule rule = Rule::none;
  long long value = 0;  // what the configuration needs
  long long limit = 0;  // what the rule allows

  constexpr bool ok() const { return rule == Rule::none; }
  friend constexpr bool operator==(const Verdict&, const Verdict&) = default;

  std::string describe() const {
    auto n = [](long long v) { return std::to_string(v); };
    switch (rule) {
      case Rule::none: return "ok";
      case Rule::math_needs_arch: return "math instruction needs sm" + n(limit) + ", family targets sm" + n(value);
      case Rule::warp_divides_tile: return "tile extent " + n(value) + " is not a multiple of warp tile " + n(limit);
      case Rule::instr_divides_warp: return "warp tile extent " + n(value) + " is not a multiple of " + n(limit);
      case Rule::instr_divides_bk: return "BK " + n(value) + " is not a multiple of two instruction K steps (" + n(limit) + ")";
      case Rule::threads_in_range: return n(value) + " threads outside [32, " + n(limit) + "]";
      case Rule::stages_in_range: return n(value) + " stages outside [2, " + n(limit) + "]";
      case Rule::smem_fits:
        return "shared memory " + n(value) + " B exceeds the opt-in limit " + n(limit) + " B";
      case Rule::registers_per_thread:
        return "estimated " + n(value) + " registers per thread exceed " + n(limit);
      case Rule::registers_per_sm:
        return "estimated " + n(value) + " registers per block exceed the register file " + n(limit);
      case Rule::vector_width_legal: return "vector access of " + n(value) + " bytes is not 4, 8 or 16 bytes or one element";
      case Rule::vector_divides_tile:
        return "contiguous tile extent " + n(value) + " is not a multiple of the vector width " + n(limit);
      case Rule::copy_divides_threads:
        return n(value) + " vectors per tile do not divide evenly over " + n(limit) + " threads";
      case Rule::thread_tile_shape: return "thread tile extent " + n(value) + " is not 4 or 8";
      case Rule::swizzle_row_bytes:
        return "BK spans " + n(value) + " bytes, the 128-byte swizzle needs exactly " + n(limit) +
               " (or 64 with the 64-byte swizzle: 16-bit operands, both K-major)";
      case Rule::warpgroups_in_range: return n(value) + " consumer warpgroups outside [1, " + n(limit) + "]";
      case Rule::tma_box_extent: return "TMA box extent " + n(value) + " exceeds " + n(limit) + " elements";
      case Rule::tma_alignment:
        return "TMA needs 16-byte aligned rows, " + n(value) + "-byte vectors are not (need " + n(limit) + ")";
      case Rule::wgmma_k_major:
        return "wgmma tf32 reads only K-major operands (A row-major, B column-major: layout tn), " + n(value) +
               " operand(s) are MN-major";
      case Rule::wgmma_full_width:
        return "warpgroup tile width " + n(value) + " is narrower than the block tile's " + n(limit) +
               " although the tile splits along M alone into m64 blocks (narrower wgmmas read more shared memory per MMA)";
      case Rule::pingpong_whole_tile:
        return "ping-pong consumers each compute a whole tile (wgmma instances only): the tile holds " + n(value) +
               " warpgroup tiles, not " + n(limit);
      case Rule::wgmma_n_shape:
        return "warpgroup tile width " + n(value) +
               " has no wgmma wrapper (f16/bf16: N = 64, 96, 112, 128, 192, 256; tf32: 64, 128, 192, 256)";
      case Rule::swap_ab_operands:
        return "swap AB runs the transposed problem on the sm90 wgmma kernel with A and B exchanged: both operands "
               "K-major ('tn': A row-major, B column-major), 16-bit operands (wgmma_f16/wgmma_bf16), cooperative "
               "consumers; the configuration breaks " + n(value) + " of these";
    }
    return "?";
  }
  std::string to_string() const { return ok() ? "ok" : std::string(rule_name(rule)) + ": " + describe(); }
};

// Helper for rules written as `if (auto v = check(cond, Rule::x, value, limit); !v.ok()) return v;`
constexpr Verdict require(bool cond, Rule rule, long long value, long long limit) {
  return cond ? Verdict{} : Verdict{rule, value, limit};
}

}  // namespace ktune
