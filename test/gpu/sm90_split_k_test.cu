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

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/test_util.cuh"
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

GemmLaunchOptions sm90_split(int s, SplitKMode m, int max_ctas = 0) {
  GemmLaunchOptions o;
  o.split_k = s;
  o.split_mode = m;
  o.max_ctas = max_ctas;
  return o;
}

const char* sm90_mode_name(SplitKMode m) { return m == SplitKMode::serial ? "serial" : "parallel"; }


struct Sm90SplitShape {
  const char* what;
  int m, n, k;
  int pad_d = 0;
  int max_ctas = 0;
};

}  // namespace

TEST_CASE("sm90 split-K: every instance, split counts and modes, edge shapes, against float64") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) {
    MESSAGE("no sm90 instance runs on this device");
    return;
  }
  const std::vector<Sm90SplitShape> shapes = {
      {"M = 1, odd N", 1, 197, 1000},
      {"K < split·BK: 2 k-tiles, empty slices; 1 CTA walks every unit", 130, 136, 128, 0, 1},
      {"prime M, N = 4 mod 8, K not divisible by the split, padded ldd", 131, 260, 1000, 3},
      {"several tiles per CTA, 3 CTAs", 300, 520, 712, 0, 3},
  };
  std::uint64_t seed = 9600;
  int runs = 0;
  for (const GemmKernelEntry* e : instances)
    for (const Sm90SplitShape& sh : shapes) {
      Rng rng(seed++);
      const RandomOperands op = random_operands(*e, sh.m, sh.n, sh.k, rng);
      for (DType out : {DType::f32, DType::bf16})
        for (int s : {2, 3, 7, 16})
          for (SplitKMode mode : {SplitKMode::serial, SplitKMode::parallel}) {
            if (mode == SplitKMode::serial && !supports_serial_split_k(e->config)) continue;  // parallel only
            OutputCase oc;
            oc.d_type = out;
            oc.ldd_pad = sh.pad_d;
            const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr,
                                            sm90_split(s, mode, sh.max_ctas));
            ++runs;
            CHECK_MESSAGE(r.status.ok(), e->name << " split " << s << " " << sm90_mode_name(mode) << " " << sh.what << ": "
                                                 << r.status.to_string());
            if (r.status.ok())
              CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, out)),
                            e->name << " split " << s << " " << sm90_mode_name(mode) << " " << sh.what << " out "
                                    << to_string(out) << ": " << r.check.summary());
          }
    }
  MESSAGE(runs << " sm90 split-K runs over " << instances.size() << " instances");
}

TEST_CASE("sm90 split-K: the epilogue is applied once, to the whole sum") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) return;
  const auto cases = whole_sum_epilogue_cases();
  std::uint64_t seed = 9700;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const RandomOperands op = random_operands(*e, 200, 264, 1104, rng);  // K: 16-byte rows for the TMA
    for (auto& [what, oc] : cases)
      for (int s : {2, 5})
        for (SplitKMode mode : {SplitKMode::serial, SplitKMode::parallel}) {
          if (mode == SplitKMode::serial && !supports_serial_split_k(e->config)) continue;
          const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, sm90_split(s, mode, 2));
          CHECK_MESSAGE(r.status.ok(), e->name << " " << what << ": " << r.status.to_string());
          if (r.status.ok())
            CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, oc.d_type)),
                          e->name << " split " << s << " " << sm90_mode_name(mode) << " " << what << ": " << r.check.summary());
        }
  }
}

namespace {

// One direct run (caller workspace, fixed C and bias) of D = epilogue(A·B); D's bytes.
struct Sm90Direct {
  GemmDesc d;
  GemmOperands ops;
  Matrix D, C, bias;
  DeviceBuffer ws;
};

std::vector<unsigned char> sm90_run_image(Sm90Direct& x, const GemmKernelEntry& e, const GemmLaunchOptions& lo, unsigned char junk) {
  GemmOptions opt;
  opt.instance = e.name.data();
  opt.launch = lo;
  const std::size_t need = gemm_workspace_size(x.d, opt);
  if (need > x.ws.bytes) x.ws = DeviceBuffer(need);
  if (need > 0) KT_CUDA(cudaMemset(x.ws.ptr, junk, need));
  x.ops.workspace = need > 0 ? x.ws.ptr : nullptr;
  x.ops.workspace_bytes = need;
  x.D.upload();  // poison, guards included
  const Status st = gemm(x.d, x.ops, nullptr, opt);
  REQUIRE_MESSAGE(st.ok(), e.name << ": " << st.to_string());
  backend::sync(nullptr);
  return x.D.download();
}

}  // namespace

