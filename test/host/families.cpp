// Host tests: family enumeration and pruning, the registered dispatch table (exactly the survivors of
// the default families), and instance-name stability.
//
// kDefaultFamilies below mirrors include/ktune/gemm/instances/all.cuh (and src/instances/): when a
// default family is added, removed or its parameter lists change, update the list and its counts —
// the counts are the point (a change in what ships must be a visible, reviewed change).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/dispatch.hpp"
#include "ktune/family.hpp"
#include "ktune/gemm/families.hpp"

using namespace ktune;
namespace fam = ktune::families;

namespace {

// GemmConfig's defaulted operator== is deleted (TileShape and WarpShape have no ==), so compare fields.
bool same_config(const GemmConfig& a, const GemmConfig& b) {
  return a.arch_cc == b.arch_cc && a.math == b.math && a.a_layout == b.a_layout && a.b_layout == b.b_layout &&
         a.tile.m == b.tile.m && a.tile.n == b.tile.n && a.tile.k == b.tile.k && a.warp.m == b.warp.m &&
         a.warp.n == b.warp.n && a.stages == b.stages && a.align == b.align;
}

template <class... F>
struct FamilyList {};

// The default families, in registration order, with their parameter-space size and survivor count.
using DefaultFamilies = FamilyList<fam::Sm80MmaF16, fam::Sm80MmaF16Deep, fam::Sm80MmaF16Small, fam::Sm80MmaF16SmallM, fam::Sm80MmaF16SmallM32, fam::Sm80MmaF16Unaligned, fam::Sm80MmaTf32,
                                   fam::Sm80MmaTf32Unaligned, fam::Sm80SimtF32, fam::Sm90WgmmaF16, fam::Sm90WgmmaF16Small,
                                   fam::Sm90WgmmaF16PingPong, fam::Sm90WgmmaF16N64, fam::Sm90WgmmaF16N64Deep, fam::Sm90WgmmaF16Swap,
                                   fam::Sm90WgmmaF16Swap2Wg, fam::Sm90WgmmaTf32, fam::Sm90WgmmaTf32PingPong>;
struct Expected {
  std::string_view name;
  std::size_t size, valid;
};
constexpr Expected kExpected[] = {
    {"sm80_mma_f16", 16, 16},           // 2 maths × 4 layouts × 2 tiles × 1 warp tile
    {"sm80_mma_f16_deep", 2, 2},        // 2 maths × 'tn' × 128x256x64 (3 stages)
    {"sm80_mma_f16_small", 16, 16},     // 2 × 4 × 2 tiles
    {"sm80_mma_f16_small_m", 12, 12},   // 2 maths × 2 B layouts × 3 tiles (A row-major only)
    {"sm80_mma_f16_small_m32", 4, 4},   // 2 maths × 2 B layouts × 1 tile
    {"sm80_mma_f16_unaligned", 16, 8},  // 2 × 4 × 2 warps, align 1: 64x64 warps exceed 255 registers
    {"sm80_mma_tf32", 4, 4},
    {"sm80_mma_tf32_unaligned", 4, 4},
    {"sm80_simt_f32", 8, 8},            // 4 layouts × 2 aligns
    {"sm90_wgmma_f16", 32, 16},         // 2 × 4 × 2 tiles × 2 warpgroup tiles: 64x256 ∤ 256x128, 128x256 takes 64x256 (wgmma_full_width)
    {"sm90_wgmma_f16_small", 8, 8},     // 2 maths × 2 B layouts × 2 tiles (A row-major only)
    {"sm90_wgmma_f16_pingpong", 16, 8}, // 2 maths × 2 B layouts × 2 tiles × 2 warpgroup tiles: warp = tile only
    {"sm90_wgmma_f16_n64", 2, 2},      // f16/bf16 'tn' 128x64x64, two 64x64 warpgroups, 8 stages
    {"sm90_wgmma_f16_n64_deep", 2, 2}, // f16/bf16 'tn' 64x64x64, 12 stages
    {"sm90_wgmma_f16_swap", 2, 2},     // f16/bf16 'tn' swap AB 64x112x64 (swapped orientation), 9 stages
    {"sm90_wgmma_f16_swap_2wg", 2, 2}, // f16/bf16 'tn' swap AB 128x96x64, two 64x96 warpgroups, 7 stages
    {"sm90_wgmma_tf32", 16, 2},         // 4 layouts × 2 tiles × 2 warpgroup tiles: 'tn' only, 64x256 ∤ 256x128, wgmma_full_width
    {"sm90_wgmma_tf32_pingpong", 1, 1}, // 'tn' 128x128x32, ping-pong
};

template <class F>
const Expected* expected_for() {
  for (const auto& e : kExpected)
    if (e.name == F::name) return &e;
  return nullptr;
}

template <class F>
std::size_t table_count_of_family() {
  const auto& es = gemm_table().entries();
  return static_cast<std::size_t>(
      std::count_if(es.begin(), es.end(), [](const GemmKernelEntry& e) { return e.family == F::name; }));
}

// The registered entries of family F are exactly its valid configurations, with model data attached.
template <class F>
void check_family_registered() {
  CAPTURE(F::name);
  const auto valid = valid_configs<F>();
  CHECK(table_count_of_family<F>() == valid.size());
  for (const GemmConfig& c : valid) {
    const InstanceName name = instance_name(c);
    CAPTURE(name.view());
    const GemmKernelEntry* e = gemm_table().find(name.view());
    REQUIRE(e != nullptr);
    CHECK(e->family == F::name);
    CHECK(same_config(e->config, c));
    CHECK(e->resources == estimate_resources(c));
    CHECK(bool(e->launch));
    CHECK(bool(e->attributes));
  }
  // Pruned configurations are never registered (under their own name or any other).
  for (const CandidateConfig& cc : enumerate_family<F>()) {
    if (cc.verdict.ok()) continue;
    CAPTURE(instance_name(cc.config).view());
    CHECK(gemm_table().find(instance_name(cc.config).view()) == nullptr);
    for (const auto& e : gemm_table().entries()) CHECK_FALSE(same_config(e.config, cc.config));
  }
}

template <class F>
void check_family_counts() {
  CAPTURE(F::name);
  const Expected* x = expected_for<F>();
  REQUIRE_MESSAGE(x != nullptr, "no expected counts for this family in test/host/families.cpp");
  CHECK_MESSAGE(family_size<F> == x->size, "parameter space changed: update kExpected in test/host/families.cpp");
  CHECK_MESSAGE(valid_count<F> == x->valid, "survivor count changed: update kExpected in test/host/families.cpp");
  // The machinery: size is the product of the lists; survivors + pruned = size; survivors in order.
  CHECK(family_size<F> == extent_of(F::maths) * extent_of(F::a_layouts) * extent_of(F::b_layouts) *
                              extent_of(F::tiles) * extent_of(F::warps) * extent_of(F::stages) * extent_of(F::aligns));
  std::size_t ok = 0, pruned = 0;
  for (const auto& c : enumerate_family<F>()) {
    ok += c.verdict.ok() ? 1 : 0;
    if (!c.verdict.ok()) {
      ++pruned;
      CAPTURE(instance_name(c.config).view());
      CHECK(rule_name(c.verdict.rule) != "?");
      CHECK(c.verdict.to_string().rfind(std::string(rule_name(c.verdict.rule)) + ": ", 0) == 0);
      CHECK(c.verdict == validate(c.config, F::arch));
    }
  }
  CHECK(ok == valid_count<F>);
  CHECK(ok + pruned == family_size<F>);
  const auto valid = valid_configs<F>();
  std::size_t i = 0;
  for (const auto& c : enumerate_family<F>())
    if (c.verdict.ok()) CHECK(same_config(valid[i++], c.config));
  for (const auto& c : valid) CHECK(validate(c, F::arch).ok());
  for (const auto& c : valid) CHECK(c.arch_cc == F::arch.cc);
}

template <class... F>
void for_each_family(FamilyList<F...>, auto&& fn) {
  (fn.template operator()<F>(), ...);
}

// The problem kind an instance serves: its operand type, and for f32 whether tensor cores (tf32).
std::string kind_of(const GemmConfig& c) {
  return std::string(to_string(c.operand())) + (c.operand() == DType::f32 && uses_tensor_cores(c.math) ? "/tf32" : "");
}

}  // namespace

