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
// Programmatic dependent launch: chains of launches that read the previous one's output, step by step
// against float64 and back to back / in a graph bit-identical to that ("... sanitizer target" for
// compute-sanitizer); the same for the sm80 kernel (mma.sync bf16 and tf32, SIMT) on sm90 devices,
// alone and interleaved with the sm90 kernel ("sm80 programmatic dependent launch: ...").
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/split_k_checks.cuh"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

using namespace kt;

namespace {

// Every sm90 instance with A row-major and B column-major ('tn') that runs here, bf16 and tf32 (the f16
// instances are the bf16 ones' code with another wgmma type). The swap-AB instances take no split-K,
// stream-K or clusters (and no f32 D): only where `with_swap` (the PDL chains, default launches of bf16
// D); their refusals have a test of their own below.
std::vector<const GemmKernelEntry*> sm90_tn_instances(const DeviceInfo& dev, bool with_swap = false) {
  std::vector<const GemmKernelEntry*> out;
  for (const auto& e : gemm_table().entries())
    if (is_wgmma(e.config.math) && e.config.math != MathOp::wgmma_f16 && !is_route(e) && e.config.a_layout == Layout::row &&
        e.config.b_layout == Layout::col && runs_on_device(e, dev).ok() && (with_swap || !is_swap_ab(e.config)))
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

TEST_CASE("sm90 swap AB: split-K, stream-K, clusters and f32 D are refused, nothing written") {
  DeviceInfo dev;
  backend::device_info(dev);
  int checked = 0;
  for (const GemmKernelEntry* e : sm90_tn_instances(dev, true)) {
    if (!is_swap_ab(e->config)) continue;
    CAPTURE(e->name);
    Rng rng(9800 + checked);
    const RandomOperands op = random_operands(*e, 200, 136, 512, rng);
    DirectRun x = direct_run(*e, op, DType::bf16, bias_activation(Activation::relu), rng);
    CHECK((e->workspace_size == nullptr));
    GemmLaunchOptions pair;
    pair.cluster = 2;
    for (const GemmLaunchOptions& lo : {split_k_launch(2, SplitKMode::parallel), split_k_launch(2, SplitKMode::serial), stream_k_launch(),
                                        cluster_split_launch(2, 2), pair}) {
      CHECK(check_launch_options(*e, lo).code() == StatusCode::unsupported);
      CHECK(e->launch(resolved(x.d), x.ops, lo, nullptr).code() == StatusCode::unsupported);
    }
    GemmDesc f32 = resolved(x.d);
    f32.d_type = DType::f32;
    const Status st = can_implement(*e, f32, alignment_of(f32, x.ops), &dev);
    CHECK(st.code() == StatusCode::unsupported);
    CHECK(st.message().find("16-bit D") != std::string::npos);
    CHECK(e->launch(f32, x.ops, GemmLaunchOptions{}, nullptr).code() == StatusCode::unsupported);
    backend::sync(nullptr);
    CHECK(still_poisoned(x.D));
    ++checked;
  }
  MESSAGE(checked << " swap-AB instances checked");
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

// ---- Programmatic dependent launch (kernel/sm90/kernel.cuh sm90_launch; KTUNE_SM90_PDL=0 turns it off)
//
// Chains of launches in one stream where each reads what the one before wrote and writes what the one
// before read: step s computes X_{s+1} = alpha·X_s·B_s + beta·X_s + bias with C = X_s and the bias = row 0
// of X_s, so the producer's first read (A) and the consumers' first reads (the bias prefetch, C) depend
// on the previous launch; X_{s+1} goes into the buffer of X_{s-1}, which the previous launch read. The
// steps cycle through launch kinds (plain, split-K parallel and serial, cluster 2, stream-K, cluster
// split-K) and instances, all with one caller workspace (partials and counters reused step to step).
// Reference: the chain run step by step (D poisoned before, a sync after each step; each step against
// float64 of its own stored input, guard bands and ld padding checked), then the same chain launched
// back to back and captured into a CUDA graph (replayed twice) must leave both buffers bit-identical.
namespace {

struct PdlStep {
  const GemmKernelEntry* e;
  GemmLaunchOptions lo;
};

// bf16 'tn' sm90 instances for the chains: one per schedule, plus the first that takes stream-K, serial
// and cluster split-K where those are missing; with every launch kind each takes.
std::vector<std::vector<PdlStep>> pdl_instance_launches(const std::vector<const GemmKernelEntry*>& instances) {
  auto picks = one_bf16_per_schedule(instances);
  const std::function<bool(const GemmConfig&)> wanted[] = {[](const GemmConfig& c) { return supports_stream_k(c); },
                                                           [](const GemmConfig& c) { return supports_serial_split_k(c); },
                                                           [](const GemmConfig& c) { return supports_cluster_split_k(c); }};
  for (const auto& has : wanted)
    if (std::none_of(picks.begin(), picks.end(), [&](const GemmKernelEntry* p) { return has(p->config); }))
      for (const GemmKernelEntry* e : instances)
        if (e->config.math == MathOp::wgmma_bf16 && has(e->config)) {
          picks.push_back(e);
          break;
        }
  GemmLaunchOptions pair;
  pair.cluster = 2;
  const GemmLaunchOptions kinds[] = {GemmLaunchOptions{},
                                     split_k_launch(3, SplitKMode::parallel),
                                     split_k_launch(3, SplitKMode::serial),
                                     pair,
                                     stream_k_launch(),
                                     cluster_split_launch(2, 2)};
  std::vector<std::vector<PdlStep>> out;
  for (const GemmKernelEntry* e : picks) {
    std::vector<PdlStep> v;
    for (const GemmLaunchOptions& lo : kinds) {
      if (lo.split_k > 1 && lo.split_mode == SplitKMode::serial && !supports_serial_split_k(e->config)) continue;
      if (lo.split_mode == SplitKMode::cluster && !supports_cluster_split_k(e->config)) continue;
      if (check_launch_options(*e, lo).ok()) v.push_back({e, lo});
    }
    out.push_back(v);
  }
  return out;
}

// The chain's buffers: X[2] (n × n, row-major, ld n + 8), B_s (col-major, ld n + 8), X_0 on the
// device for resets, and one workspace for every step.
struct PdlChain {
  int n = 0;
  DType type = DType::bf16;  // of X, B and D (f32: the sm80 tf32 and SIMT instances)
  float alpha = 1.0f, beta = 0.0f;
  std::vector<PdlStep> steps;
  Matrix x[2];
  std::vector<Matrix> b;
  std::vector<unsigned char> x0_image, poison_image;
  DeviceBuffer x0, ws;

  // Step s's problem (f32 operands: tf32 compute for a tensor-core step, exact f32 for SIMT).
  GemmDesc desc(int s = 0) const {
    GemmDesc d = ktune::test::tn_problem(type, n, n, n);
    if (type == DType::f32 && steps[static_cast<std::size_t>(s)].e->config.math != MathOp::simt_f32) d.compute = Compute::tf32;
    d.lda = d.ldc = d.ldd = x[0].st.ld;
    d.ldb = b[0].st.ld;
    d.epilogue = linear_combination(alpha, beta);
    d.epilogue.bias = true;
    return d;
  }
  Status launch(int s, cudaStream_t stream) {
    const Matrix &in = x[s % 2], &out = x[(s + 1) % 2];
    GemmOperands ops;
    ops.a = in.data();
    ops.b = b[static_cast<std::size_t>(s)].data();
    ops.c = in.data();
    ops.bias = in.data();  // row 0 of X_s
    ops.d = out.data();
    ops.workspace = ws.bytes > 0 ? ws.ptr : nullptr;
    ops.workspace_bytes = ws.bytes;
    GemmOptions opt;
    opt.instance = steps[static_cast<std::size_t>(s)].e->name.data();
    opt.launch = steps[static_cast<std::size_t>(s)].lo;
    return gemm(desc(s), ops, stream, opt);
  }
  // X[0] = X_0, X[1] poisoned (in stream: capturable).
  void reset(cudaStream_t stream) {
    KT_CUDA(cudaMemcpyAsync(x[0].dev.ptr, x0.ptr, x0.bytes, cudaMemcpyDeviceToDevice, stream));
    KT_CUDA(cudaMemsetAsync(x[1].dev.ptr, kPoison, x[1].dev.bytes, stream));
  }
  std::string what(int s) const { return "n=" + std::to_string(n) + " step " + std::to_string(s) + " " + tactic_of(*steps[static_cast<std::size_t>(s)].e, steps[static_cast<std::size_t>(s)].lo); }
};

PdlChain make_pdl_chain(int n, std::vector<PdlStep> steps, std::uint64_t seed, DType type = DType::bf16) {
  PdlChain c;
  c.n = n;
  c.type = type;
  c.steps = std::move(steps);
  c.alpha = 0.5f * static_cast<float>(std::sqrt(3.0 / n));  // X_s·B_s keeps X_s's scale; the sum grows ~1.2× per step
  c.beta = -0.5f;
  Rng rng(seed);
  c.x[0] = random_matrix(storage(type, n, n, true, 8), rng);
  c.x[1] = poisoned(storage(type, n, n, true, 8));
  c.x0_image = c.x[0].image;
  c.poison_image = c.x[1].image;
  c.x0 = DeviceBuffer(c.x0_image.size());
  backend::to_device(c.x0.ptr, c.x0_image.data(), c.x0_image.size());
  for (std::size_t s = 0; s < c.steps.size(); ++s) c.b.push_back(random_matrix(storage(type, n, n, false, 8), rng));
  std::size_t need = 0;
  for (std::size_t s = 0; s < c.steps.size(); ++s) {
    GemmOptions opt;
    opt.instance = c.steps[s].e->name.data();
    opt.launch = c.steps[s].lo;
    need = std::max(need, gemm_workspace_size(c.desc(static_cast<int>(s)), opt));
  }
  if (need > 0) c.ws = DeviceBuffer(need);
  return c;
}

// The stored values (row-major) of an n × n image.
std::vector<double> pdl_values(const Storage& st, const std::vector<unsigned char>& img) {
  std::vector<double> v(static_cast<std::size_t>(st.rows * st.cols));
  for (std::int64_t i = 0; i < st.rows; ++i)
    for (std::int64_t j = 0; j < st.cols; ++j)
      v[static_cast<std::size_t>(i * st.cols + j)] = decode(st.type, img.data() + static_cast<std::size_t>(st.first() + st.index(i, j)) * st.es());
  return v;
}

// Step by step (sync after each) against float64; returns the final images of X[0] and X[1].
std::pair<std::vector<unsigned char>, std::vector<unsigned char>> pdl_step_by_step(PdlChain& c, cudaStream_t stream) {
  c.reset(stream);
  backend::sync(stream);
  const std::int64_t n = c.n;
  DeviceBuffer acc_dev(static_cast<std::size_t>(n * n) * sizeof(double));
  std::vector<double> acc(static_cast<std::size_t>(n * n));
  std::vector<unsigned char> in_img = c.x0_image;
  for (int s = 0; s < static_cast<int>(c.steps.size()); ++s) {
    Matrix& out = c.x[(s + 1) % 2];
    backend::to_device(out.dev.ptr, c.poison_image.data(), c.poison_image.size());
    const Status st = c.launch(s, stream);
    REQUIRE_MESSAGE(st.ok(), c.what(s) << ": " << st.to_string());
    backend::sync(stream);
    GemmDesc rd = c.desc(s);
    reference_gemm_gpu(rd, c.x[s % 2].data(), c.b[static_cast<std::size_t>(s)].data(), reinterpret_cast<double*>(acc_dev.ptr));
    KT_CUDA(cudaDeviceSynchronize());
    backend::to_host(acc.data(), acc_dev.ptr, acc_dev.bytes);
    const std::vector<double> in = pdl_values(c.x[s % 2].st, in_img);
    const std::vector<double> bias(in.begin(), in.begin() + n);
    const std::vector<double> ref = reference_epilogue(acc, n, n, rd.epilogue, &in, &bias, nullptr);
    std::vector<unsigned char> img = out.download();
    const Check ck = check_image(out.st, img, ref);
    CHECK_MESSAGE(ck.ok(tolerance(c.steps[static_cast<std::size_t>(s)].e->config.math, c.type)), c.what(s) << ": " << ck.summary());
    in_img = std::move(img);
  }
  return {c.x[0].download(), c.x[1].download()};
}

// The whole chain back to back (no sync between launches); true if every launch was accepted.
bool pdl_back_to_back(PdlChain& c, cudaStream_t stream) {
  c.reset(stream);
  for (int s = 0; s < static_cast<int>(c.steps.size()); ++s) {
    const Status st = c.launch(s, stream);
    CHECK_MESSAGE(st.ok(), c.what(s) << ": " << st.to_string());
    if (!st.ok()) return false;
  }
  return true;
}

void check_pdl_chain(PdlChain& c) {
  cudaStream_t s = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto want = pdl_step_by_step(c, s);
  const std::string chain = "n=" + std::to_string(c.n) + ", " + std::to_string(c.steps.size()) + " steps";
  // Back to back (no sync between the launches), three rounds.
  for (int r = 0; r < 3; ++r) {
    if (!pdl_back_to_back(c, s)) break;
    backend::sync(s);
    CHECK_MESSAGE(c.x[0].download() == want.first, chain << ", back to back (round " << r << "): X[0] differs from the step-by-step run");
    CHECK_MESSAGE(c.x[1].download() == want.second, chain << ", back to back (round " << r << "): X[1] differs from the step-by-step run");
  }
  // Captured into a graph on a fresh stream (programmatic edges), replayed twice.
  cudaStream_t g_stream = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  cudaGraph_t g = nullptr;
  KT_CUDA(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeThreadLocal));
  const bool ok = pdl_back_to_back(c, g_stream);
  KT_CUDA(cudaStreamEndCapture(g_stream, &g));
  if (ok) {
    cudaGraphExec_t ge = nullptr;
    KT_CUDA(cudaGraphInstantiate(&ge, g, 0));
    for (int r = 0; r < 2; ++r) {
      KT_CUDA(cudaGraphLaunch(ge, g_stream));
      backend::sync(g_stream);
      CHECK_MESSAGE(c.x[0].download() == want.first, chain << ", graph replay " << r << ": X[0] differs from the step-by-step run");
      CHECK_MESSAGE(c.x[1].download() == want.second, chain << ", graph replay " << r << ": X[1] differs from the step-by-step run");
    }
    KT_CUDA(cudaGraphExecDestroy(ge));
  }
  KT_CUDA(cudaGraphDestroy(g));
  KT_CUDA(cudaStreamDestroy(g_stream));
  KT_CUDA(cudaStreamDestroy(s));
}

// Each instance's launch kinds twice over, then one chain interleaving every (instance, kind).
std::vector<std::vector<PdlStep>> pdl_chains(const std::vector<std::vector<PdlStep>>& per_instance) {
  std::vector<std::vector<PdlStep>> chains;
  std::vector<PdlStep> mixed;
  std::size_t longest = 0;
  for (const auto& v : per_instance) {
    std::vector<PdlStep> twice = v;
    twice.insert(twice.end(), v.begin(), v.end());
    chains.push_back(twice);
    longest = std::max(longest, v.size());
  }
  for (std::size_t i = 0; i < longest; ++i)
    for (const auto& v : per_instance)
      if (i < v.size()) mixed.push_back(v[i]);
  chains.push_back(mixed);
  return chains;
}

}  // namespace

TEST_CASE("sm90 programmatic dependent launch: chained launches read the previous one's output") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev, true);
  if (instances.empty()) return;
  const auto per_instance = pdl_instance_launches(instances);
  std::uint64_t seed = 10100;
  int steps = 0;
  // 264: few tiles (the next launch's CTAs sit beside the running ones); 1032: more tiles than SMs.
  for (int n : {264, 1032})
    for (const auto& steps_of : pdl_chains(per_instance)) {
      PdlChain c = make_pdl_chain(n, steps_of, seed++);
      check_pdl_chain(c);
      steps += static_cast<int>(steps_of.size());
    }
  MESSAGE(steps << " chained steps over " << per_instance.size() << " instances (KTUNE_SM90_PDL="
                << std::string(std::getenv("KTUNE_SM90_PDL") ? std::getenv("KTUNE_SM90_PDL") : "unset") << ")");
}

