// Host tests: the constexpr resource model (shared memory, threads, registers) and the named
// constraint rules, each fired by a crafted configuration with the reason it must give.
#include <doctest/doctest.h>

#include <string>

#include "ktune/arch.hpp"
#include "ktune/constraints.hpp"
#include "ktune/gemm/config.hpp"
#include "ktune/gemm/resource_model.hpp"
#include "ktune/gemm/split_k_support.hpp"

using namespace ktune;

namespace {

constexpr GemmConfig cfg(MathOp m, TileShape t, WarpShape w, int stages, int align, Layout la = Layout::row,
                         Layout lb = Layout::col) {
  return GemmConfig{80, m, la, lb, t, w, stages, align};
}

// A pre-Ampere architecture: no mma.sync for f16/bf16/tf32 in ktune's kernels.
constexpr ArchTraits sm75_like{"sm75", 75, 64 * 1024, 64 * 1024, 65536, 255, 1024, 1024, false, false};

}  // namespace

// ---- Resource model ----------------------------------------------------------------------------------

TEST_CASE("resource model: 128x256x32 f16 4 stages, 64x64 warps") {
  constexpr GemmConfig c = cfg(MathOp::mma_f16, {128, 256, 32}, {64, 64}, 4, 8);
  // (128 + 256) rows × 32 halves × 2 B = 24576 B per stage, 4 stages.
  static_assert(stage_bytes(c) == 24576);
  constexpr GemmResources r = estimate_resources(c);
  static_assert(r.smem_bytes == 98304);
  CHECK(r.smem_bytes == 98304);
  CHECK(r.threads == 256);  // 2×4 warps
  CHECK(c.warps_m() == 2);
  CHECK(c.warps_n() == 4);
  // 128 accumulators + 2×(4 A-frags × 4 words + 8 B-frags × 2 words) + 2 k-tile iterators × 7 + 40
  // (ptxas: 230 on sm_90a, 226 on sm_80).
  static_assert(mma_sm80_iterated_copies(c));
  CHECK(r.registers == 246);
  CHECK(validate(c, sm80).ok());
  CHECK(validate(c, sm90).ok());
}

TEST_CASE("resource model: k-tile iterators cost the same registers at BK = 64; K-contiguous operands one per k-step") {
  // The copies' iterators keep one pointer, stride and bounds per operand whatever the vector count: 128x256x64
  // and 256x128x64 with 64x64 warps, 3 stages (ptxas on sm_90a: 244 / 242 registers, 'nt' 231, 0 spills) fit.
  // K-contiguous operands read by ldmatrix keep one offset per k-step: 2 more each at BK = 64 ('tn': +4).
  constexpr GemmConfig tn32 = cfg(MathOp::mma_bf16, {128, 256, 32}, {64, 64}, 4, 8);
  constexpr GemmConfig tn64 = cfg(MathOp::mma_bf16, {128, 256, 64}, {64, 64}, 3, 8);
  constexpr GemmConfig tall = cfg(MathOp::mma_bf16, {256, 128, 64}, {64, 64}, 3, 8);
  constexpr GemmConfig nt64 = cfg(MathOp::mma_bf16, {128, 256, 64}, {64, 64}, 3, 8, Layout::col, Layout::row);
  static_assert(mma_sm80_iterated_copies(tn64) && mma_sm80_iterated_copies(tall) && mma_sm80_iterated_copies(nt64));
  CHECK(estimate_resources(tn64).registers == estimate_resources(tn32).registers + 4);
  CHECK(estimate_resources(tall).registers == estimate_resources(tn64).registers);
  CHECK(estimate_resources(nt64).registers == estimate_resources(tn32).registers);
  CHECK(estimate_resources(tn64).registers == 250);
  CHECK(validate(tn64, sm80).ok());
  CHECK(validate(tall, sm80).ok());
  // Four stages of 48 KB exceed sm_80's 163 KB of shared memory.
  CHECK(validate(cfg(MathOp::mma_bf16, {128, 256, 64}, {64, 64}, 4, 8), sm80).rule == Rule::smem_fits);
  // 2-byte vectors (unaligned rows) are copied per vector: 2 registers each.
  constexpr GemmConfig a1 = cfg(MathOp::mma_f16, {128, 128, 32}, {32, 64}, 3, 1);
  static_assert(!mma_sm80_iterated_copies(a1));
  CHECK(mma_sm80_copy_registers(a1) == 2 * (128 + 128) * 32 / 256);
}

