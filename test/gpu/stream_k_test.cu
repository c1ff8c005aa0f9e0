// GPU tests: stream-K tile scheduling in the Hopper persistent kernel (GemmLaunchOptions::stream_k,
// tactic suffix "@sk"; kernel/schedule.cuh, kernel/sm90/split_k.cuh). Every sm90 'tn' instance family
// (cooperative with one and two consumer warpgroups, ping-pong, tf32) on edge shapes against the float64
// reference with D poisoned and guard bands checked (run_checked): K < BK, M = 1, prime dims, fewer tiles
// than CTAs, tiles = CTAs + 1, data-parallel waves + streamed tiles (grids capped by max_ctas so that a
// tile is cut between several CTAs and CTAs walk several segments); every epilogue (bias + ReLU, alpha/
// beta with C aliasing D, residual + GELU + clamp, residual aliasing D); bit-identical run to run with a
// garbage-filled workspace; refusals (cluster 2, split-K, too many CTAs, short workspace, sm80) with
// nothing written; the variants launch_variants proposes. "stream-K: sanitizer target" is the small case
// for compute-sanitizer racecheck / synccheck. (A wrong flag protocol would end in a trap after seconds,
// not a hang: stream_k_fixup's bounded poll.)
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/split_k_checks.cuh"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

using namespace kt;

namespace {

// Every sm90 'tn' instance that runs here and takes stream-K (supports_stream_k: warpgroup tiles up to
// 64x128), f16 and bf16; `refusing`: the ones that do not (they must refuse it).
std::vector<const GemmKernelEntry*> sk_instances(const DeviceInfo& dev, bool refusing = false) {
  std::vector<const GemmKernelEntry*> out;
  for (const auto& e : gemm_table().entries())
    if (is_wgmma(e.config.math) && !is_route(e) && e.config.a_layout == Layout::row && e.config.b_layout == Layout::col &&
        runs_on_device(e, dev).ok() && supports_stream_k(e.config) != refusing)
      out.push_back(&e);
  return out;
}

// Shapes in units of the instance's tile (so every instance meets the same schedule cases).
std::vector<EdgeShape> sk_shapes(const GemmConfig& c, const DeviceInfo& dev) {
  const int tm = c.tile.m, tn = c.tile.n, sms = std::max(1, dev.sm_count);
  return {
      {"tiles = SMs + 1, every CTA", tm - 1, (sms + 1) * tn - 5, 320},
      {"tiles = 2 SMs - 1 (a full wave and a partial one), every CTA", tm - 1, (2 * sms - 1) * tn - 5, 200},
      {"M = 1, K < BK", 1, 197, 40},
      {"prime M and N, K = 1000; all CTAs, padded ldd", 131, 263, 1000, 3},
      {"fewer tiles than CTAs, long K (many pieces per tile)", 2 * tm - 9, 3 * tn - 7, 4096},
      {"tiles = CTAs + 1 (15 tiles, 14 CTAs)", 3 * tm - 5, 5 * tn - 3, 1000, 0, 14},
      {"2 data-parallel waves + 7 streamed tiles (15 tiles, 4 CTAs), odd ldd", 3 * tm - 5, 5 * tn - 3, 1000, 1, 4},
      {"whole waves (15 tiles, 5 CTAs): data-parallel only", 3 * tm - 5, 5 * tn - 3, 712, 0, 5},
      {"2 k-tiles per tile, 7 CTAs", 3 * tm - 5, 5 * tn - 3, 2 * c.tile.k, 0, 7},
      {"1 tile, 3 CTAs", tm - 3, tn - 1, 1000, 0, 3},
  };
}

}  // namespace

