// ktune/gemm/route/plan.hpp — the repack route's plan (host code): which operands of a problem are
// copied into 16-byte-aligned scratch, with which leading dimension, where in the workspace.
//
// A route runs an aligned instance on a problem whose A or B rows are not 16-byte aligned (odd K,
// odd leading dimensions, odd pointers): the misaligned operand is copied, line by line, into scratch
// whose lines are padded to a multiple of 8 elements (16 bytes) and whose padding is zero. The inner
// instance then sees the user's M, N, K with the scratch's leading dimension:
//   - its loads of the contiguous extent may read up to 7 elements past it (whole 16-byte vectors,
//     or TMA boxes clipped at the extent): inside the scratch line, and zero;
//   - along K the zeros contribute nothing; along M or N they only reach rows/columns of D that are
//     never stored.
// D, C, bias and residual stay the user's: both inner epilogues (sm80 store_tile, sm90
// store_accumulators) store 4-element vectors only when D, C, bias and residual allow them, and
// scalars otherwise, so D needs no copy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ktune/problem.hpp"
#include "ktune/types.hpp"

namespace ktune::route {

// Entry names are repack_prefix + the inner instance's name; the family column says repack_family.
inline constexpr std::string_view repack_prefix = "route_repack+";
inline constexpr std::string_view repack_family = "route_repack";

// Elements per 16-byte vector of the inner instances' operands (f16/bf16).
inline constexpr int repack_vector = 8;
// Scratch lines of at least this many elements are padded to 128 bytes (64 elements) instead of 16:
// TMA boxes and cp.async vectors of a line then start on a 128-byte line, as in a packed problem.
inline constexpr std::int64_t long_line = 512;
// Byte alignment of each operand's scratch inside the workspace.
inline constexpr std::size_t scratch_alignment = 256;

constexpr std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }
constexpr std::size_t round_up_bytes(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

// Leading dimension (elements) of the scratch copy of lines of `contiguous` elements.
constexpr std::int64_t scratch_ld(std::int64_t contiguous) {
  return round_up(contiguous, contiguous >= long_line ? 64 : repack_vector);
}

// One operand: `lines` lines of `contiguous` elements, `ld_src` apart in the user's buffer, `ld` apart
// in the scratch at byte `offset` of the workspace (`bytes` long).
struct RepackOperand {
  bool repack = false;
  std::int64_t lines = 0, contiguous = 0, ld_src = 0, ld = 0;
  std::size_t offset = 0, bytes = 0;
};

struct RepackPlan {
  RepackOperand a, b;
  std::size_t workspace_bytes = 0;  // what this plan uses
  int operands() const { return int(a.repack) + int(b.repack); }
};

namespace detail {
inline RepackOperand operand_plan(bool repack, Layout l, std::int64_t rows, std::int64_t cols, std::int64_t ld_src,
                                  int elem_bytes) {
  RepackOperand o;
  o.repack = repack;
  o.lines = l == Layout::row ? rows : cols;
  o.contiguous = l == Layout::row ? cols : rows;
  o.ld_src = ld_src;
  o.ld = scratch_ld(o.contiguous);
  o.bytes = repack ? round_up_bytes(static_cast<std::size_t>(o.lines * o.ld) * static_cast<std::size_t>(elem_bytes),
                                    scratch_alignment)
                   : 0;
  return o;
}
}  // namespace detail

// Does the operand need the copy? Its vectors (alignment_of) are narrower than 16 bytes.
constexpr bool needs_repack(int operand_alignment) { return operand_alignment % repack_vector != 0; }

// The plan for a resolved, validated problem with alignment `al`: only the misaligned operands move.
inline RepackPlan plan_repack(const GemmDesc& d, const GemmAlignment& al) {
  const int eb = size_of(d.ab_type);
  RepackPlan p;
  p.a = detail::operand_plan(needs_repack(al.a), d.a_layout, d.m, d.k, d.lda, eb);
  p.b = detail::operand_plan(needs_repack(al.b), d.b_layout, d.k, d.n, d.ldb, eb);
  p.a.offset = 0;
  p.b.offset = p.a.bytes;
  p.workspace_bytes = p.a.bytes + p.b.bytes;
  return p;
}

// Workspace a route needs for a resolved problem whatever its pointers: both operands copied (the
// workspace query knows the leading dimensions but not the pointers' alignment).
inline std::size_t repack_workspace_bound(const GemmDesc& d) {
  return plan_repack(d, GemmAlignment{1, 1, 1}).workspace_bytes;
}

// Bytes the copies move (read + write) for a resolved problem when both operands are copied: what the
// cost model charges a route on top of its inner instance.
inline double repack_traffic_bytes(const GemmDesc& d) {
  const RepackPlan p = plan_repack(d, GemmAlignment{1, 1, 1});
  const double eb = size_of(d.ab_type);
  auto moved = [&](const RepackOperand& o) { return eb * double(o.lines) * double(o.contiguous + o.ld); };
  return moved(p.a) + moved(p.b);
}

}  // namespace ktune::route