TEST_CASE("resource model: MN-contiguous f16/bf16 operands with constant ldmatrix.trans offsets cost no extra registers") {
  // 'nt' 128x256x32 with 64x64 warps: each warp's A and B fragments stay inside one 128-byte span and
  // the swizzle repeats every k16 step, so the offsets are constants (ptxas: 231 registers on sm_90a,
  // 228 on sm_80, like 'tn' at 230): the same estimate as 'tn', a valid instance (it was pruned at 256).
  constexpr GemmConfig tn = cfg(MathOp::mma_bf16, {128, 256, 32}, {64, 64}, 4, 8);
  constexpr GemmConfig nt = cfg(MathOp::mma_bf16, {128, 256, 32}, {64, 64}, 4, 8, Layout::col, Layout::row);
  static_assert(mma_sm80_fixed_trans_offsets(nt, 128, 64) && mma_sm80_fixed_trans_offsets(nt, 256, 64));
  CHECK(estimate_resources(nt).registers == estimate_resources(tn).registers);
  CHECK(validate(nt, sm80).ok());
  CHECK(validate(cfg(MathOp::mma_f16, {128, 128, 32}, {64, 64}, 4, 8, Layout::col, Layout::row), sm80).ok());
  // A 128-wide warp span needs per-fragment offsets (fragments past one 128-byte span).
  CHECK_FALSE(mma_sm80_fixed_trans_offsets(nt, 256, 128));
  // tf32 reads MN-contiguous operands with scalar loads at computed offsets: 6 registers per such operand.
  constexpr GemmConfig tf_tn = cfg(MathOp::mma_tf32, {128, 128, 32}, {32, 64}, 3, 4);
  constexpr GemmConfig tf_nt = cfg(MathOp::mma_tf32, {128, 128, 32}, {32, 64}, 3, 4, Layout::col, Layout::row);
  static_assert(!mma_sm80_fixed_trans_offsets(tf_nt, 128, 32));
  // ('tn' keeps one ldmatrix offset per k-step of its K-contiguous operands: 4 tf32 k8 steps, 2 beyond the base.)
  CHECK(mma_sm80_kstep_offset_registers(tf_tn, true) == 2);
  CHECK(estimate_resources(tf_nt).registers == estimate_resources(tf_tn).registers + 12 - 2 * 2);
}

TEST_CASE("sm90 model: wgmma tf32 uses BK = 32 (one 128-byte row of fp32), K-major operands, 4-element TMA vectors") {
  auto wg = [](TileShape t, WarpShape w, int stages, int align, Layout la = Layout::row, Layout lb = Layout::col) {
    return GemmConfig{90, MathOp::wgmma_tf32, la, lb, t, w, stages, align};
  };
  constexpr GemmConfig tf32{90, MathOp::wgmma_tf32, Layout::row, Layout::col, {128, 256, 32}, {64, 256}, 4, 4};
  constexpr GemmConfig f16{90, MathOp::wgmma_f16, Layout::row, Layout::col, {128, 256, 64}, {64, 256}, 4, 8};
  static_assert(validate(tf32, sm90).ok());
  static_assert(is_wgmma(tf32.math) && tf32.operand() == DType::f32);
  static_assert(instr_shape(MathOp::wgmma_tf32).k == 8);
  // Half the K per stage at twice the element size: the same bytes, the same shared memory.
  static_assert(stage_bytes(tf32) == (128 + 256) * 32 * 4);
  CHECK(estimate_resources(tf32) == estimate_resources(f16));
  CHECK(tf32.threads() == 384);  // producer + 2 consumer warpgroups
  // BK = 64 fp32 spans 256 bytes: not one swizzle row.
  const Verdict vk = validate(wg({128, 256, 64}, {64, 256}, 3, 4), sm90);
  CHECK(vk.rule == Rule::swizzle_row_bytes);
  CHECK(vk.value == 256);
  // 64-byte rows (the 64-byte swizzle): BK = 32 for 16-bit operands, both K-major; tf32 BK = 16 and MN-major
  // operands (64-row boxes of 128-byte rows) keep the rule.
  constexpr GemmConfig k32{90, MathOp::wgmma_f16, Layout::row, Layout::col, {256, 64, 32}, {256, 64}, 10, 8, WgSchedule::pingpong};
  static_assert(validate(k32, sm90).ok());
  static_assert(stage_bytes(k32) == (256 + 64) * 64);
  CHECK(validate(GemmConfig{90, MathOp::wgmma_f16, Layout::col, Layout::col, {128, 128, 32}, {64, 128}, 8, 8}, sm90).rule ==
        Rule::swizzle_row_bytes);
  CHECK(validate(wg({128, 256, 16}, {64, 256}, 8, 4), sm90).rule == Rule::swizzle_row_bytes);
  // MN-major operands: wgmma has no transpose for 32-bit types.
  const Verdict vnt = validate(wg({128, 256, 32}, {64, 256}, 4, 4, Layout::col, Layout::col), sm90);
  CHECK(vnt.rule == Rule::wgmma_k_major);
  CHECK(vnt.value == 1);
  CHECK(validate(wg({128, 256, 32}, {64, 256}, 4, 4, Layout::col, Layout::row), sm90).value == 2);
  CHECK(vnt.to_string().find("wgmma_k_major") == 0);
  // TMA: 16-byte vectors are 4 fp32 elements.
  CHECK(validate(wg({128, 256, 32}, {64, 256}, 4, 8), sm90).rule == Rule::tma_alignment);
  CHECK(validate(wg({128, 256, 32}, {64, 256}, 4, 1), sm90).rule == Rule::tma_alignment);
  // 5 stages of 48 KB exceed 227 KB.
  CHECK(validate(wg({128, 256, 32}, {64, 256}, 5, 4), sm90).rule == Rule::smem_fits);
  // Not on Ampere.
  CHECK(validate(tf32, sm80).rule == Rule::math_needs_arch);
  // Serves tf32 problems only (not exact fp32, not 16-bit ones).
  CHECK(math_implements(MathOp::wgmma_tf32, MathOp::mma_tf32));
  CHECK_FALSE(math_implements(MathOp::wgmma_tf32, MathOp::simt_f32));
  CHECK_FALSE(math_implements(MathOp::wgmma_tf32, MathOp::mma_f16));
  CHECK_FALSE(math_implements(MathOp::wgmma_f16, MathOp::mma_tf32));
  CHECK(instance_name(tf32).view() == "ktune_gemm_sm90_wgmma_tf32_tn_128x256x32_w64x256_s4_a4");
}

