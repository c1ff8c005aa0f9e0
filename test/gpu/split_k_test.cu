// GPU tests: split-K (GemmLaunchOptions::split_k, serial and parallel modes) against a float64 CPU
// reference — every split count in {1, 2, 3, 5, 8, 13} × both modes on edge shapes (M = 1, primes, K not
// divisible by the split, K < split·BK, odd ldd) for one instance of every split-capable family, the
// epilogue applied once to the whole sum (beta with C aliasing D, bias + relu, residual, clamp), serial
// mode bit-identical across runs, a too-small caller workspace rejected with nothing written, a
// caller workspace full of garbage, and the small-M (decode) family on its target shapes. Cluster mode
// (SplitKMode::cluster, sm90 devices): every cluster size on the same edge shapes, one and several
// clusters per tile, the epilogue once, bit-identity with garbage workspaces, refusals, a CUDA graph.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gpu/split_k_checks.cuh"
#include "ktune/gemm/split_k.hpp"

using namespace kt;

namespace {

const std::vector<EdgeShape>& split_shapes() {
  static const std::vector<EdgeShape> s = {
      {"M = 1", 1, 136, 520},
      {"prime M and N, K not a multiple of BK", 37, 131, 440},
      {"primes (only 1- and 2-element vector instances)", 37, 131, 443},
      {"K < split·BK", 48, 72, 40},
      {"odd ldd", 61, 96, 296, 3},
      {"K not divisible by the split, long", 20, 264, 2056},
  };
  return s;
}

// Operand alignment: K and the leading dimensions must suit the instance's vectors.
bool aligned_for(const GemmKernelEntry& e, const EdgeShape& sh) {
  return sh.k % e.config.align == 0 && (e.config.b_layout != Layout::row || sh.n % e.config.align == 0);
}

constexpr SplitKMode kModes[] = {SplitKMode::serial, SplitKMode::parallel};

// split_k × serial and parallel mode (split 1 once).
std::vector<GemmLaunchOptions> split_launches(std::initializer_list<int> splits) {
  std::vector<GemmLaunchOptions> v;
  for (int s : splits)
    for (SplitKMode mode : kModes)
      if (s > 1 || mode == SplitKMode::serial) v.push_back(split_k_launch(s, mode));
  return v;
}

// One split-capable instance per family (f16/bf16 tn where the family has it), runnable here.
std::vector<const GemmKernelEntry*> split_instances(const DeviceInfo& dev) {
  std::map<std::string_view, const GemmKernelEntry*> pick;
  for (const auto& e : gemm_table().entries()) {
    if (e.workspace_size == nullptr || is_route(e) || !runs_on_device(e, dev).ok()) continue;
    if (!supports_serial_split_k(e.config)) continue;  // both modes here (sm90 parallel-only tiles: sm90_split_k_test)
    if (e.config.a_layout != Layout::row) continue;
    auto& p = pick[e.family];
    // Prefer bf16 with B column-major (the decode layout), then anything.
    const bool good = e.config.math == MathOp::mma_bf16 && e.config.b_layout == Layout::col;
    if (p == nullptr || (good && !(p->config.math == MathOp::mma_bf16 && p->config.b_layout == Layout::col))) p = &e;
  }
  std::vector<const GemmKernelEntry*> out;
  for (auto& [f, e] : pick) out.push_back(e);
  return out;
}

// One cluster-capable instance per family (bf16, B column-major: the decode layout), runnable here.
std::vector<const GemmKernelEntry*> cluster_instances(const DeviceInfo& dev) {
  std::map<std::string_view, const GemmKernelEntry*> pick;
  for (const auto& e : gemm_table().entries()) {
    // (The sm80 form, several clusters per tile; sm90's one cluster per tile: sm90_split_k_test.)
    if (!supports_cluster_split_k(e.config) || !cluster_split_k_across_clusters(e.config) || e.workspace_size == nullptr ||
        is_route(e) || !runs_on_device(e, dev).ok())
      continue;
    if (e.config.math != MathOp::mma_bf16 || e.config.b_layout != Layout::col) continue;
    auto& p = pick[e.family];
    if (p == nullptr || e.config.tile.k > p->config.tile.k) p = &e;  // 16x64x128 / 32x64x128 over 16x128x64
  }
  std::vector<const GemmKernelEntry*> out;
  for (auto& [f, e] : pick) out.push_back(e);
  return out;
}

// (split_k, CTAs per cluster): one cluster per tile (2/2 .. 16/16, 3 and 6: sizes that are not powers of
// two), several (16/4, 24/8, 64/8, 48/16), more slices than k-tiles at small K (empty slices add zeros).
const std::vector<GemmLaunchOptions>& cluster_launches() {
  static const std::vector<GemmLaunchOptions> v = {
      cluster_split_launch(2, 2),  cluster_split_launch(3, 3),  cluster_split_launch(4, 4),  cluster_split_launch(6, 6),
      cluster_split_launch(8, 8),  cluster_split_launch(16, 16), cluster_split_launch(16, 4), cluster_split_launch(24, 8),
      cluster_split_launch(64, 8), cluster_split_launch(48, 16)};
  return v;
}

// The tables of the two modes' edge-shape cases: the shapes above, D in f32 and bf16, `launches` where
// the operands are aligned for the instance.
EdgeRuns edge_runs(std::vector<GemmLaunchOptions> launches) {
  EdgeRuns t;
  t.shapes = [](const GemmKernelEntry&) { return split_shapes(); };
  t.d_types = [](const GemmKernelEntry&) { return std::vector<DType>{DType::f32, DType::bf16}; };
  t.launches = [launches](const GemmKernelEntry& e, const EdgeShape& sh) {
    return aligned_for(e, sh) ? launches : std::vector<GemmLaunchOptions>{};
  };
  return t;
}

EdgeShape fixed_shape(const GemmKernelEntry&, int m, int n, int k) { return {"", m, n, k}; }

}  // namespace