TEST_CASE("sm90 split-K: serial and parallel bit-identical, run to run, with every epilogue") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = sm90_tn_instances(dev);
  if (instances.empty()) return;
  std::uint64_t seed = 9800;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const int M = 96, N = 200, K = 4096;
    const RandomOperands op = random_operands(*e, M, N, K, rng);
    for (int variant = 0; variant < 3; ++variant) {
      Sm90Direct x;
      x.d.m = M;
      x.d.n = N;
      x.d.k = K;
      x.d.ab_type = e->config.operand();
      x.d.a_layout = Layout::row;
      x.d.b_layout = Layout::col;
      x.d.compute = compute_for(e->config.math);
      x.d.d_type = variant == 2 ? DType::f32 : DType::bf16;
      x.D = poisoned(storage(x.d.d_type, M, N, true));
      x.D.upload();
      x.ops.a = op.A.data();
      x.ops.b = op.B.data();
      x.ops.d = x.D.data();
      if (variant == 0) x.d.epilogue = bias_activation(Activation::relu);
      if (variant == 2) {  // f32 D: alpha that rounds, bias, ReLU
        x.d.epilogue = bias_activation(Activation::relu);
        x.d.epilogue.alpha = 0.9f;
      }
      if (variant == 1) {
        x.d.epilogue = linear_combination(1.3f, 0.7f);  // products that round: FMA contraction would show
        x.d.epilogue.bias = true;
        x.d.epilogue.activation = Activation::silu;
        x.C = random_matrix(storage(x.d.d_type, M, N, true), rng);
        x.ops.c = x.C.data();
        x.d.ldc = x.C.st.ld;
      }
      if (x.d.epilogue.bias) {
        x.bias = random_matrix(storage(x.d.d_type, 1, N, true), rng);
        x.ops.bias = x.bias.data();
      }
      const std::vector<double> ref = reference_epilogue(op.acc, M, N, x.d.epilogue, x.ops.c ? &x.C.vals : nullptr,
                                                         x.ops.bias ? &x.bias.vals : nullptr, nullptr);
      for (int s : {3, 9, 40, 64}) {  // 40, 64: several slice groups; 64 slices of 64 k-tiles
        const auto parallel = sm90_run_image(x, *e, sm90_split(s, SplitKMode::parallel), 0x33);
        const auto parallel2 = sm90_run_image(x, *e, sm90_split(s, SplitKMode::parallel, 7), 0xFF);
        CHECK_MESSAGE(parallel == parallel2, e->name << " split " << s << " variant " << variant << ": parallel differs run to run");
        if (supports_serial_split_k(e->config)) {
          const auto serial = sm90_run_image(x, *e, sm90_split(s, SplitKMode::serial), 0xFF);
          const auto serial2 = sm90_run_image(x, *e, sm90_split(s, SplitKMode::serial, 5), 0x5A);
          CHECK_MESSAGE(serial == serial2, e->name << " split " << s << " variant " << variant << ": serial differs run to run");
          CHECK_MESSAGE(serial == parallel, e->name << " split " << s << " variant " << variant << ": serial and parallel differ");
        }
        const Check c = check_image(x.D.st, parallel, ref);
        CHECK_MESSAGE(c.ok(tolerance(e->config.math, x.d.d_type)), e->name << " split " << s << " variant " << variant << ": " << c.summary());
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
  GemmDesc d;
  d.m = 64;
  d.n = 136;
  d.k = 1024;
  d.ab_type = e->config.operand();
  d.a_layout = Layout::row;
  d.b_layout = Layout::col;
  d.compute = compute_for(e->config.math);
  d.d_type = DType::bf16;
  Matrix D = poisoned(storage(DType::bf16, 64, 136, true));
  D.upload();
  GemmOperands ops;
  ops.a = op.A.data();
  ops.b = op.B.data();
  ops.d = D.data();
  for (SplitKMode mode : {SplitKMode::serial, SplitKMode::parallel}) {
    GemmLaunchOptions lo = sm90_split(4, mode);
    const std::size_t need = e->workspace_size(resolved(d), lo);
    REQUIRE(need > 0);
    DeviceBuffer ws(need);
    KT_CUDA(cudaMemset(ws.ptr, 0x77, need));
    ops.workspace = ws.ptr;
    ops.workspace_bytes = need;
    lo.cluster = 2;
    CHECK(e->launch(resolved(d), ops, lo, nullptr).code() == StatusCode::unsupported);
    lo.cluster = 0;
    ops.workspace_bytes = need - 4;
    const Status st = e->launch(resolved(d), ops, lo, nullptr);
    CHECK(st.code() == StatusCode::invalid_argument);
    CHECK(st.message().find("workspace too small") != std::string::npos);
    backend::sync(nullptr);
    const auto img = D.download();
    CHECK(std::all_of(img.begin(), img.end(), [](unsigned char b) { return b == kPoison; }));
    std::vector<unsigned char> w(need);
    backend::to_host(w.data(), ws.ptr, need);
    CHECK(std::all_of(w.begin(), w.end(), [](unsigned char b) { return b == 0x77; }));
  }
  // Serial mode on a 128-accumulator instance (parallel only): refused.
  for (const GemmKernelEntry* x : instances)
    if (!supports_serial_split_k(x->config) && x->config.operand() == e->config.operand()) {
      GemmLaunchOptions lo = sm90_split(4, SplitKMode::serial);
      const std::size_t need = x->workspace_size(resolved(d), lo);
      DeviceBuffer ws(need);
      ops.workspace = ws.ptr;
      ops.workspace_bytes = need;
      CHECK(x->launch(resolved(d), ops, lo, nullptr).code() == StatusCode::unsupported);
      backend::sync(nullptr);
      const auto img = D.download();
      CHECK(std::all_of(img.begin(), img.end(), [](unsigned char b) { return b == kPoison; }));
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
      GemmDesc d;
      d.m = m;
      d.n = n;
      d.k = k;
      d.ab_type = e->config.operand();
      d.a_layout = Layout::row;
      d.b_layout = Layout::col;
      for (const GemmLaunchOptions& lo : split_k_variants(*e, resolved(d), dev)) {
        OutputCase oc;
        oc.d_type = DType::f16;
        oc.epilogue = bias_activation(Activation::relu);
        const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, lo);
        ++runs;
        CHECK_MESSAGE(r.status.ok(), r.status.to_string());
        if (r.status.ok())
          CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::f16)),
                        e->name << " " << m << "x" << n << "x" << k << " split " << lo.split_k << " "
                                << sm90_mode_name(lo.split_mode) << ": " << r.check.summary());
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
      const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, sm90_split(s, mode, 3));
      CHECK_MESSAGE(r.status.ok(), r.status.to_string());
      if (r.status.ok()) CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::bf16)), e->name << ": " << r.check.summary());
    }
  }
}