TEST_CASE("families: parameter-space sizes and survivor counts of the default families") {
  for_each_family(DefaultFamilies{}, []<class F>() { check_family_counts<F>(); });
  // The registered families are exactly the listed ones.
  std::set<std::string_view> listed, registered;
  for_each_family(DefaultFamilies{}, [&]<class F>() { listed.insert(F::name); });
  for (const auto& e : gemm_table().entries())
    if (!is_route(e)) registered.insert(e.family);  // routes are no family (test/host/route_test.cpp)
  for (std::string_view r : registered) CHECK_MESSAGE(listed.count(r) == 1, "family " << r << " is registered but not listed in test/host/families.cpp");
  for (std::string_view l : listed) CHECK_MESSAGE(registered.count(l) == 1, "family " << l << " is listed but has no registered instance");
}

TEST_CASE("families: known pruned configurations and their reasons") {
  // A 128x256 tile with 32x64 warps is 16 warps: 512 threads × ~160 registers > 65536.
  const GemmConfig big_block{80, MathOp::mma_f16, Layout::row, Layout::col, {128, 256, 32}, {32, 64}, 4, 8};
  const Verdict v1 = validate(big_block, sm80);
  CHECK(v1.rule == Rule::registers_per_sm);
  CHECK(v1.value == 512LL * estimate_resources(big_block).registers);
  // 64x64 warp tiles with 1-element copies: over 255 registers per thread.
  const GemmConfig narrow{80, MathOp::mma_bf16, Layout::row, Layout::col, {128, 128, 32}, {64, 64}, 3, 1};
  CHECK(validate(narrow, sm80).rule == Rule::registers_per_thread);
  // `narrow` is a point of a default family; neither is in the table.
  bool seen2 = false;
  for (const auto& c : enumerate_family<fam::Sm80MmaF16Unaligned>()) seen2 |= same_config(c.config, narrow);
  CHECK(seen2);
  CHECK(gemm_table().find(instance_name(big_block).view()) == nullptr);
  CHECK(gemm_table().find(instance_name(narrow).view()) == nullptr);
  // wgmma tf32 has no transposed shared-memory operands: every layout but 'tn' is pruned, with a reason.
  for (const auto& c : enumerate_family<fam::Sm90WgmmaTf32>()) {
    CAPTURE(instance_name(c.config).view());
    const bool tn = c.config.a_layout == Layout::row && c.config.b_layout == Layout::col;
    const Verdict v = validate(c.config, sm90);
    if (!tn) {
      CHECK(v.rule == Rule::wgmma_k_major);
      CHECK(v.value == (c.config.a_layout == Layout::col) + (c.config.b_layout == Layout::row));
      CHECK(v.describe().find("K-major") != std::string::npos);
    } else if (!v.ok()) {
      // 64x256 warpgroup tiles in a 256x128 tile; 128x128 ones in a 128x256 tile (64x256 reads less)
      CHECK((v.rule == Rule::warp_divides_tile || v.rule == Rule::wgmma_full_width));
      if (v.rule == Rule::wgmma_full_width) CHECK((c.config.tile.n == 256 && c.config.warp.n == 128));
    }
  }
  // Swap AB: 'tn' 16-bit operands on the wgmma kernel only (rule swap_ab_operands), with the reason.
  {
    GemmConfig swap{90, MathOp::wgmma_bf16, Layout::row, Layout::col, {64, 112, 64}, {64, 112}, 9, 8, WgSchedule::swap_ab};
    CHECK(validate(swap, sm90).ok());
    GemmConfig nn = swap;
    nn.b_layout = Layout::row;  // B MN-major: the swapped kernel's A' would be MN-major
    CHECK(validate(nn, sm90).rule == Rule::swap_ab_operands);
    CHECK(validate(nn, sm90).value == 1);
    CHECK(validate(nn, sm90).to_string().rfind("swap_ab_operands: ", 0) == 0);
    CHECK(validate(nn, sm90).describe().find("K-major") != std::string::npos);
    GemmConfig tf32{90, MathOp::wgmma_tf32, Layout::row, Layout::col, {128, 128, 32}, {64, 128}, 4, 4, WgSchedule::swap_ab};
    CHECK(validate(tf32, sm90).rule == Rule::swap_ab_operands);  // 16-bit operands only
    GemmConfig both = tf32;
    both.a_layout = Layout::col;
    CHECK(validate(both, sm90).rule == Rule::swap_ab_operands);  // before wgmma_k_major
    CHECK(validate(both, sm90).value == 2);
    GemmConfig sm80_swap{80, MathOp::mma_bf16, Layout::row, Layout::col, {128, 128, 32}, {64, 64}, 4, 8, WgSchedule::swap_ab};
    CHECK(validate(sm80_swap, sm80).rule == Rule::swap_ab_operands);  // no mma.sync kernel runs it
    CHECK(gemm_table().find(instance_name(nn).view()) == nullptr);
    // The model's shared memory and threads are the kernel's (one / two consumer warpgroups).
    CHECK(estimate_resources(swap).threads == 256);
    GemmConfig wide{90, MathOp::wgmma_f16, Layout::row, Layout::col, {128, 96, 64}, {64, 96}, 7, 8, WgSchedule::swap_ab};
    CHECK(validate(wide, sm90).ok());
    CHECK(estimate_resources(wide).threads == 384);
    GemmConfig coop = swap;
    coop.schedule = WgSchedule::cooperative;
    CHECK(estimate_resources(swap) == estimate_resources(coop));
    // Swap instances take no split-K, stream-K or cluster split-K.
    CHECK_FALSE(supports_split_k(swap));
    CHECK_FALSE(supports_stream_k(swap));
    CHECK(cluster_split_k_limit(swap) == 1);
    CHECK(problem_tile(swap).m == 112);
    CHECK(problem_tile(swap).n == 64);
    CHECK(problem_tile(coop).m == 64);
  }
  // Every family prunes something or keeps everything, but never keeps nothing.
  for_each_family(DefaultFamilies{}, []<class F>() {
    CAPTURE(F::name);
    CHECK(valid_count<F> > 0);
  });
}