TEST_CASE("split-K: every split count and mode on edge shapes matches the float64 reference") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  // 5, 8, 13: several slice groups (13: 4+4+4+1; empty slices at small K)
  const int runs = check_edge_shapes(instances, edge_runs(split_launches({1, 2, 3, 5, 8, 13})), 600);
  MESSAGE(runs << " split-K runs over " << instances.size() << " instances");
}

TEST_CASE("split-K: the epilogue is applied once, to the whole sum") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  const int runs = check_whole_sum_epilogues(
      instances, [](const GemmKernelEntry& e) { return fixed_shape(e, 33, 200, 1000); }, {DType::f32, DType::bf16},
      [](const GemmKernelEntry&) { return split_launches({2, 5}); }, 700);
  MESSAGE(runs << " whole-sum epilogue runs");
}

TEST_CASE("split-K: deterministic (bit-identical across runs and modes), with a caller workspace full of garbage") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  std::uint64_t seed = 800;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const RandomOperands op = random_operands(*e, 64, 264, 8192, rng);
    DirectRun x = direct_run(*e, op, DType::f32, EpilogueSpec{}, rng);
    for (int s : {3, 8, 37, 64, 256}) {  // 37..256: several slice groups; 256 > k-tiles: empty slices
      // Serial and parallel add in the same order: the same bits, run to run and between the modes.
      const GemmLaunchOptions serial = split_k_launch(s, SplitKMode::serial), parallel = split_k_launch(s, SplitKMode::parallel);
      check_same_bits(x, *e, {serial, serial, serial, parallel, parallel, parallel});
    }
  }
}

TEST_CASE("split-K: a workspace too small is an error and nothing is written") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  const GemmKernelEntry* e = instances.front();
  Rng rng(900);
  const RandomOperands op = random_operands(*e, 40, 136, 1024, rng);
  for (SplitKMode mode : kModes) {
    DirectRun x = direct_run(*e, op, DType::bf16, EpilogueSpec{}, rng);
    GemmOptions opt;
    opt.instance = e->name.data();
    opt.launch = split_k_launch(4, mode);
    const std::size_t need = gemm_workspace_size(x.d, opt);
    REQUIRE(need > 0);
    DeviceBuffer ws(need);
    KT_CUDA(cudaMemset(ws.ptr, 0x77, need));
    x.ops.workspace = ws.ptr;
    x.ops.workspace_bytes = need - 4;
    const Status st = gemm(x.d, x.ops, nullptr, opt);
    CHECK(st.code() == StatusCode::invalid_argument);
    CHECK(st.message().find("workspace too small") != std::string::npos);
    backend::sync(nullptr);
    CHECK(still_poisoned(x.D));
    CHECK(still_filled(ws, need, 0x77));
    // The launcher itself refuses too (the tuner calls it directly).
    CHECK(e->launch(resolved(x.d), x.ops, opt.launch, nullptr).code() == StatusCode::invalid_argument);
    // Instances without split-K support refuse split_k > 1.
    for (const auto& other : gemm_table().entries())
      if (other.workspace_size == nullptr && !is_route(other)) {
        CHECK(check_launch_options(other, split_k_launch(2, mode)).code() == StatusCode::unsupported);
        break;
      }
  }
}

