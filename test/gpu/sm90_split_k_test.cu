// GPU tests: split-K in the Hopper persistent kernel (kernel/sm90/split_k.cuh) — every sm90 'tn'
// instance (cooperative with one and two consumer warpgroups, ping-pong, tf32) × split counts × both
// modes against the float64 reference, on edge shapes: M = 1, odd N, K not divisible by the split, K <
// split·BK (empty slices), and grids capped so that each CTA walks several (tile, slice) units (ping-pong
// consumers alternating across slices, empty ones included); the epilogue applied once to the whole sum
// (bias + ReLU, alpha/beta with C aliasing D, residual + GELU + clamp); serial and parallel bit-identical
// to each other and run to run with every epilogue; cluster 2 with split_k > 1 refused with nothing
// written. (test/gpu/split_k_test.cu covers one sm90 instance per family as well: workspace errors,
// garbage workspaces, graphs, streams.) "sm90 split-K: sanitizer target" is the small case the GPU
// request runs under compute-sanitizer racecheck / synccheck. Serial mode only where
// supports_serial_split_k (warpgroup tiles up to 64x128); the others must refuse it (checked).
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <vector>

#include "gpu/split_k_checks.cuh"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

using namespace kt;

namespace {

// Every sm90 instance with A row-major and B column-major ('tn') that runs here, bf16 and tf32 (the f16
// instances are the bf16 ones' code with another wgmma type).
std::vector<const GemmKernelEntry*> sm90_tn_instances(const DeviceInfo& dev) {
  std::vector<const GemmKernelEntry*> out;
  for (const auto& e : gemm_table().entries())
    if (is_wgmma(e.config.math) && e.config.math != MathOp::wgmma_f16 && !is_route(e) && e.config.a_layout == Layout::row &&
        e.config.b_layout == Layout::col && runs_on_device(e, dev).ok())
      out.push_back(&e);
  return out;
}

// split_k × the modes instance e takes (serial only where supports_serial_split_k), grids capped at max_ctas.
std::vector<GemmLaunchOptions> sm90_split_launches(const GemmKernelEntry& e, std::initializer_list<int> splits, int max_ctas = 0) {
  std::vector<GemmLaunchOptions> v;
  for (int s : splits)
    for (SplitKMode mode : {SplitKMode::serial, SplitKMode::parallel})
      if (mode == SplitKMode::parallel || supports_serial_split_k(e.config)) v.push_back(split_k_launch(s, mode, max_ctas));
  return v;
}

// Cluster split-K with one cluster of ck CTAs per tile: every size instance e takes (2..cluster_split_k_limit).
std::vector<GemmLaunchOptions> sm90_cluster_launches(const GemmKernelEntry& e) {
  std::vector<GemmLaunchOptions> v;
  for (int ck = 2; ck <= cluster_split_k_limit(e.config); ++ck) v.push_back(cluster_split_launch(ck, ck));
  return v;
}

EdgeRuns sm90_edge_runs(std::vector<EdgeShape> shapes, std::function<std::vector<GemmLaunchOptions>(const GemmKernelEntry&)> launches_of) {
  EdgeRuns t;
  t.shapes = [shapes](const GemmKernelEntry&) { return shapes; };
  t.d_types = [](const GemmKernelEntry&) { return std::vector<DType>{DType::f32, DType::bf16}; };
  t.launches = [launches_of](const GemmKernelEntry& e, const EdgeShape&) { return launches_of(e); };
  return t;
}

// The whole-sum epilogue cases' problem: K = 1104, 16-byte rows for the TMA.
EdgeShape sm90_epilogue_shape(const GemmKernelEntry&) { return {"", 200, 264, 1104}; }

}  // namespace

TEST_CASE("sm90 split-K: every instance, split counts and modes, edge shapes, against float64") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) {
    MESSAGE("no sm90 instance runs on this device");
    return;
  }
  const std::vector<EdgeShape> shapes = {
      {"M = 1, odd N", 1, 197, 1000},
      {"K < split·BK: 2 k-tiles, empty slices; 1 CTA walks every unit", 130, 136, 128, 0, 1},
      {"prime M, N = 4 mod 8, K not divisible by the split, padded ldd", 131, 260, 1000, 3},
      {"several tiles per CTA, 3 CTAs", 300, 520, 712, 0, 3},
  };
  const int runs = check_edge_shapes(
      instances, sm90_edge_runs(shapes, [](const GemmKernelEntry& e) { return sm90_split_launches(e, {2, 3, 7, 16}); }), 9600);
  MESSAGE(runs << " sm90 split-K runs over " << instances.size() << " instances");
}

TEST_CASE("sm90 split-K: the epilogue is applied once, to the whole sum") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) return;
  const int runs = check_whole_sum_epilogues(instances, sm90_epilogue_shape, {},
                                             [](const GemmKernelEntry& e) { return sm90_split_launches(e, {2, 5}, 2); }, 9700);
  MESSAGE(runs << " sm90 whole-sum epilogue runs");
}