TEST_CASE("families: enumeration order is maths, layouts, tiles, warps, stages, aligns") {
  constexpr auto all = enumerate_family<fam::Sm80MmaF16>();
  CHECK(instance_name(all[0].config).view() == "ktune_gemm_sm80_f16_tt_128x256x32_w64x64_s4_a8");
  CHECK(instance_name(all[1].config).view() == "ktune_gemm_sm80_f16_tt_128x128x32_w64x64_s4_a8");
  CHECK(instance_name(all[2].config).view() == "ktune_gemm_sm80_f16_tn_128x256x32_w64x64_s4_a8");
  // The last point: last math, last layouts, last tile, last warp.
  const auto& last = all[all.size() - 1].config;
  CHECK(last.math == fam::Sm80MmaF16::maths[extent_of(fam::Sm80MmaF16::maths) - 1]);
  CHECK(last.a_layout == Layout::col);
  CHECK(last.b_layout == Layout::col);
  CHECK(last.tile.k == fam::Sm80MmaF16::tiles[extent_of(fam::Sm80MmaF16::tiles) - 1].k);
  constexpr auto valid = valid_configs<fam::Sm80MmaF16>();
  CHECK(instance_name(valid[0]).view() == "ktune_gemm_sm80_f16_tt_128x256x32_w64x64_s4_a8");
}