TEST_CASE("stream-K: every sm90 instance, edge shapes and capped grids, against float64") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sk_instances(dev);
  if (instances.empty()) {
    MESSAGE("no sm90 instance runs on this device");
    return;
  }
  EdgeRuns t;
  t.shapes = [&dev](const GemmKernelEntry& e) { return sk_shapes(e.config, dev); };
  t.d_types = [](const GemmKernelEntry& e) { return std::vector<DType>{DType::f32, e.config.operand()}; };
  t.launches = [](const GemmKernelEntry&, const EdgeShape&) { return std::vector<GemmLaunchOptions>{stream_k_launch()}; };
  const int runs = check_edge_shapes(instances, t, 12600);
  MESSAGE(runs << " stream-K runs over " << instances.size() << " instances");
}

TEST_CASE("stream-K: every epilogue, applied once to the whole sum") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sk_instances(dev);
  if (instances.empty()) return;
  // 9 tiles of the instance, K = 1104 (16-byte rows for the TMA): on 4 CTAs one data-parallel wave and
  // 5 streamed tiles; on every resident CTA all 9 streamed.
  const int runs = check_whole_sum_epilogues(
      instances, [](const GemmKernelEntry& e) { return EdgeShape{"", 3 * e.config.tile.m - 11, 3 * e.config.tile.n - 4, 1104}; }, {},
      [](const GemmKernelEntry&) { return std::vector<GemmLaunchOptions>{stream_k_launch(4), stream_k_launch(0)}; }, 12700);
  MESSAGE(runs << " stream-K whole-sum epilogue runs");
}

TEST_CASE("stream-K: bit-identical run to run") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sk_instances(dev);
  if (instances.empty()) return;
  std::uint64_t seed = 12800;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const int M = 2 * e->config.tile.m - 3, N = 2 * e->config.tile.n - 8, K = 4096;  // 4 tiles x 64+ k-tiles
    const RandomOperands op = random_operands(*e, M, N, K, rng);
    DirectRun x = direct_run(*e, op, DType::bf16, bias_activation(Activation::relu), rng);
    for (int ctas : {0, 3, 5}) {
      // The flags come from ktune's pool (left zero); the partial slots hold garbage.
      CHECK(e->workspace_size(resolved(x.d), stream_k_launch(ctas)) > 0);
      check_same_bits(x, *e, {stream_k_launch(ctas), stream_k_launch(ctas), stream_k_launch(ctas)});
    }
  }
}

TEST_CASE("stream-K: refusals leave D and the workspace untouched") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sk_instances(dev);
  if (instances.empty()) return;
  const GemmKernelEntry* e = instances.front();
  Rng rng(12900);
  const RandomOperands op = random_operands(*e, 64, 136, 1024, rng);
  DirectRun direct = direct_run(*e, op, DType::bf16, EpilogueSpec{}, rng);
  const GemmDesc& d = direct.d;
  GemmOperands& ops = direct.ops;
  GemmLaunchOptions lo = stream_k_launch();
  const std::size_t need = e->workspace_size(resolved(d), lo);
  REQUIRE(need > 0);
  DeviceBuffer ws(need + 4096);
  KT_CUDA(cudaMemset(ws.ptr, 0x77, need + 4096));
  ops.workspace = ws.ptr;
  ops.workspace_bytes = need + 4096;
  auto untouched = [&](const char* what) {
    backend::sync(nullptr);
    CHECK_MESSAGE(still_poisoned(direct.D), what << ": D written");
    CHECK_MESSAGE(still_filled(ws, ws.bytes, 0x77), what << ": workspace written");
  };
  lo.cluster = 2;
  CHECK(e->launch(resolved(d), ops, lo, nullptr).code() == StatusCode::unsupported);
  untouched("cluster 2");
  lo = stream_k_launch();
  lo.split_k = 4;
  lo.split_mode = SplitKMode::parallel;
  CHECK(e->launch(resolved(d), ops, lo, nullptr).code() == StatusCode::invalid_argument);
  GemmOptions opt;
  opt.instance = e->name.data();
  opt.launch = lo;
  CHECK(gemm(d, ops, nullptr, opt).code() == StatusCode::invalid_argument);
  untouched("with split_k");
  lo = stream_k_launch(100000);  // more CTAs than are resident: a CTA may wait for one that never starts
  CHECK(e->launch(resolved(d), ops, lo, nullptr).code() == StatusCode::unsupported);
  untouched("max_ctas above resident");
  lo = stream_k_launch();
  ops.workspace_bytes = need - 4;
  const Status st = e->launch(resolved(d), ops, lo, nullptr);
  CHECK(st.code() == StatusCode::invalid_argument);
  CHECK(st.message().find("workspace too small") != std::string::npos);
  untouched("short workspace");
  ops.workspace_bytes = need + 4096;
  for (const GemmKernelEntry* x : sk_instances(dev, true)) {  // 128 accumulators per thread: refused
    CAPTURE(x->name);
    CHECK(check_launch_options(*x, stream_k_launch()).code() == StatusCode::unsupported);
    CHECK(x->launch(resolved(d), ops, stream_k_launch(), nullptr).code() == StatusCode::unsupported);
  }
  untouched("instances without stream-K");
  for (const auto& x : gemm_table().entries())  // an sm80 instance refuses it
    if (!is_wgmma(x.config.math) && !is_route(x) && x.config.operand() == d.ab_type && runs_on_device(x, dev).ok() &&
        can_implement(x, resolved(d), alignment_of(resolved(d), ops), &dev).ok()) {
      CHECK(check_launch_options(x, stream_k_launch()).code() == StatusCode::unsupported);
      CHECK(x.launch(resolved(d), ops, stream_k_launch(), nullptr).code() == StatusCode::unsupported);
      untouched("sm80 instance");
      break;
    }
}