namespace {
// The sanitizer targets' check: the chain step by step, then once back to back on a fresh stream,
// bit-identical (short enough for racecheck).
void check_pdl_back_to_back_once(PdlChain& c) {
  cudaStream_t s = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto want = pdl_step_by_step(c, s);
  if (pdl_back_to_back(c, s)) {
    backend::sync(s);
    CHECK(c.x[0].download() == want.first);
    CHECK(c.x[1].download() == want.second);
  }
  KT_CUDA(cudaStreamDestroy(s));
}
}  // namespace

// The small case for compute-sanitizer racecheck / synccheck: the interleaved chain at n = 264, back to back.
TEST_CASE("sm90 programmatic dependent launch: sanitizer target") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev, true);
  if (instances.empty()) return;
  PdlChain c = make_pdl_chain(264, pdl_chains(pdl_instance_launches(instances)).back(), 10200);
  check_pdl_back_to_back_once(c);
}

// ---- Programmatic dependent launch of the sm80 kernel (gemm_kernel.cuh: gemm_kernel triggers and waits
// at its start on sm_90 images; launch_with launches programmatically on sm90 devices by pdl.hpp's rule,
// KTUNE_SM80_PDL=0 never, =1 always; the parallel split-K reduction stays a plain launch)
//
// The chains above over sm80 'tn' instances, one per family: plain, split-K 3 parallel and serial, and
// on sm90 devices cluster split-K with one cluster per tile (2/2) and with two clusters per tile (4/2:
// partials and counters through the workspace). bf16 (mma.sync) and f32 (tf32 mma.sync, SIMT) chains,
// and one chain interleaving the bf16 sm80 and sm90 launch kinds (each kernel after the other, which
// triggers its dependents early). n = 264 and 1032 as above.
namespace {

// Runnable sm80 'tn' instances of operand type t (bf16: mma.sync; f32: tf32 mma.sync and SIMT), one per
// family: the one that takes the most of split-K, serial split-K and cluster split-K, then the deepest
// k-tile (the decode instance 16x64x128 over 16x128x64).
std::vector<const GemmKernelEntry*> sm80_pdl_instances(const DeviceInfo& dev, DType t) {
  auto score = [](const GemmConfig& c) {
    return static_cast<int>(supports_split_k(c)) + static_cast<int>(supports_serial_split_k(c)) + static_cast<int>(supports_cluster_split_k(c));
  };
  std::vector<const GemmKernelEntry*> picks;
  for (const auto& e : gemm_table().entries()) {
    if (is_wgmma(e.config.math) || is_route(e) || operand_type(e.config.math) != t || e.config.a_layout != Layout::row ||
        e.config.b_layout != Layout::col || !runs_on_device(e, dev).ok())
      continue;
    auto p = std::find_if(picks.begin(), picks.end(), [&](const GemmKernelEntry* x) { return x->family == e.family; });
    if (p == picks.end()) picks.push_back(&e);
    else if (score(e.config) > score((*p)->config) || (score(e.config) == score((*p)->config) && e.config.tile.k > (*p)->config.tile.k))
      *p = &e;
  }
  return picks;
}

// Each instance's launch kinds (cluster split-K only on sm90 devices).
std::vector<std::vector<PdlStep>> sm80_pdl_instance_launches(const std::vector<const GemmKernelEntry*>& picks, const DeviceInfo& dev) {
  const GemmLaunchOptions kinds[] = {GemmLaunchOptions{}, split_k_launch(3, SplitKMode::parallel), split_k_launch(3, SplitKMode::serial),
                                     cluster_split_launch(2, 2), cluster_split_launch(4, 2)};
  std::vector<std::vector<PdlStep>> out;
  for (const GemmKernelEntry* e : picks) {
    std::vector<PdlStep> v;
    for (const GemmLaunchOptions& lo : kinds) {
      if (lo.split_k > 1 && !supports_split_k(e->config)) continue;
      if (lo.split_k > 1 && lo.split_mode == SplitKMode::serial && !supports_serial_split_k(e->config)) continue;
      if (lo.split_mode == SplitKMode::cluster && (!supports_cluster_split_k(e->config) || dev.cc < 90)) continue;
      if (check_launch_options(*e, lo).ok()) v.push_back({e, lo});
    }
    if (!v.empty()) out.push_back(v);
  }
  return out;
}

// The interleaved chain of the bf16 sm80 launches and the sm90 ones (sm90 devices), or of the sm80 ones alone.
std::vector<PdlStep> sm80_sm90_chain(const DeviceInfo& dev) {
  auto per_instance = sm80_pdl_instance_launches(sm80_pdl_instances(dev, DType::bf16), dev);
  const auto sm90 = sm90_tn_instances(dev);
  if (!sm90.empty())
    for (auto& v : pdl_instance_launches(sm90)) per_instance.push_back(std::move(v));
  return per_instance.empty() ? std::vector<PdlStep>{} : pdl_chains(per_instance).back();
}

// "sm_80 image" / "sm_90 image, ptx 90": what pdl_image (gemm_kernel.cuh) sees for e on this device.
std::string sm80_image_of(const GemmKernelEntry& e) {
  cudaFuncAttributes fa{};
  if (e.attributes == nullptr || e.attributes(&fa) != cudaSuccess) return "image unknown";
  return "sm_" + std::to_string(fa.binaryVersion) + " image, ptx " + std::to_string(fa.ptxVersion);
}

}  // namespace