TEST_CASE("resource model: operand type matters (tf32 stages are twice f16's; bf16 equals f16)") {
  constexpr GemmConfig f16 = cfg(MathOp::mma_f16, {128, 128, 32}, {64, 64}, 3, 8);
  constexpr GemmConfig bf16 = cfg(MathOp::mma_bf16, {128, 128, 32}, {64, 64}, 3, 8);
  constexpr GemmConfig tf32 = cfg(MathOp::mma_tf32, {128, 128, 32}, {32, 64}, 3, 4);
  CHECK(stage_bytes(f16) == 16384);
  CHECK(stage_bytes(bf16) == 16384);
  CHECK(stage_bytes(tf32) == 32768);
  CHECK(estimate_resources(f16).smem_bytes == 49152);
  CHECK(estimate_resources(bf16) == estimate_resources(f16));
  CHECK(estimate_resources(tf32).smem_bytes == 98304);
  CHECK(estimate_resources(tf32).threads == 256);
  // The same tile in tf32 moves twice the bytes: more copy vectors per thread, so more registers
  // than the f16 config with the same warp tile (whose fragments hold as many 32-bit words).
  CHECK(estimate_resources(tf32).registers >
        estimate_resources(cfg(MathOp::mma_f16, {128, 128, 32}, {32, 64}, 3, 8)).registers);
}

TEST_CASE("resource model: SIMT tiles are padded and the epilogue staging can dominate") {
  constexpr GemmConfig c = cfg(MathOp::simt_f32, {128, 128, 8}, {32, 64}, 3, 4);
  // Both operands as [BK][BM + 4] floats: 8 × 132 × 4 B × 2 = 8448 B per stage.
  CHECK(stage_bytes(c) == 8448);
  // 3 stages = 25344 B < epilogue staging 8 warps × 16 rows × (64 + 4) floats × 4 B = 34816 B.
  CHECK(estimate_resources(c).smem_bytes == 34816);
  CHECK(estimate_resources(c).threads == 256);
  CHECK(estimate_resources(c).registers > 64);  // at least the 8×8 accumulators
  CHECK(estimate_resources(c).registers < 255);
  CHECK(simt_thread_tile_m(c) == 8);
  CHECK(simt_thread_tile_n(c) == 8);
  // With 6 stages the pipeline dominates again.
  CHECK(estimate_resources(cfg(MathOp::simt_f32, {128, 128, 8}, {32, 64}, 6, 4)).smem_bytes == 6 * 8448);
}