TEST_CASE("sm90 split-K: serial and parallel bit-identical, run to run, with every epilogue") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) return;
  // bias + ReLU into bf16; alpha/beta products that round (FMA contraction would show) + bias + SiLU
  // into bf16; alpha 0.9 + bias + ReLU into f32.
  EpilogueSpec rounding = linear_combination(1.3f, 0.7f);
  rounding.bias = true;
  rounding.activation = Activation::silu;
  EpilogueSpec scaled = bias_activation(Activation::relu);
  scaled.alpha = 0.9f;
  const std::pair<EpilogueSpec, DType> variants[] = {
      {bias_activation(Activation::relu), DType::bf16}, {rounding, DType::bf16}, {scaled, DType::f32}};
  std::uint64_t seed = 9800;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const RandomOperands op = random_operands(*e, 96, 200, 4096, rng);
    for (const auto& [ep, out] : variants) {
      DirectRun x = direct_run(*e, op, out, ep, rng);
      for (int s : {3, 9, 40, 64}) {  // 40, 64: several slice groups; 64 slices of 64 k-tiles
        std::vector<GemmLaunchOptions> same = {split_k_launch(s, SplitKMode::parallel), split_k_launch(s, SplitKMode::parallel, 7)};
        if (supports_serial_split_k(e->config)) {
          same.push_back(split_k_launch(s, SplitKMode::serial));
          same.push_back(split_k_launch(s, SplitKMode::serial, 5));
        }
        check_same_bits(x, *e, same);
      }
    }
  }
}

TEST_CASE("sm90 split-K: cluster 2 with split_k > 1 and a short workspace are refused, nothing written") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) return;
  const GemmKernelEntry* e = nullptr;  // one that takes both modes
  for (const GemmKernelEntry* x : instances)
    if (e == nullptr && supports_serial_split_k(x->config)) e = x;
  REQUIRE(e != nullptr);
  Rng rng(9900);
  const RandomOperands op = random_operands(*e, 64, 136, 1024, rng);
  DirectRun x = direct_run(*e, op, DType::bf16, EpilogueSpec{}, rng);
  for (SplitKMode mode : {SplitKMode::serial, SplitKMode::parallel}) {
    GemmLaunchOptions lo = split_k_launch(4, mode);
    const std::size_t need = e->workspace_size(resolved(x.d), lo);
    REQUIRE(need > 0);
    DeviceBuffer ws(need);
    KT_CUDA(cudaMemset(ws.ptr, 0x77, need));
    x.ops.workspace = ws.ptr;
    x.ops.workspace_bytes = need;
    lo.cluster = 2;
    CHECK(e->launch(resolved(x.d), x.ops, lo, nullptr).code() == StatusCode::unsupported);
    lo.cluster = 0;
    x.ops.workspace_bytes = need - 4;
    const Status st = e->launch(resolved(x.d), x.ops, lo, nullptr);
    CHECK(st.code() == StatusCode::invalid_argument);
    CHECK(st.message().find("workspace too small") != std::string::npos);
    backend::sync(nullptr);
    CHECK(still_poisoned(x.D));
    CHECK(still_filled(ws, need, 0x77));
  }
  // Serial mode on a 128-accumulator instance (parallel only): refused.
  for (const GemmKernelEntry* other : instances)
    if (!supports_serial_split_k(other->config) && other->config.operand() == e->config.operand()) {
      const GemmLaunchOptions lo = split_k_launch(4, SplitKMode::serial);
      const std::size_t need = other->workspace_size(resolved(x.d), lo);
      DeviceBuffer ws(need);
      x.ops.workspace = ws.ptr;
      x.ops.workspace_bytes = need;
      CHECK(other->launch(resolved(x.d), x.ops, lo, nullptr).code() == StatusCode::unsupported);
      backend::sync(nullptr);
      CHECK(still_poisoned(x.D));
      break;
    }
}

TEST_CASE("sm90 split-K: the split counts split_k_variants proposes on short-output shapes") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) return;
  std::uint64_t seed = 9950;
  int runs = 0;
  for (const GemmKernelEntry* e : instances) {
    if (e->config.math == MathOp::wgmma_tf32) continue;
    for (auto [m, n, k] : {std::tuple{128, 1024, 2048}, std::tuple{392, 512, 2048}}) {
      Rng rng(seed++);
      const RandomOperands op = random_operands(*e, m, n, k, rng);
      for (const GemmLaunchOptions& lo : split_k_variants(*e, resolved(ktune::test::problem_for(e->config, m, n, k)), dev)) {
        OutputCase oc;
        oc.d_type = DType::f16;
        oc.epilogue = bias_activation(Activation::relu);
        const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, lo);
        ++runs;
        CHECK_MESSAGE(r.status.ok(), r.status.to_string());
        if (r.status.ok())
          CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::f16)),
                        tactic_of(*e, lo) << " " << m << "x" << n << "x" << k << ": " << r.check.summary());
      }
    }
  }
  MESSAGE(runs << " proposed-variant runs");
}