TEST_CASE("sm80 programmatic dependent launch: chained launches read the previous one's output") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto bf16 = sm80_pdl_instance_launches(sm80_pdl_instances(dev, DType::bf16), dev);
  const auto f32 = sm80_pdl_instance_launches(sm80_pdl_instances(dev, DType::f32), dev);
  if (bf16.empty() && f32.empty()) return;
  const std::vector<PdlStep> mixed = sm80_sm90_chain(dev);
  std::uint64_t seed = 10300;
  int steps = 0;
  for (int n : {264, 1032}) {
    auto run = [&](const std::vector<PdlStep>& steps_of, DType t) {
      PdlChain c = make_pdl_chain(n, steps_of, seed++, t);
      check_pdl_chain(c);
      steps += static_cast<int>(steps_of.size());
    };
    if (!bf16.empty())
      for (const auto& steps_of : pdl_chains(bf16)) run(steps_of, DType::bf16);
    if (!f32.empty())
      for (const auto& steps_of : pdl_chains(f32)) run(steps_of, DType::f32);
    if (!mixed.empty()) run(mixed, DType::bf16);
  }
  const GemmKernelEntry* first = !bf16.empty() ? bf16.front().front().e : f32.front().front().e;
  MESSAGE(steps << " chained steps over " << bf16.size() << " bf16 + " << f32.size() << " f32 sm80 instances, an sm80/sm90 chain of "
                << mixed.size() << " (sm" << dev.cc << ", " << std::string(first->name) << ": " << sm80_image_of(*first) << "; KTUNE_SM80_PDL="
                << std::string(std::getenv("KTUNE_SM80_PDL") ? std::getenv("KTUNE_SM80_PDL") : "unset") << ")");
}