TEST_CASE("split-K through the one-call API with ktune's pooled workspace, on two streams") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  cudaStream_t s1 = nullptr, s2 = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  KT_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  std::uint64_t seed = 1000;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const RandomOperands op = random_operands(*e, 16, 264, 3000, rng);
    for (cudaStream_t s : {s1, s2, static_cast<cudaStream_t>(nullptr)})
      for (SplitKMode mode : kModes) {
        OutputCase oc;
        oc.d_type = DType::bf16;
        const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, s, split_k_launch(7, mode));
        CHECK_MESSAGE(r.status.ok(), r.status.to_string());
        if (r.status.ok()) CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::bf16)), e->name << ": " << r.check.summary());
      }
  }
  KT_CUDA(cudaStreamDestroy(s1));
  KT_CUDA(cudaStreamDestroy(s2));
}

TEST_CASE("small-M family: decode shapes with the split counts split_k_variants proposes") {
  DeviceInfo dev;
  backend::device_info(dev);
  std::vector<const GemmKernelEntry*> small_m;
  for (const auto& e : gemm_table().entries())
    if (e.family == "sm80_mma_f16_small_m" && runs_on_device(e, dev).ok()) small_m.push_back(&e);
  REQUIRE_FALSE(small_m.empty());
  std::uint64_t seed = 1100;
  int runs = 0;
  for (const GemmKernelEntry* e : small_m)
    for (int m : {1, 16, 32}) {
      Rng rng(seed++);
      const RandomOperands op = random_operands(*e, m, 320, 2048, rng);
      for (const GemmLaunchOptions& lo : split_k_variants(*e, ktune::test::problem_for(e->config, m, 320, 2048), dev)) {
        OutputCase oc;
        oc.d_type = DType::bf16;
        oc.epilogue = bias_activation(Activation::silu);
        const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, lo);
        ++runs;
        CHECK_MESSAGE(r.status.ok(), r.status.to_string());
        if (r.status.ok())
          CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::bf16)), tactic_of(*e, lo) << " M=" << m << ": " << r.check.summary());
      }
    }
  MESSAGE(runs << " small-M runs");
}

TEST_CASE("split-K inside a CUDA graph: first use on a capturing stream, replayed several times") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  Rng rng(1200);
  const RandomOperands op = random_operands(*instances.front(), 24, 200, 2048, rng);
  for (SplitKMode mode : kModes) check_graph_replays(*instances.front(), op, split_k_launch(6, mode));
}

// ---- Cluster mode (SplitKMode::cluster: slices summed in thread-block clusters through distributed
// shared memory, then across clusters by the last to arrive; sm80 tiles of at most 32 rows, sm90 devices):
// the same tables with the cluster sizes as launches.

TEST_CASE("cluster split-K: every cluster size on edge shapes matches the float64 reference") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = cluster_instances(dev);
  REQUIRE_FALSE(instances.empty());
  if (dev.cc < 90) {  // no clusters: refused, nothing launched
    Rng rng(1300);
    const RandomOperands op = random_operands(*instances.front(), 16, 64, 256, rng);
    OutputCase oc;
    const RunResult r = run_checked(op.A, op.B, op.acc, instances.front()->config.math, oc, instances.front()->name.data(), rng,
                                    nullptr, cluster_split_launch(4, 4));
    CHECK(r.status.code() == StatusCode::unsupported);
    return;
  }
  const int runs = check_edge_shapes(instances, edge_runs(cluster_launches()), 1300);
  MESSAGE(runs << " cluster split-K runs over " << instances.size() << " instances");
}

TEST_CASE("cluster split-K: the epilogue is applied once, to the whole sum (one and several clusters per tile)") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = cluster_instances(dev);
  REQUIRE_FALSE(instances.empty());
  if (dev.cc < 90) return;  // refusal: previous case
  const int runs = check_whole_sum_epilogues(
      instances, [](const GemmKernelEntry& e) { return fixed_shape(e, 33, 200, 3000); }, {DType::f32, DType::bf16},
      [](const GemmKernelEntry&) { return std::vector<GemmLaunchOptions>{cluster_split_launch(8, 8), cluster_split_launch(16, 4)}; },
      1400);
  MESSAGE(runs << " cluster whole-sum epilogue runs");
}