TEST_CASE("resource model: shared memory grows linearly with stages once the pipeline dominates") {
  for (int s = 2; s <= 8; ++s) {
    const GemmConfig c = cfg(MathOp::mma_bf16, {128, 128, 32}, {64, 64}, s, 8);
    CAPTURE(s);
    CHECK(estimate_resources(c).smem_bytes == s * 16384);
  }
  // A small tile with few stages: staging 4 warps × 16 × (32 + 4) × 4 B = 9216 B > 2 × 4096 B.
  const GemmConfig small = cfg(MathOp::mma_f16, {64, 64, 16}, {32, 32}, 2, 8);
  CHECK(estimate_resources(small).smem_bytes == 9216);
}

TEST_CASE("resource model: narrower vectors cost copy registers, never shared memory") {
  const GemmConfig a8 = cfg(MathOp::mma_f16, {128, 128, 32}, {32, 64}, 3, 8);
  const GemmConfig a2 = cfg(MathOp::mma_f16, {128, 128, 32}, {32, 64}, 3, 2);
  const GemmConfig a1 = cfg(MathOp::mma_f16, {128, 128, 32}, {32, 64}, 3, 1);
  CHECK(estimate_resources(a8).smem_bytes == estimate_resources(a1).smem_bytes);
  // 16- and 4-byte cp.async vectors go through k-tile iterators (the same state for 2 or 8 vectors per
  // thread); 2-byte copies keep an address per vector.
  CHECK(estimate_resources(a8).registers == estimate_resources(a2).registers);
  CHECK(estimate_resources(a2).registers < estimate_resources(a1).registers);
}

TEST_CASE("resource model: arch traits and arch_for_cc") {
  CHECK(sm80.smem_optin_bytes == 163 * 1024);
  CHECK(sm86.smem_optin_bytes == 99 * 1024);
  CHECK(sm90.smem_optin_bytes == 227 * 1024);
  CHECK(sm90.has_wgmma);
  CHECK_FALSE(sm80.has_wgmma);
  REQUIRE(arch_for_cc(80) != nullptr);
  CHECK(arch_for_cc(80)->cc == 80);
  CHECK(arch_for_cc(86)->cc == 86);
  CHECK(arch_for_cc(87)->cc == 86);  // closest known below
  CHECK(arch_for_cc(89)->cc == 89);
  CHECK(arch_for_cc(90)->cc == 90);
  CHECK(arch_for_cc(120)->cc == 90);
  CHECK(arch_for_cc(75) == nullptr);
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.cc = 90;
  d.sm_count = 132;
  d.l2_bytes = 50331648;
  d.driver_version = 13000;
  d.runtime_version = 13000;
  CHECK(d.fingerprint() == "NVIDIA H200|cc90|sm132|l2:50331648|drv13000|rt13000");
}

// ---- Constraint rules: each one fires for a crafted configuration --------------------------------

TEST_CASE("rule smem_fits: shared memory over the architecture's opt-in limit") {
  // 6 stages × (128 + 256) × 64 × 2 B = 294912 B > sm80's 166912 B.
  constexpr Verdict v = validate(cfg(MathOp::mma_f16, {128, 256, 64}, {64, 64}, 6, 8), sm80);
  static_assert(v.rule == Rule::smem_fits);
  CHECK(v.value == 294912);
  CHECK(v.limit == 166912);
  CHECK(v.describe() == "shared memory 294912 B exceeds the opt-in limit 166912 B");
  CHECK(v.to_string() == "smem_fits: shared memory 294912 B exceeds the opt-in limit 166912 B");

  // The same config is valid or not depending on the architecture: 5 stages = 122880 B.
  const GemmConfig c5 = cfg(MathOp::mma_bf16, {128, 256, 32}, {64, 64}, 5, 8);
  CHECK(validate(c5, sm80).ok());
  CHECK(validate(c5, sm90).ok());
  const Verdict v86 = validate(c5, sm86);
  CHECK(v86.rule == Rule::smem_fits);
  CHECK(v86.describe() == "shared memory 122880 B exceeds the opt-in limit 101376 B");
  // 4 stages (98304 B) fit sm86's 99 KB.
  CHECK(validate(cfg(MathOp::mma_bf16, {128, 256, 32}, {64, 64}, 4, 8), sm86).ok());
}

TEST_CASE("rule registers_per_sm: one block must fit the register file") {
  // 16 warps of 32×64 (512 threads) at ~160 registers each: more than 65536 per block.
  const GemmConfig c = cfg(MathOp::mma_f16, {128, 256, 32}, {32, 64}, 4, 8);
  const GemmResources r = estimate_resources(c);
  REQUIRE(r.threads == 512);
  REQUIRE(r.registers <= 255);
  const Verdict v = validate(c, sm80);
  CHECK(v.rule == Rule::registers_per_sm);
  CHECK(v.value == 512LL * r.registers);
  CHECK(v.limit == 65536);
  CHECK(v.describe() == "estimated " + std::to_string(512 * r.registers) + " registers per block exceed the register file 65536");
}