// The small case for compute-sanitizer racecheck / synccheck: the sm80/sm90 interleaved chain at n = 264, back to back.
TEST_CASE("sm80 programmatic dependent launch: sanitizer target") {
  DeviceInfo dev;
  backend::device_info(dev);
  const std::vector<PdlStep> mixed = sm80_sm90_chain(dev);
  if (mixed.empty()) return;
  PdlChain c = make_pdl_chain(264, mixed, 10400);
  check_pdl_back_to_back_once(c);
}

// ---- The per-launch choice (GemmLaunchOptions::pdl; the tactic suffixes @pdl / @nopdl): the sm80/sm90
// interleaved chain with the steps' choices cycling through on, off and rule, three times shifted (so
// every step runs with each choice, and programmatic launches follow plain ones and the reverse). The
// same checks: step by step against float64, back to back and graph replay bit-identical.
TEST_CASE("programmatic dependent launch: per-launch on / off / rule in one chain (sm80 and sm90 steps)") {
  DeviceInfo dev;
  backend::device_info(dev);
  const std::vector<PdlStep> mixed = sm80_sm90_chain(dev);
  if (mixed.empty()) return;
  const PdlChoice cycle[] = {PdlChoice::on, PdlChoice::off, PdlChoice::rule};
  std::uint64_t seed = 10500;
  int steps = 0;
  for (int n : {264, 1032})
    for (std::size_t shift = 0; shift < 3; ++shift) {
      std::vector<PdlStep> v = mixed;
      for (std::size_t s = 0; s < v.size(); ++s) v[s].lo.pdl = cycle[(s + shift) % 3];
      PdlChain c = make_pdl_chain(n, v, seed++);
      check_pdl_chain(c);
      steps += static_cast<int>(v.size());
    }
  MESSAGE(steps << " chained steps with per-launch PDL choices (sm" << dev.cc << ")");
}