// The small case gpu-requests/sm90-splitk.sh runs under compute-sanitizer (racecheck, synccheck): one
// cooperative and one ping-pong instance, serial (several groups) and parallel, a capped grid.
TEST_CASE("sm90 split-K: sanitizer target") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) return;
  const auto pick = one_bf16_per_schedule(instances);
  Rng rng(9990);
  for (const GemmKernelEntry* e : pick) {
    const RandomOperands op = random_operands(*e, 130, 200, 640, rng);
    for (auto [s, mode] : {std::pair{6, SplitKMode::serial}, std::pair{3, SplitKMode::parallel}}) {
      if (mode == SplitKMode::serial && !supports_serial_split_k(e->config)) continue;
      OutputCase oc;
      oc.d_type = DType::bf16;
      oc.epilogue = bias_activation(Activation::relu);
      const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, split_k_launch(s, mode, 3));
      CHECK_MESSAGE(r.status.ok(), r.status.to_string());
      if (r.status.ok()) CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::bf16)), e->name << ": " << r.check.summary());
    }
  }
}

// ---- Cluster split-K on sm90 (SplitKMode::cluster, one cluster of split_k CTAs per tile: warp_specialized_gemm's
// ClusterK path, rank r the k-slice r, the ranks' accumulators added through distributed shared memory)

TEST_CASE("sm90 cluster split-K: every cluster size of every instance that takes it, edge shapes, epilogues, bit-identity") {
  DeviceInfo dev;
  backend::device_info(dev);
  std::vector<const GemmKernelEntry*> instances;
  for (const GemmKernelEntry* e : sm90_tn_instances(dev))
    if (supports_cluster_split_k(e->config)) instances.push_back(e);
  if (instances.empty()) {
    MESSAGE("no sm90 instance with cluster split-K runs on this device");
    return;
  }
  const std::vector<EdgeShape> shapes = {
      {"M = 1, odd N", 1, 197, 1000},
      {"K < ranks·BK: 2 k-tiles, empty slices", 130, 136, 128},
      {"prime M, N = 4 mod 8, K not divisible by the ranks, padded ldd", 131, 260, 1000, 3},
      {"many tiles (more clusters than resident at once)", 1100, 1040, 520},
  };
  const int runs = check_edge_shapes(instances, sm90_edge_runs(shapes, sm90_cluster_launches), 9900);
  check_whole_sum_epilogues(instances, sm90_epilogue_shape, {}, sm90_cluster_launches, 9960);
  std::uint64_t seed = 9970;
  for (const GemmKernelEntry* e : instances) {
    // Bit-identical run to run, bias + SiLU into bf16 (no workspace: nothing to fill with garbage).
    Rng rng(seed++);
    const RandomOperands op = random_operands(*e, 200, 264, 1104, rng);
    DirectRun x = direct_run(*e, op, DType::bf16, bias_activation(Activation::silu), rng);
    for (const GemmLaunchOptions& lo : sm90_cluster_launches(*e)) check_same_bits(x, *e, {lo, lo, lo});
    // Refused (unsupported, nothing launched or written): a cluster above the ring's limit, several
    // clusters per tile, cluster = 2 with it.
    const int limit = cluster_split_k_limit(e->config);
    GemmLaunchOptions over = cluster_split_launch(limit + 1, limit + 1), several = cluster_split_launch(4, 2),
                      multicast = cluster_split_launch(2, 2);
    multicast.cluster = 2;
    const RandomOperands small = random_operands(*e, 64, 136, 1024, rng);
    DirectRun r = direct_run(*e, small, DType::bf16, EpilogueSpec{}, rng);
    for (const GemmLaunchOptions& lo : {over, several, multicast}) {
      if (lo.split_cluster > max_split_cluster) continue;
      const Status st = e->launch(resolved(r.d), r.ops, lo, nullptr);
      CHECK_MESSAGE(st.code() == StatusCode::unsupported, tactic_of(*e, lo) << ": " << st.to_string());
      if (lo.cluster != 2) CHECK(check_launch_options(*e, lo).code() == StatusCode::unsupported);
      backend::sync(nullptr);
      CHECK(still_poisoned(r.D));
    }
  }
  // Instances without it refuse it.
  for (const GemmKernelEntry* e : sm90_tn_instances(dev))
    if (!supports_cluster_split_k(e->config)) CHECK(check_launch_options(*e, cluster_split_launch(2, 2)).code() == StatusCode::unsupported);
  MESSAGE(runs << " sm90 cluster split-K runs over " << instances.size() << " instances");
}