TEST_CASE("rule registers_per_thread: more than 255 estimated registers") {
  // 64×64 warp tile (128 accumulators, 64 fragment words) with 1-element copies (64 per thread).
  const GemmConfig c = cfg(MathOp::mma_f16, {128, 128, 32}, {64, 64}, 3, 1);
  const int regs = estimate_resources(c).registers;
  REQUIRE(regs > 255);
  const Verdict v = validate(c, sm80);
  CHECK(v.rule == Rule::registers_per_thread);
  CHECK(v.value == regs);
  CHECK(v.limit == 255);
  CHECK(v.describe() == "estimated " + std::to_string(regs) + " registers per thread exceed 255");
  CHECK(rule_name(v.rule) == "registers_per_thread");
}

TEST_CASE("rule warp_divides_tile: the warp tile must divide the block tile in M and in N") {
  const Verdict vm = validate(cfg(MathOp::mma_f16, {128, 128, 32}, {48, 64}, 3, 8), sm80);
  CHECK(vm.rule == Rule::warp_divides_tile);
  CHECK(vm.describe() == "tile extent 128 is not a multiple of warp tile 48");
  const Verdict vn = validate(cfg(MathOp::mma_f16, {128, 96, 32}, {64, 64}, 3, 8), sm80);
  CHECK(vn.rule == Rule::warp_divides_tile);
  CHECK(vn.describe() == "tile extent 96 is not a multiple of warp tile 64");
  // A zero warp extent is rejected, not divided by.
  CHECK(validate(cfg(MathOp::mma_f16, {128, 128, 32}, {0, 64}, 3, 8), sm80).rule == Rule::warp_divides_tile);
}

TEST_CASE("rule instr_divides_warp: the instruction (and epilogue band) shape must divide the warp tile") {
  // WN = 40 is a multiple of 4 but not of 2 × n8 = 16 (B fragments come two n-blocks at a time).
  const Verdict vn = validate(cfg(MathOp::mma_f16, {128, 80, 32}, {64, 40}, 3, 8), sm80);
  CHECK(vn.rule == Rule::instr_divides_warp);
  CHECK(vn.value == 40);
  CHECK(vn.limit == 16);
  CHECK(vn.describe() == "warp tile extent 40 is not a multiple of 16");
  // WM = 40 is not a multiple of the 16-row epilogue band / m16 instruction.
  const Verdict vm = validate(cfg(MathOp::mma_bf16, {120, 128, 32}, {40, 64}, 3, 8), sm80);
  CHECK(vm.rule == Rule::instr_divides_warp);
  CHECK(vm.describe() == "warp tile extent 40 is not a multiple of 16");
  // tf32 with an 8-wide warp tile.
  const Verdict vt = validate(cfg(MathOp::mma_tf32, {128, 64, 32}, {64, 8}, 3, 4), sm80);
  CHECK(vt.rule == Rule::instr_divides_warp);
  CHECK(vt.describe() == "warp tile extent 8 is not a multiple of 16");
}

TEST_CASE("rule instr_divides_bk: BK must hold an even number of instruction K steps") {
  const Verdict v16 = validate(cfg(MathOp::mma_f16, {128, 128, 8}, {64, 64}, 3, 8), sm80);
  CHECK(v16.rule == Rule::instr_divides_bk);
  CHECK(v16.value == 8);
  CHECK(v16.limit == 32);
  CHECK(v16.describe() == "BK 8 is not a multiple of two instruction K steps (32)");
  // BK = 16 is one m16n8k16 step: the double-buffered mainloop needs two.
  CHECK(validate(cfg(MathOp::mma_bf16, {128, 128, 16}, {32, 64}, 3, 8), sm80).rule == Rule::instr_divides_bk);
  const Verdict v8 = validate(cfg(MathOp::mma_tf32, {128, 128, 12}, {32, 64}, 3, 4), sm80);
  CHECK(v8.rule == Rule::instr_divides_bk);
  CHECK(v8.describe() == "BK 12 is not a multiple of two instruction K steps (16)");
  CHECK(validate(cfg(MathOp::mma_tf32, {128, 128, 16}, {32, 64}, 3, 4), sm80).ok());
  // SIMT has a 1×1×1 "instruction": any BK is fine for that rule.
  CHECK(validate(cfg(MathOp::simt_f32, {128, 128, 12}, {32, 64}, 3, 4), sm80).rule != Rule::instr_divides_bk);
}