TEST_CASE("cluster split-K: bit-identical across runs with a caller workspace full of garbage") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = cluster_instances(dev);
  REQUIRE_FALSE(instances.empty());
  if (dev.cc < 90) return;
  std::uint64_t seed = 1500;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const RandomOperands op = random_operands(*e, 64, 136, 16384, rng);
    DirectRun x = direct_run(*e, op, DType::f32, EpilogueSpec{}, rng);
    for (const GemmLaunchOptions& lo :
         {cluster_split_launch(8, 8), cluster_split_launch(64, 8), cluster_split_launch(256, 16), cluster_split_launch(128, 2)}) {
      GemmOptions opt;
      opt.instance = e->name.data();
      opt.launch = lo;
      CHECK((lo.split_k == lo.split_cluster) == (gemm_workspace_size(x.d, opt) == 0));  // one cluster per tile: no workspace at all
      check_same_bits(x, *e, {lo, lo, lo});
    }
  }
}

TEST_CASE("cluster split-K: bad options and short workspaces are refused, nothing written") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = cluster_instances(dev);
  REQUIRE_FALSE(instances.empty());
  const GemmKernelEntry* e = instances.front();
  Rng rng(1600);
  const RandomOperands op = random_operands(*e, 40, 136, 4096, rng);
  auto expect_refused = [&](const GemmKernelEntry& inst, const GemmLaunchOptions& lo, StatusCode code, std::size_t ws_bytes) {
    DirectRun x = direct_run(inst, op, DType::bf16, EpilogueSpec{}, rng);
    DeviceBuffer ws(std::max<std::size_t>(ws_bytes, 256));
    KT_CUDA(cudaMemset(ws.ptr, 0x77, ws.bytes));
    x.ops.workspace = ws.ptr;
    x.ops.workspace_bytes = ws_bytes;
    GemmOptions opt;
    opt.instance = inst.name.data();
    opt.launch = lo;
    const Status st = gemm(x.d, x.ops, nullptr, opt);
    CHECK_MESSAGE(st.code() == code, tactic_of(inst, lo) << ": " << st.to_string());
    CHECK(inst.launch(resolved(x.d), x.ops, lo, nullptr).code() == code);  // the launcher itself too
    backend::sync(nullptr);
    CHECK(still_poisoned(x.D));
    CHECK(still_filled(ws, ws.bytes, 0x77));
  };
  expect_refused(*e, cluster_split_launch(12, 8), StatusCode::invalid_argument, 1 << 20);  // 8 does not divide 12
  expect_refused(*e, cluster_split_launch(32, 32), StatusCode::invalid_argument, 1 << 20);  // above max_split_cluster
  expect_refused(*e, cluster_split_launch(8, 1), StatusCode::invalid_argument, 1 << 20);
  GemmLaunchOptions stray = split_k_launch(8, SplitKMode::parallel);
  stray.split_cluster = 4;  // a cluster size without cluster mode
  expect_refused(*e, stray, StatusCode::invalid_argument, 1 << 20);
  if (dev.cc >= 90) {
    GemmDesc d = ktune::test::problem_for(e->config, 40, 136, 4096);
    d.d_type = DType::bf16;
    const std::size_t need = workspace_bytes_for(*e, resolved(d), cluster_split_launch(32, 8));
    REQUIRE(need > 0);
    expect_refused(*e, cluster_split_launch(32, 8), StatusCode::invalid_argument, need - 4);
  }
  // Instances outside the cluster-capable set refuse it (unsupported).
  for (const auto& other : gemm_table().entries())
    if (other.workspace_size != nullptr && !is_route(other) && !supports_cluster_split_k(other.config) &&
        other.config.a_layout == e->config.a_layout && other.config.b_layout == e->config.b_layout &&
        other.config.operand() == e->config.operand() && runs_on_device(other, dev).ok()) {
      CHECK(check_launch_options(other, cluster_split_launch(8, 4)).code() == StatusCode::unsupported);
      expect_refused(other, cluster_split_launch(8, 4), StatusCode::unsupported, 1 << 20);
      break;
    }
}

TEST_CASE("cluster split-K inside a CUDA graph: first use on a capturing stream, replayed") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = cluster_instances(dev);
  REQUIRE_FALSE(instances.empty());
  if (dev.cc < 90) return;
  Rng rng(1700);
  const RandomOperands op = random_operands(*instances.front(), 24, 200, 4096, rng);
  for (const GemmLaunchOptions& lo : {cluster_split_launch(8, 8), cluster_split_launch(16, 4)}) check_graph_replays(*instances.front(), op, lo);
}
