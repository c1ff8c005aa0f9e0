// ktune/gemm/config.hpp — one point of a GEMM kernel family's parameter space.
//
// A GemmConfig is a structural literal type, so it is used directly as a template argument:
// `gemm_kernel<Config>` is one instance. Everything a kernel's code shape depends on is here;
// everything else (M, N, K, leading dimensions, epilogue operation, output type, raster order)
// is a run-time argument, so one instance serves every problem it can implement.
#pragma once
#include "ktune/fixed_string.hpp"
#include "ktune/types.hpp"

namespace ktune {

// Both compare member-wise, so GemmConfig's and ConvConfig's defaulted == are usable (without them
// those are implicitly deleted).
struct TileShape {  // threadblock tile BM×BN×BK
  int m, n, k;
  friend constexpr bool operator==(const TileShape&, const TileShape&) = default;
};
struct WarpShape {  // per-warp tile WM×WN (wgmma instances: per consumer warpgroup)
  int m, n;
  friend constexpr bool operator==(const WarpShape&, const WarpShape&) = default;
};

// How the consumer warpgroups of a wgmma (sm90) instance share the block's tiles. Cooperative: the
// block tile is split into `warp` tiles, one per consumer warpgroup, all computed together. Ping-pong:
// two consumer warpgroups take turns on whole tiles (`warp` = the block tile), so one's epilogue runs
// under the other's mainloop. Swap AB: cooperative consumers on the transposed problem D^T = B·A^T (the
// launcher swaps A and B, M and N; the epilogue stores the tile transposed into D), so the instance's
// tile and warp shapes are in that swapped orientation: tile.m runs along the problem's N, tile.n along
// its M (problem_tile). 'tn' 16-bit operands only (rule swap_ab_operands). Other instances are cooperative.
enum class WgSchedule : unsigned char { cooperative, pingpong, swap_ab };

struct GemmConfig {
  int arch_cc = 80;                  // lowest architecture the instance is built and pruned for
  MathOp math = MathOp::mma_f16;
  Layout a_layout = Layout::row;
  Layout b_layout = Layout::col;
  TileShape tile{128, 128, 32};
  WarpShape warp{64, 64};
  int stages = 3;
  int align = 8;                     // elements per global vector access of A and B
  WgSchedule schedule = WgSchedule::cooperative;

  constexpr DType operand() const { return operand_type(math); }
  constexpr int warps_m() const { return warp.m > 0 ? tile.m / warp.m : 0; }
  constexpr int warps_n() const { return warp.n > 0 ? tile.n / warp.n : 0; }
  // wgmma instances (sm90): `warp` is the tile of one consumer warpgroup (4 warps issuing wgmma
  // together), and one more warpgroup produces (issues the TMA loads). Cooperative instances have one
  // consumer warpgroup per warpgroup tile of the block tile, ping-pong instances two (taking turns).
  constexpr int consumer_warpgroups() const {
    return !is_wgmma(math) ? 0 : schedule == WgSchedule::pingpong ? 2 : warps_m() * warps_n();
  }
  constexpr int warps() const { return is_wgmma(math) ? 4 * (consumer_warpgroups() + 1) : warps_m() * warps_n(); }
  constexpr int threads() const { return warps() * 32; }
  // Is the operand's contiguous dimension K? (A row-major, B column-major.)
  constexpr bool a_k_contiguous() const { return a_layout == Layout::row; }
  constexpr bool b_k_contiguous() const { return b_layout == Layout::col; }

  friend constexpr bool operator==(const GemmConfig&, const GemmConfig&) = default;
};

// Does the instance run the transposed problem (WgSchedule::swap_ab)?
constexpr bool is_swap_ab(const GemmConfig& c) { return c.schedule == WgSchedule::swap_ab; }
// The block tile in the problem's orientation (BM along M, BN along N): a swap-AB instance's tile is
// named and computed in the swapped orientation (tile.m along N, tile.n along M).
constexpr TileShape problem_tile(const GemmConfig& c) {
  return is_swap_ab(c) ? TileShape{c.tile.n, c.tile.m, c.tile.k} : c.tile;
}

constexpr std::string_view math_short_name(MathOp m) {
  switch (m) {
    case MathOp::simt_f32: return "simt_f32";
    case MathOp::mma_f16: return "f16";
    case MathOp::mma_bf16: return "bf16";
    case MathOp::mma_tf32: return "tf32";
    case MathOp::wgmma_f16: return "wgmma_f16";
    case MathOp::wgmma_bf16: return "wgmma_bf16";
    case MathOp::wgmma_tf32: return "wgmma_tf32";
  }
  return "?";
}

// Stable, readable instance name, e.g. ktune_gemm_sm80_bf16_tn_128x256x32_w64x64_s4_a8 (ping-pong sm90
// instances: ..._tn_pp_128x128x64_...; swap-AB ones ..._tn_swap_64x112x64_..., the tile in the swapped
// orientation).
// Names are part of the public interface (tuning caches and users refer to them): never reorder.
using InstanceName = FixedString<80>;
constexpr InstanceName instance_name(const GemmConfig& c) {
  InstanceName s;
  s.append("ktune_gemm_sm").append(c.arch_cc).append('_').append(math_short_name(c.math)).append('_');
  s.append(layout_letter(c.a_layout)).append(layout_letter(c.b_layout)).append('_');
  if (c.schedule == WgSchedule::pingpong) s.append("pp_");
  if (c.schedule == WgSchedule::swap_ab) s.append("swap_");
  s.append(c.tile.m).append('x').append(c.tile.n).append('x').append(c.tile.k);
  s.append("_w").append(c.warp.m).append('x').append(c.warp.n);
  s.append("_s").append(c.stages).append("_a").append(c.align);
  return s;
}

}  // namespace ktune