TEST_CASE("rule threads_in_range: a block of 64 warps is too large") {
  const Verdict v = validate(cfg(MathOp::mma_f16, {256, 256, 32}, {32, 32}, 3, 8), sm80);
  CHECK(v.rule == Rule::threads_in_range);
  CHECK(v.value == 2048);
  CHECK(v.describe() == "2048 threads outside [32, 1024]");
}

TEST_CASE("rule stages_in_range: fewer than 2 or more than 8 stages") {
  const Verdict v1 = validate(cfg(MathOp::mma_f16, {128, 128, 32}, {64, 64}, 1, 8), sm80);
  CHECK(v1.rule == Rule::stages_in_range);
  CHECK(v1.describe() == "1 stages outside [2, 8]");
  // 9 stages would also overflow shared memory, but the stage rule is checked first.
  const Verdict v9 = validate(cfg(MathOp::mma_f16, {128, 256, 64}, {64, 64}, 9, 8), sm80);
  CHECK(v9.rule == Rule::stages_in_range);
  CHECK(v9.describe() == "9 stages outside [2, 8]");
  CHECK(validate(cfg(MathOp::mma_f16, {128, 128, 32}, {64, 64}, 2, 8), sm80).ok());
  CHECK(validate(cfg(MathOp::mma_f16, {64, 128, 32}, {32, 64}, 8, 8), sm80).ok());
}

TEST_CASE("rule vector_width_legal: 4/8/16-byte power-of-two vectors or one element") {
  const Verdict v32 = validate(cfg(MathOp::mma_f16, {128, 128, 32}, {64, 64}, 4, 16), sm80);
  CHECK(v32.rule == Rule::vector_width_legal);
  CHECK(v32.value == 32);
  CHECK(v32.describe() == "vector access of 32 bytes is not 4, 8 or 16 bytes or one element");
  const Verdict v3 = validate(cfg(MathOp::mma_bf16, {128, 128, 32}, {32, 64}, 3, 3), sm80);
  CHECK(v3.rule == Rule::vector_width_legal);  // not a power of two
  CHECK(v3.value == 6);
  const Verdict vf = validate(cfg(MathOp::simt_f32, {128, 128, 8}, {32, 64}, 3, 8), sm80);
  CHECK(vf.rule == Rule::vector_width_legal);  // 8 floats = 32 B
  CHECK(vf.value == 32);
  // One 2-byte element and 4-byte vectors are legal.
  CHECK(validate(cfg(MathOp::mma_f16, {128, 128, 32}, {32, 64}, 3, 1), sm80).ok());
  CHECK(validate(cfg(MathOp::mma_f16, {128, 128, 32}, {32, 64}, 3, 2), sm80).ok());
}

TEST_CASE("rule vector_divides_tile: the tile's contiguous extent must hold whole vectors") {
  // SIMT BK = 6 with 4-float vectors: row-major A is K-contiguous.
  const Verdict va = validate(cfg(MathOp::simt_f32, {128, 128, 6}, {32, 64}, 3, 4, Layout::row, Layout::row), sm80);
  CHECK(va.rule == Rule::vector_divides_tile);
  CHECK(va.value == 6);
  CHECK(va.limit == 4);
  CHECK(va.describe() == "contiguous tile extent 6 is not a multiple of the vector width 4");
  // Column-major A is M-contiguous (128: fine); column-major B is K-contiguous (6: not fine).
  const Verdict vb = validate(cfg(MathOp::simt_f32, {128, 128, 6}, {32, 64}, 3, 4, Layout::col, Layout::col), sm80);
  CHECK(vb.rule == Rule::vector_divides_tile);
  CHECK(vb.value == 6);
  // Both operands MN-contiguous: BK no longer needs to hold vectors.
  CHECK(validate(cfg(MathOp::simt_f32, {128, 128, 6}, {32, 64}, 3, 4, Layout::col, Layout::row), sm80).rule !=
        Rule::vector_divides_tile);
}

TEST_CASE("rule copy_divides_threads: a tile's vectors spread evenly over the block") {
  // 16 warps (512 threads) but A's 64×32 tile is only 256 vectors of 8 halves.
  const Verdict v = validate(cfg(MathOp::mma_f16, {64, 64, 32}, {16, 16}, 3, 8), sm80);
  CHECK(v.rule == Rule::copy_divides_threads);
  CHECK(v.value == 256);
  CHECK(v.limit == 512);
  CHECK(v.describe() == "256 vectors per tile do not divide evenly over 512 threads");
}