// ---- Cluster split-K on sm90 (SplitKMode::cluster, one cluster of split_k CTAs per tile: warp_specialized_gemm's
// ClusterK path, rank r the k-slice r, the ranks' accumulators added through distributed shared memory)

namespace {

GemmLaunchOptions sm90_cluster(int ck) {
  GemmLaunchOptions o;
  o.split_k = ck;
  o.split_mode = SplitKMode::cluster;
  o.split_cluster = ck;
  return o;
}

}  // namespace

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
  const std::vector<Sm90SplitShape> shapes = {
      {"M = 1, odd N", 1, 197, 1000},
      {"K < ranks·BK: 2 k-tiles, empty slices", 130, 136, 128},
      {"prime M, N = 4 mod 8, K not divisible by the ranks, padded ldd", 131, 260, 1000, 3},
      {"many tiles (more clusters than resident at once)", 1100, 1040, 520},
  };
  const auto cases = whole_sum_epilogue_cases();
  std::uint64_t seed = 9900;
  int runs = 0;
  for (const GemmKernelEntry* e : instances) {
    const int limit = cluster_split_k_limit(e->config);
    for (int ck = 2; ck <= limit; ++ck) {
      for (const Sm90SplitShape& sh : shapes) {
        Rng rng(seed++);
        const RandomOperands op = random_operands(*e, sh.m, sh.n, sh.k, rng);
        for (DType out : {DType::f32, DType::bf16}) {
          OutputCase oc;
          oc.d_type = out;
          oc.ldd_pad = sh.pad_d;
          const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, sm90_cluster(ck));
          ++runs;
          CHECK_MESSAGE(r.status.ok(), e->name << " @split" << ck << "c" << ck << " " << sh.what << ": " << r.status.to_string());
          if (r.status.ok())
            CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, out)),
                          e->name << " @split" << ck << "c" << ck << " " << sh.what << " out " << to_string(out) << ": " << r.check.summary());
        }
      }
      Rng rng(seed++);
      const RandomOperands op = random_operands(*e, 200, 264, 1104, rng);
      for (auto& [what, oc] : cases) {
        const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, sm90_cluster(ck));
        CHECK_MESSAGE(r.status.ok(), e->name << " " << what << ": " << r.status.to_string());
        if (r.status.ok())
          CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, oc.d_type)), e->name << " @split" << ck << "c" << ck << " " << what << ": " << r.check.summary());
      }
      // Bit-identical run to run, bias + SiLU into bf16 (no workspace: nothing to fill with garbage).
      Sm90Direct x;
      x.d.m = 200;
      x.d.n = 264;
      x.d.k = 1104;
      x.d.ab_type = e->config.operand();
      x.d.a_layout = Layout::row;
      x.d.b_layout = Layout::col;
      x.d.compute = compute_for(e->config.math);
      x.d.d_type = DType::bf16;
      x.d.epilogue = bias_activation(Activation::silu);
      x.D = poisoned(storage(x.d.d_type, 200, 264, true));
      x.bias = random_matrix(storage(x.d.d_type, 1, 264, true), rng);
      x.ops.a = op.A.data();
      x.ops.b = op.B.data();
      x.ops.d = x.D.data();
      x.ops.bias = x.bias.data();
      const auto first = sm90_run_image(x, *e, sm90_cluster(ck), 0);
      CHECK_MESSAGE(sm90_run_image(x, *e, sm90_cluster(ck), 0) == first, e->name << " @split" << ck << "c" << ck << " differs run to run");
      CHECK_MESSAGE(sm90_run_image(x, *e, sm90_cluster(ck), 0) == first, e->name << " @split" << ck << "c" << ck << " differs run to run");
      const Check c = check_image(x.D.st, first, reference_epilogue(op.acc, 200, 264, x.d.epilogue, nullptr, &x.bias.vals, nullptr));
      CHECK_MESSAGE(c.ok(tolerance(e->config.math, DType::bf16)), e->name << " @split" << ck << "c" << ck << " bias+SiLU: " << c.summary());
    }
    // Refused (unsupported, nothing launched or written): a cluster above the ring's limit, several
    // clusters per tile, cluster = 2 with it.
    GemmLaunchOptions over = sm90_cluster(limit + 1), several = sm90_cluster(2), multicast = sm90_cluster(2);
    several.split_k = 4;
    multicast.cluster = 2;
    for (const GemmLaunchOptions& lo : {over, several, multicast}) {
      if (lo.split_cluster > max_split_cluster) continue;
      Rng rng(seed++);
      const RandomOperands op = random_operands(*e, 64, 136, 1024, rng);
      GemmDesc d;
      d.m = 64;
      d.n = 136;
      d.k = 1024;
      d.ab_type = e->config.operand();
      d.a_layout = Layout::row;
      d.b_layout = Layout::col;
      d.compute = compute_for(e->config.math);
      d.d_type = DType::bf16;
      Matrix D = poisoned(storage(DType::bf16, 64, 136, true));
      D.upload();
      GemmOperands ops;
      ops.a = op.A.data();
      ops.b = op.B.data();
      ops.d = D.data();
      const Status st = e->launch(resolved(d), ops, lo, nullptr);
      CHECK_MESSAGE(st.code() == StatusCode::unsupported, e->name << "@" << launch_suffix(lo) << ": " << st.to_string());
      if (lo.cluster != 2) CHECK(check_launch_options(*e, lo).code() == StatusCode::unsupported);
      backend::sync(nullptr);
      const auto img = D.download();
      CHECK(std::all_of(img.begin(), img.end(), [](unsigned char b) { return b == kPoison; }));
    }
  }
  // Instances without it refuse it.
  for (const GemmKernelEntry* e : sm90_tn_instances(dev))
    if (!supports_cluster_split_k(e->config)) CHECK(check_launch_options(*e, sm90_cluster(2)).code() == StatusCode::unsupported);
  MESSAGE(runs << " sm90 cluster split-K runs over " << instances.size() << " instances");
}