TEST_CASE("table: holds exactly the survivors of the default families") {
  std::size_t expected = 0;
  for_each_family(DefaultFamilies{}, [&]<class F>() { expected += valid_count<F>; });
  const auto& es = gemm_table().entries();
  CHECK(static_cast<std::size_t>(std::count_if(es.begin(), es.end(), [](const GemmKernelEntry& e) { return !is_route(e); })) ==
        expected);
  for_each_family(DefaultFamilies{}, []<class F>() { check_family_registered<F>(); });
}

TEST_CASE("table: every entry is valid for its architecture and its model numbers are self-consistent") {
  for (const auto& e : gemm_table().entries()) {
    CAPTURE(e.name);
    // A route carries its inner instance's configuration and resources; its name is a prefix + the
    // inner instance's name (test/host/route_test.cpp checks the rest).
    if (is_route(e)) {
      CHECK(validate(e.config, *arch_for_cc(e.config.arch_cc)).ok());
      CHECK(e.name.substr(e.name.find('+') + 1) == instance_name(e.config).view());
      continue;
    }
    const ArchTraits* arch = arch_for_cc(e.config.arch_cc);
    REQUIRE(arch != nullptr);
    CHECK(arch->cc == e.config.arch_cc);
    CHECK(validate(e.config, *arch).ok());
    CHECK(e.resources.threads == e.config.threads());
    CHECK(e.resources.threads % 32 == 0);
    CHECK(e.resources.threads <= arch->max_threads_per_block);
    CHECK(e.resources.smem_bytes > 0);
    CHECK(e.resources.smem_bytes <= arch->smem_optin_bytes);
    CHECK(e.resources.registers <= 255);
    CHECK(e.resources.registers * e.resources.threads <= arch->regs_per_sm);
    CHECK(e.config.stages >= 2);
    CHECK(e.name == instance_name(e.config).view());  // the name spells the config
  }
}