TEST_CASE("stream-K: the variants launch_variants proposes run correctly") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sk_instances(dev);
  if (instances.empty()) return;
  std::uint64_t seed = 12950;
  int runs = 0;
  for (const GemmKernelEntry* e : instances) {
    for (auto [m, n, k] : {std::tuple{128, 4096, 1024}, std::tuple{1000, 1000, 512}}) {
      Rng rng(seed++);
      GemmDesc d = ktune::test::problem_for(e->config, m, n, k);
      d.compute = compute_for(e->config.math);
      for (const GemmLaunchOptions& lo : launch_variants(*e, resolved(d), dev)) {
        if (!lo.stream_k) continue;
        const RandomOperands op = random_operands(*e, m, n, k, rng);
        OutputCase oc;
        oc.d_type = DType::bf16;
        oc.epilogue = bias_activation(Activation::relu);
        const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, lo);
        ++runs;
        CHECK_MESSAGE(r.status.ok(), r.status.to_string());
        if (r.status.ok())
          CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::bf16)),
                        e->name << " " << m << "x" << n << "x" << k << " @sk: " << r.check.summary());
      }
    }
  }
  CHECK(runs > 0);
  MESSAGE(runs << " proposed stream-K runs");
}

// The small case gpu-requests/streamk.sh runs under compute-sanitizer (racecheck, synccheck): one
// cooperative and one ping-pong bf16 instance, a tile cut between CTAs and data-parallel waves.
TEST_CASE("stream-K: sanitizer target") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sk_instances(dev);
  if (instances.empty()) return;
  const auto pick = one_bf16_per_schedule(instances);
  Rng rng(12990);
  for (const GemmKernelEntry* e : pick) {
    const RandomOperands op = random_operands(*e, 2 * e->config.tile.m + 3, 2 * e->config.tile.n, 640, rng);  // 6 tiles
    for (int ctas : {4, 0}) {
      OutputCase oc;
      oc.d_type = DType::bf16;
      oc.epilogue = bias_activation(Activation::relu);
      const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, stream_k_launch(ctas));
      CHECK_MESSAGE(r.status.ok(), r.status.to_string());
      if (r.status.ok()) CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::bf16)), e->name << ": " << r.check.summary());
    }
  }
}