TEST_CASE("rule thread_tile_shape: SIMT thread tiles are 4 or 8 wide") {
  // 64×64 warp = 4×8 threads of 16×8: TM = 16.
  const Verdict vm = validate(cfg(MathOp::simt_f32, {128, 128, 8}, {64, 64}, 3, 4), sm80);
  CHECK(vm.rule == Rule::thread_tile_shape);
  CHECK(vm.value == 16);
  CHECK(vm.describe() == "thread tile extent 16 is not 4 or 8");
  // 32×128 warp: TN = 16.
  const Verdict vn = validate(cfg(MathOp::simt_f32, {128, 128, 8}, {32, 128}, 3, 4), sm80);
  CHECK(vn.rule == Rule::thread_tile_shape);
  CHECK(vn.value == 16);
  // 16×32 warps (4×4 thread tiles) are fine.
  CHECK(validate(cfg(MathOp::simt_f32, {64, 64, 16}, {16, 32}, 3, 4), sm80).ok());
}

TEST_CASE("rule math_needs_arch: tensor-core math needs sm80") {
  const Verdict v = validate(cfg(MathOp::mma_bf16, {128, 128, 32}, {32, 64}, 3, 8), sm75_like);
  CHECK(v.rule == Rule::math_needs_arch);
  CHECK(v.describe() == "math instruction needs sm80, family targets sm75");
  // SIMT has no such requirement (it may fail other rules of this made-up arch, but not this one).
  CHECK(validate(cfg(MathOp::simt_f32, {128, 128, 8}, {32, 64}, 3, 4), sm75_like).rule != Rule::math_needs_arch);
}

TEST_CASE("rules: the first violated rule is the reason, and every rule has a name and text") {
  // Warp does not divide the tile AND far too much shared memory: the earlier rule wins.
  const Verdict v = validate(cfg(MathOp::mma_f16, {256, 256, 128}, {48, 64}, 8, 8), sm80);
  CHECK(v.rule == Rule::warp_divides_tile);
  constexpr Rule all[] = {Rule::none, Rule::math_needs_arch, Rule::warp_divides_tile, Rule::instr_divides_warp,
                          Rule::instr_divides_bk, Rule::threads_in_range, Rule::stages_in_range, Rule::smem_fits,
                          Rule::registers_per_thread, Rule::registers_per_sm, Rule::vector_width_legal,
                          Rule::vector_divides_tile, Rule::copy_divides_threads, Rule::thread_tile_shape,
                          Rule::wgmma_n_shape};
  for (Rule r : all) {
    CAPTURE(static_cast<int>(r));
    CHECK(rule_name(r) != "?");
    const Verdict x{r, 1, 2};
    CHECK(x.describe() != "?");
    CHECK(x.ok() == (r == Rule::none));
  }
  CHECK(Verdict{}.to_string() == "ok");
  CHECK(require(true, Rule::smem_fits, 1, 2).ok());
  CHECK(require(false, Rule::smem_fits, 1, 2) == Verdict{Rule::smem_fits, 1, 2});
}

TEST_CASE("sm90 model: the epilogue staging takes the shared memory a one-block-per-SM instance leaves unused") {
  auto wg = [](TileShape t, WarpShape w, int stages, WgSchedule s = WgSchedule::cooperative) {
    GemmConfig c{90, MathOp::wgmma_bf16, Layout::row, Layout::col, t, w, stages, 8};
    c.schedule = s;
    return c;
  };
  // 128x256 s4: ring 4 x 48 KB, bias 4 KB: 3.5 KB per warp (3 aligned 1 KB store boxes), 64 bytes short of
  // 4 KB. 128x128 s5: 7.5 KB (7 boxes). A block small enough to share its SM keeps the least (2.5 KB).
  const GemmConfig big = wg({128, 256, 64}, {64, 256}, 4), mid = wg({128, 128, 64}, {64, 128}, 5),
                   pp = wg({128, 128, 64}, {128, 128}, 5, WgSchedule::pingpong), small = wg({64, 64, 64}, {64, 64}, 6);
  CHECK(sm90_warp_staging_bytes(big) == 3584);
  CHECK(sm90_warp_staging_bytes(mid) == 7680);
  CHECK(sm90_warp_staging_bytes(pp) == 7680);
  CHECK(sm90_warp_staging_bytes(small) == sm90_min_warp_staging_bytes);
  for (const GemmConfig& c : {big, mid, pp, small}) {
    CAPTURE(c.tile.m);
    CAPTURE(c.tile.n);
    CHECK(validate(c, sm90).ok());
    CHECK(sm90_warp_staging_bytes(c) % 512 == 0);  // every warp's region starts on a 512-byte boundary
    CHECK(sm90_warp_staging_bytes(c) >= sm90_min_warp_staging_bytes);
    CHECK(sm90_warp_staging_bytes(c) <= sm90_max_warp_staging_bytes);
    CHECK(estimate_resources(c).smem_bytes <= sm90.smem_optin_bytes);
    CHECK(estimate_resources(c).smem_bytes == sm90_base_smem_bytes(c) + sm90_bias_buffer_bytes(c));  // bias buffers kept
  }
  CHECK(2 * (estimate_resources(small).smem_bytes + 1024) <= sm90.smem_per_sm_bytes);
}