TEST_CASE("table: names are unique, stable, readable and null-terminated") {
  std::set<std::string_view> names;
  for (const auto& e : gemm_table().entries()) {
    CAPTURE(e.name);
    CHECK(names.insert(e.name).second);
    const std::string_view own = is_route(e) ? e.name.substr(e.name.find('+') + 1) : e.name;  // routes: prefix+instance
    CHECK(own.rfind("ktune_gemm_sm" + std::to_string(e.config.arch_cc) + "_", 0) == 0);
    CHECK(own.size() < 80);
    CHECK(e.name.data()[e.name.size()] == '\0');  // usable as GemmOptions::instance
  }
  // Exact names other code (caches, users, docs) refers to.
  for (std::string_view n : {"ktune_gemm_sm80_bf16_tn_128x256x32_w64x64_s4_a8",
                             "ktune_gemm_sm80_f16_nn_128x128x32_w64x64_s4_a8",
                             "ktune_gemm_sm80_f16_tn_64x128x32_w32x64_s4_a8",
                             "ktune_gemm_sm80_bf16_nt_64x64x64_w32x64_s4_a8",
                             "ktune_gemm_sm80_bf16_nt_128x128x32_w32x64_s3_a1",
                             "ktune_gemm_sm80_f16_tt_128x128x32_w32x64_s3_a1",
                             "ktune_gemm_sm80_tf32_tn_128x128x32_w32x64_s3_a4",
                             "ktune_gemm_sm80_tf32_nn_128x128x16_w32x64_s3_a1",
                             "ktune_gemm_sm80_simt_f32_tn_128x128x16_w32x64_s3_a4",
                             "ktune_gemm_sm80_simt_f32_nt_128x128x16_w32x64_s3_a1"}) {
    CAPTURE(n);
    CHECK(gemm_table().find(n) != nullptr);
  }
  // Swap AB: the schedule is part of the name (tiles in the swapped orientation).
  for (std::string_view n : {"ktune_gemm_sm90_wgmma_bf16_tn_swap_64x112x64_w64x112_s9_a8",
                             "ktune_gemm_sm90_wgmma_f16_tn_swap_64x112x64_w64x112_s9_a8",
                             "ktune_gemm_sm90_wgmma_bf16_tn_swap_128x96x64_w64x96_s7_a8",
                             "ktune_gemm_sm90_wgmma_f16_tn_swap_128x96x64_w64x96_s7_a8"}) {
    CAPTURE(n);
    const GemmKernelEntry* e = gemm_table().find(n);
    REQUIRE(e != nullptr);
    CHECK(e->config.schedule == WgSchedule::swap_ab);
    CHECK((e->workspace_size == nullptr));  // no split-K / stream-K
  }
  // Pruned ones are absent.
  CHECK(gemm_table().find("ktune_gemm_sm80_f16_tn_128x256x32_w32x64_s4_a8") == nullptr);
  CHECK(gemm_table().find("ktune_gemm_sm80_bf16_tn_128x128x32_w64x64_s3_a1") == nullptr);
  CHECK(gemm_table().find("") == nullptr);
  // instance_name is constexpr: names exist at compile time.
  static_assert(instance_name(GemmConfig{80, MathOp::mma_bf16, Layout::row, Layout::col, {128, 256, 32}, {64, 64}, 4, 8})
                    .view() == "ktune_gemm_sm80_bf16_tn_128x256x32_w64x64_s4_a8");
  static_assert(instance_name(GemmConfig{80, MathOp::simt_f32, Layout::col, Layout::row, {128, 128, 8}, {32, 64}, 3, 1})
                    .view() == "ktune_gemm_sm80_simt_f32_nt_128x128x8_w32x64_s3_a1");
  static_assert(instance_name(GemmConfig{80, MathOp::mma_tf32, Layout::col, Layout::col, {128, 128, 16}, {32, 64}, 3, 1})
                    .view() == "ktune_gemm_sm80_tf32_nn_128x128x16_w32x64_s3_a1");
}

