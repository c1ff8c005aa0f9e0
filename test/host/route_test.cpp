// Host tests: the repack route (ktune/gemm/route/) — its plan (which operands move, scratch leading
// dimensions, workspace offsets and sizes), its table entries, can_implement's reasons, the cost
// model's charge for the copy, and the one-call API's choice on unaligned problems. No GPU needed.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/dispatch.hpp"
#include "ktune/gemm.hpp"
#include "ktune/gemm/heuristic.hpp"
#include "ktune/gemm/route/plan.hpp"
#include "ktune/tuner/cache.hpp"

using namespace ktune;
using namespace ktune::route;

namespace {

const void* addr(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

GemmOperands fake_ops() {
  GemmOperands o;
  o.a = addr(0x100000000);
  o.b = addr(0x140000000);
  o.c = addr(0x180000000);
  o.d = reinterpret_cast<void*>(0x1c0000000);
  o.bias = addr(0x200000000);
  o.residual = addr(0x240000000);
  return o;
}

DeviceInfo fake_device(int cc, int smem_optin, int sms) {
  DeviceInfo d;
  d.ordinal = 0;
  d.name = "fake sm" + std::to_string(cc);
  d.cc = cc;
  d.sm_count = sms;
  d.smem_optin_bytes = smem_optin;
  return d;
}

const DeviceInfo h200 = fake_device(90, 227 * 1024, 132);
const DeviceInfo a100 = fake_device(80, 163 * 1024, 108);

GemmDesc desc(std::int64_t m, std::int64_t n, std::int64_t k, DType ab, Layout la, Layout lb) {
  GemmDesc d;
  d.m = m;
  d.n = n;
  d.k = k;
  d.ab_type = ab;
  d.a_layout = la;
  d.b_layout = lb;
  d.d_type = ab;
  return resolved(d);
}

std::vector<const GemmKernelEntry*> routes() {
  std::vector<const GemmKernelEntry*> out;
  for (const auto& e : gemm_table().entries())
    if (is_route(e)) out.push_back(&e);
  return out;
}

constexpr std::string_view kHopperRoute = "route_repack+ktune_gemm_sm90_wgmma_bf16_tn_256x128x64_w128x128_s4_a8";
constexpr std::string_view kSm80Route = "route_repack+ktune_gemm_sm80_f16_tn_128x256x32_w64x64_s4_a8";

}  // namespace

TEST_CASE("repack plan: misaligned operands move into 16-byte lines, zero padding, 256-byte offsets") {
  SUBCASE("4095x4097x4093 tn: both operands, K contiguous, padded to 128-byte lines") {
    const GemmDesc d = desc(4095, 4097, 4093, DType::bf16, Layout::row, Layout::col);
    const RepackPlan p = plan_repack(d, alignment_of(d, fake_ops()));
    CHECK(p.operands() == 2);
    CHECK(p.a.lines == 4095);
    CHECK(p.a.contiguous == 4093);
    CHECK(p.a.ld_src == 4093);
    CHECK(p.a.ld == 4096);
    CHECK(p.b.lines == 4097);
    CHECK(p.b.contiguous == 4093);
    CHECK(p.b.ld == 4096);
    CHECK(p.a.offset == 0);
    CHECK(p.a.bytes == std::size_t{4095} * 4096 * 2);  // already a multiple of 256
    CHECK(p.b.offset == p.a.bytes);
    CHECK(p.workspace_bytes == p.a.bytes + p.b.bytes);
    CHECK(repack_workspace_bound(d) == p.workspace_bytes);
  }
  SUBCASE("3000x5000x700 tn: 700 elements become 704 (a multiple of 64)") {
    const GemmDesc d = desc(3000, 5000, 700, DType::f16, Layout::row, Layout::col);
    const RepackPlan p = plan_repack(d, alignment_of(d, fake_ops()));
    CHECK(p.operands() == 2);
    CHECK(p.a.ld == 704);
    CHECK(p.b.ld == 704);
    CHECK(p.b.offset % scratch_alignment == 0);
  }
  SUBCASE("only the misaligned operand moves") {
    // tt with odd K: A (K contiguous) is misaligned, B (N = 64 contiguous) is not.
    const GemmDesc d = desc(50, 64, 33, DType::bf16, Layout::row, Layout::row);
    const RepackPlan p = plan_repack(d, alignment_of(d, fake_ops()));
    CHECK(p.a.repack);
    CHECK_FALSE(p.b.repack);
    CHECK(p.b.bytes == 0);
    CHECK(p.a.ld == 40);
    CHECK(p.workspace_bytes == round_up_bytes(50 * 40 * 2, scratch_alignment));
    // The bound covers both operands whatever the pointers (the workspace query cannot see them).
    CHECK(repack_workspace_bound(d) >= p.workspace_bytes);
    CHECK(repack_workspace_bound(d) == p.a.bytes + round_up_bytes(33 * 64 * 2, scratch_alignment));
  }
  SUBCASE("an odd pointer alone makes an operand move") {
    const GemmDesc d = desc(64, 64, 64, DType::f16, Layout::row, Layout::col);
    GemmOperands o = fake_ops();
    o.b = addr(0x140000002);
    const RepackPlan p = plan_repack(d, alignment_of(d, o));
    CHECK_FALSE(p.a.repack);
    CHECK(p.b.repack);
    CHECK(p.b.ld == 64);
  }
  SUBCASE("tiny extents: K < 8, M = 1") {
    const GemmDesc d = desc(1, 300, 7, DType::bf16, Layout::col, Layout::col);
    const RepackPlan p = plan_repack(d, GemmAlignment{1, 1, 1});
    CHECK(p.a.lines == 7);       // column-major A: K lines of M elements
    CHECK(p.a.contiguous == 1);
    CHECK(p.a.ld == 8);
    CHECK(p.b.lines == 300);     // column-major B: N lines of K elements
    CHECK(p.b.contiguous == 7);
    CHECK(p.b.ld == 8);
  }
  SUBCASE("scratch leading dimensions") {
    CHECK(scratch_ld(1) == 8);
    CHECK(scratch_ld(8) == 8);
    CHECK(scratch_ld(9) == 16);
    CHECK(scratch_ld(511) == 512);
    CHECK(scratch_ld(512) == 512);
    CHECK(scratch_ld(513) == 576);
    CHECK(scratch_ld(4095) == 4096);
  }
  SUBCASE("traffic: every moved line read once and written once, padding included") {
    const GemmDesc d = desc(4095, 4097, 4093, DType::bf16, Layout::row, Layout::col);
    CHECK(repack_traffic_bytes(d) == doctest::Approx(2.0 * (4095.0 + 4097.0) * (4093.0 + 4096.0)));
  }
}

TEST_CASE("route entries: registered for Hopper and sm80 tiles, names spell the inner instance") {
  const auto rs = routes();
  REQUIRE_FALSE(rs.empty());
  CHECK(gemm_table().find(kHopperRoute) != nullptr);
  CHECK(gemm_table().find(kSm80Route) != nullptr);
  for (const GemmKernelEntry* e : rs) {
    CAPTURE(e->name);
    REQUIRE(e->name.rfind(repack_prefix, 0) == 0);
    const std::string_view inner_name = e->name.substr(repack_prefix.size());
    const GemmKernelEntry* inner = gemm_table().find(inner_name);
    REQUIRE(inner != nullptr);  // every route's inner instance is registered
    CHECK_FALSE(is_route(*inner));
    CHECK(inner->name == instance_name(e->config).view());
    CHECK(inner->resources == e->resources);
    CHECK(bool(e->launch));
    CHECK(bool(e->attributes));
    CHECK(bool(e->implements));
    CHECK(bool(e->extra_traffic));
    CHECK(bool(e->workspace_size));
    CHECK(e->name.data()[e->name.size()] == '\0');  // usable as GemmOptions::instance
    CHECK(e->config.align == 8);
    CHECK((e->config.operand() == DType::f16 || e->config.operand() == DType::bf16));
  }
  // A few entries only: 3 Hopper tiles and 1 sm80 tile, f16/bf16, the layouts the families keep.
  CHECK(rs.size() <= 32);
  CHECK(gemm_table().find("route_repack+ktune_gemm_sm90_wgmma_f16_tt_128x128x64_w64x128_s5_a8") != nullptr);
}

TEST_CASE("route can_implement: misaligned operands accepted, each other case refused with its reason") {
  const GemmKernelEntry* e = gemm_table().find(kHopperRoute);
  REQUIRE(e != nullptr);
  const GemmDesc odd = desc(4095, 4097, 4093, DType::bf16, Layout::row, Layout::col);
  const GemmAlignment al = alignment_of(odd, fake_ops());
  REQUIRE(al.a == 1);
  REQUIRE(al.b == 1);
  CHECK(can_implement(*e, odd, al, &h200).ok());
  CHECK(can_implement(*e, odd, al, nullptr).ok());
  CHECK(can_implement(*e, odd, GemmAlignment{8, 2, 1}, &h200).ok());  // one misaligned operand is enough

  SUBCASE("already aligned") {
    const GemmDesc d = desc(4096, 4096, 4096, DType::bf16, Layout::row, Layout::col);
    const Status s = can_implement(*e, d, GemmAlignment{8, 8, 8}, &h200);
    CHECK(s.code() == StatusCode::misaligned);
    CHECK(s.message() ==
          "operands already aligned (A allows 8-element vectors, B 8): use the instance directly, without the copy");
  }
  SUBCASE("wrong math") {
    const Status s = can_implement(*e, desc(63, 65, 67, DType::f16, Layout::row, Layout::col), al, &h200);
    CHECK(s.code() == StatusCode::unsupported);
    CHECK(s.message() == "route's inner instance computes wgmma_bf16, problem needs mma_f16");
    GemmDesc f32 = desc(63, 65, 67, DType::f32, Layout::row, Layout::col);
    CHECK(can_implement(*e, f32, al, &h200).code() == StatusCode::unsupported);
  }
  SUBCASE("wrong layout") {
    const Status s = can_implement(*e, desc(63, 65, 67, DType::bf16, Layout::col, Layout::col), al, &h200);
    CHECK(s.code() == StatusCode::unsupported);
    CHECK(s.message() == "route is for layout tn, problem is nn");
  }
  SUBCASE("device the inner instance cannot run on") {
    const Status s = can_implement(*e, odd, al, &a100);
    CHECK(s.code() == StatusCode::no_instance);
    CHECK(s.message() == "route's inner instance: instance needs sm90a (compute capability 9.0 exactly), device is sm80");
    const GemmKernelEntry* r80 = gemm_table().find(kSm80Route);
    REQUIRE(r80 != nullptr);
    CHECK(can_implement(*r80, desc(4095, 4097, 4093, DType::f16, Layout::row, Layout::col), al, &a100).ok());
    const DeviceInfo turing = fake_device(75, 64 * 1024, 40);
    CHECK(can_implement(*r80, desc(4095, 4097, 4093, DType::f16, Layout::row, Layout::col), al, &turing).code() ==
          StatusCode::no_instance);
  }
}

TEST_CASE("route workspace: sized for both operands, from the resolved problem") {
  const GemmKernelEntry* e = gemm_table().find(kHopperRoute);
  REQUIRE(e != nullptr);
  REQUIRE(bool(e->workspace_size));
  GemmDesc d = desc(3000, 5000, 700, DType::bf16, Layout::row, Layout::col);
  CHECK(e->workspace_size(d, GemmLaunchOptions{}) == repack_workspace_bound(d));
  CHECK(e->workspace_size(d, GemmLaunchOptions{}) ==
        round_up_bytes(3000 * 704 * 2, scratch_alignment) + round_up_bytes(5000 * 704 * 2, scratch_alignment));
  // Odd leading dimensions do not change the scratch (it is packed to its own leading dimension).
  d.lda = 703;
  d.ldb = 1001;
  CHECK(e->workspace_size(d, GemmLaunchOptions{}) == repack_workspace_bound(desc(3000, 5000, 700, DType::bf16, Layout::row, Layout::col)));
  // A named route: gemm_workspace_size reports exactly its need.
  GemmOptions opt;
  opt.instance = kHopperRoute.data();
  CHECK(gemm_workspace_size(d, opt) == repack_workspace_bound(d));
}

TEST_CASE("route cost: the inner instance's cost plus the copy's traffic and launch") {
  const GemmKernelEntry* e = gemm_table().find(kHopperRoute);
  REQUIRE(e != nullptr);
  const GemmKernelEntry* inner = gemm_table().find(instance_name(e->config).view());
  REQUIRE(inner != nullptr);
  const GemmDesc d = desc(4095, 4097, 4093, DType::bf16, Layout::row, Layout::col);
  const double extra = heuristic_cost(*e, d, h200) - heuristic_cost(*inner, d, h200);
  CHECK(extra == doctest::Approx(repack_traffic_bytes(d) + 1e7));
  CHECK(route_cost(*inner, d) == 0.0);
}

TEST_CASE("select_gemm: unaligned problems take a repack route where it is cheaper than narrow vectors") {
  auto pick = [](const GemmDesc& d, const DeviceInfo& dev) -> const GemmKernelEntry* {
    const GemmKernelEntry* e = nullptr;
    const Status s = select_gemm(d, fake_ops(), gemm_table(), dev, {}, e);
    CAPTURE(s.to_string());
    CHECK(s.ok());
    return e;
  };
  for (DType t : {DType::bf16, DType::f16})
    for (Layout la : {Layout::row, Layout::col})
      for (Layout lb : {Layout::row, Layout::col}) {
        const GemmDesc big = desc(4095, 4097, 4093, t, la, lb);
        const GemmKernelEntry* e = pick(big, h200);
        REQUIRE(e != nullptr);
        CAPTURE(e->name);
        CHECK(is_route(*e));
        CHECK(is_wgmma(e->config.math));
      }
  // Tiny problems: the copy's launch costs more than narrow vectors lose.
  const GemmKernelEntry* small = pick(desc(37, 45, 29, DType::bf16, Layout::row, Layout::col), h200);
  REQUIRE(small != nullptr);
  CAPTURE(small->name);
  CHECK_FALSE(is_route(*small));
  // Aligned problems never see a route.
  const GemmKernelEntry* aligned = pick(desc(4096, 4096, 4096, DType::bf16, Layout::row, Layout::col), h200);
  REQUIRE(aligned != nullptr);
  CHECK_FALSE(is_route(*aligned));
}

TEST_CASE("candidates: a route's why-not line names the route") {
  const GemmDesc d = desc(4096, 4096, 4096, DType::bf16, Layout::row, Layout::col);
  std::vector<std::string> why;
  (void)gemm_table().candidates(d, GemmAlignment{8, 8, 8}, &h200, &why);
  bool found = false;
  for (const std::string& w : why)
    if (w.rfind(std::string(kHopperRoute) + ": operands already aligned", 0) == 0) found = true;
  CHECK(found);
}

TEST_CASE("routes and split-K: refused as a launch option, never proposed as a variant") {
  const GemmKernelEntry* e = gemm_table().find(kSm80Route);
  REQUIRE(e != nullptr);
  GemmLaunchOptions o;
  o.split_k = 4;
  const Status s = check_launch_options(*e, o);
  CHECK(s.code() == StatusCode::unsupported);
  CHECK(check_launch_options(*e, GemmLaunchOptions{}).ok());
  // A small-M unaligned problem, where kernel instances get split-K variants: the route gets none.
  const GemmDesc d = desc(64, 512, 8191, DType::f16, Layout::row, Layout::col);
  const auto v = split_k_variants(*e, d, a100);
  CHECK(v.size() == 1);
  CHECK(v.front().split_k == 1);
}

TEST_CASE("gemm_workspace_size: the bound over every entry covers the routes (misaligned operands)") {
  const GemmDesc d = desc(4095, 4097, 4093, DType::bf16, Layout::row, Layout::col);
  CHECK(gemm_workspace_size(d) >= repack_workspace_bound(d));
  // An f32 problem has no route: its bound does not include one.
  const GemmDesc f = desc(4095, 4097, 4093, DType::f32, Layout::row, Layout::col);
  CHECK(gemm_workspace_size(f) < repack_workspace_bound(d));
}

TEST_CASE("every table entry's name can be stored in the tuning cache (routes included)") {
  for (const auto& e : gemm_table().entries()) {
    CAPTURE(e.name);
    CHECK(tuner::detail::plausible_name(e.name, 200));
  }
  CHECK(tuner::detail::plausible_name(kHopperRoute, 200));
}