TEST_CASE("sm90 model: non-power-of-two warpgroup N (96, 112: probe tiles) with K-major B, the deepest rings that fit") {
  auto wg = [](TileShape t, WarpShape w, int stages, Layout lb = Layout::col, MathOp m = MathOp::wgmma_bf16) {
    return GemmConfig{90, m, Layout::row, lb, t, w, stages, m == MathOp::wgmma_tf32 ? 4 : 8};
  };
  // tools/sm90-probes: 64x112 s9 (cuBLASLt's L13 tile area and depth), 128x96 s7 (two 64x96 warpgroup
  // tiles), 192x64 s6 (cuBLASLt's L10 tile area in ktune's orientation). One stage more does not fit.
  constexpr GemmConfig n112 = wg({64, 112, 64}, {64, 112}, 9), n96 = wg({128, 96, 64}, {64, 96}, 7),
                       m192 = wg({192, 64, 64}, {192, 64}, 6);
  static_assert(validate(n112, sm90).ok());
  static_assert(validate(n96, sm90).ok());
  static_assert(validate(m192, sm90).ok());
  CHECK(validate(wg({64, 112, 64}, {64, 112}, 10), sm90).rule == Rule::smem_fits);
  CHECK(validate(wg({128, 96, 64}, {64, 96}, 8), sm90).rule == Rule::smem_fits);
  CHECK(validate(wg({192, 64, 64}, {192, 64}, 7), sm90).rule == Rule::smem_fits);
  for (const GemmConfig& c : {n112, n96, m192}) {
    CAPTURE(c.tile.n);
    CHECK(estimate_resources(c).smem_bytes <= sm90.smem_optin_bytes);
    CHECK(estimate_resources(c).smem_bytes == sm90_base_smem_bytes(c) + sm90_bias_buffer_bytes(c));  // bias buffers kept
  }
  // MN-major B (row-major B: 'tt', 'nt') splits into 64-element TMA boxes: WN a multiple of 64.
  const Verdict vmn = validate(wg({64, 112, 64}, {64, 112}, 9, Layout::row), sm90);
  CHECK(vmn.rule == Rule::instr_divides_warp);
  CHECK(vmn.value == 112);
  CHECK(vmn.limit == 64);
  // An N without a wgmma wrapper (80), and 96 for tf32 (its wrappers are 64, 128, 192, 256 only).
  const Verdict v80 = validate(wg({64, 80, 64}, {64, 80}, 8), sm90);
  CHECK(v80.rule == Rule::wgmma_n_shape);
  CHECK(v80.value == 80);
  CHECK(v80.describe().find("no wgmma wrapper") != std::string::npos);
  CHECK(validate(wg({128, 96, 32}, {64, 96}, 4, Layout::col, MathOp::wgmma_tf32), sm90).rule == Rule::wgmma_n_shape);
  static_assert(sm90_wgmma_n_available(MathOp::wgmma_f16, 112) && !sm90_wgmma_n_available(MathOp::wgmma_tf32, 112));
  // WN = 112 stages its epilogue in 16-column chunks, at most 8 per band: one m64 block.
  const Verdict v2 = validate(wg({128, 112, 64}, {128, 112}, 6), sm90);
  CHECK(v2.rule == Rule::instr_divides_warp);
  CHECK(v2.limit == 32);
  // Serial split-K's reduction walks WM·WN in batches of 2048 values: 64x112 takes parallel mode only.
  CHECK_FALSE(supports_serial_split_k(n112));
  CHECK(supports_serial_split_k(n96));
  CHECK(supports_stream_k(n112));
  CHECK(supports_stream_k(n96));
  // The existing tiles keep their serial split-K.
  CHECK(supports_serial_split_k(wg({128, 128, 64}, {64, 128}, 5)));
  CHECK(supports_serial_split_k(wg({64, 64, 64}, {64, 64}, 12)));
}