TEST_CASE("table: every problem kind x layout has a 1-element instance, so any shape is servable") {
  std::set<std::string> kinds;
  for (const auto& e : gemm_table().entries()) kinds.insert(kind_of(e.config));
  CHECK(kinds == std::set<std::string>{"f16", "bf16", "f32", "f32/tf32"});
  for (const std::string& kind : kinds)
    for (Layout la : {Layout::row, Layout::col})
      for (Layout lb : {Layout::row, Layout::col}) {
        int any = 0, a1 = 0;
        for (const auto& e : gemm_table().entries()) {
          if (kind_of(e.config) != kind || e.config.a_layout != la || e.config.b_layout != lb) continue;
          ++any;
          a1 += e.config.align == 1 ? 1 : 0;
        }
        CAPTURE(kind);
        CAPTURE(layout_letter(la));
        CAPTURE(layout_letter(lb));
        CHECK(any >= 2);   // a fast aligned instance and the fallback
        CHECK(a1 >= 1);
      }
}

TEST_CASE("table: add() ignores a second entry with the same name; find() by name") {
  GemmTable t;
  const auto& src = gemm_table().entries();
  REQUIRE(src.size() >= 2);
  t.add(src[0]);
  t.add(src[0]);
  t.add(src[1]);
  CHECK(t.size() == 2);
  CHECK(t.find(src[1].name) == &t.entries()[1]);
  CHECK(t.find("nope") == nullptr);
}

TEST_CASE("FixedString builds names at compile time") {
  constexpr auto s = [] {
    FixedString<16> f;
    f.append("ab").append('_').append(-42).append(0).append(7LL);
    return f;
  }();
  static_assert(s.view() == "ab_-4207");
  CHECK(std::string(s.c_str()) == "ab_-4207");
  constexpr auto cut = [] {
    FixedString<4> f;
    f.append("abcdefg");
    return f;
  }();
  static_assert(cut.view() == "abcd");  // truncates at capacity, never overflows
}
