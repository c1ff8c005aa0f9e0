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
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gpu/test_util.cuh"
#include "ktune/gemm/split_k.hpp"

using namespace kt;

namespace {

struct SplitShape {
  const char* what;
  int m, n, k;
  int pad_d = 0;
};

const std::vector<SplitShape>& split_shapes() {
  static const std::vector<SplitShape> s = {
      {"M = 1", 1, 136, 520},
      {"prime M and N, K not a multiple of BK", 37, 131, 440},
      {"primes (only 1- and 2-element vector instances)", 37, 131, 443},
      {"K < split·BK", 48, 72, 40},
      {"odd ldd", 61, 96, 296, 3},
      {"K not divisible by the split, long", 20, 264, 2056},
  };
  return s;
}

constexpr int kSplits[] = {1, 2, 3, 5, 8, 13};  // 5, 8, 13: several slice groups (13: 4+4+4+1; empty slices at small K)
constexpr SplitKMode kModes[] = {SplitKMode::serial, SplitKMode::parallel};

const char* mode_name(SplitKMode m) {
  return m == SplitKMode::serial ? "serial" : m == SplitKMode::parallel ? "parallel" : "cluster";
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

GemmLaunchOptions split(int s, SplitKMode m) {
  GemmLaunchOptions o;
  o.split_k = s;
  o.split_mode = m;
  return o;
}

using Operands = RandomOperands;

}  // namespace

TEST_CASE("split-K: every split count and mode on edge shapes matches the float64 reference") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  std::uint64_t seed = 600;
  int runs = 0;
  for (const GemmKernelEntry* e : instances)
    for (const SplitShape& sh : split_shapes()) {
      Rng rng(seed++);
      // Operand alignment: K and the leading dimensions must suit the instance's vectors.
      if (sh.k % e->config.align != 0 || (e->config.b_layout == Layout::row && sh.n % e->config.align != 0)) continue;
      const Operands op = random_operands(*e, sh.m, sh.n, sh.k, rng);
      for (DType out : {DType::f32, DType::bf16})
        for (int s : kSplits)
          for (SplitKMode mode : kModes) {
            if (s == 1 && mode == SplitKMode::parallel) continue;
            OutputCase oc;
            oc.d_type = out;
            oc.ldd_pad = sh.pad_d;
            const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, split(s, mode));
            ++runs;
            const double tol = tolerance(e->config.math, out);
            CHECK_MESSAGE(r.status.ok(), e->name << " split " << s << " " << mode_name(mode) << " " << sh.what << ": "
                                                 << r.status.to_string());
            if (r.status.ok())
              CHECK_MESSAGE(r.check.ok(tol), e->name << " split " << s << " " << mode_name(mode) << " " << sh.what
                                                     << " out " << to_string(out) << ": " << r.check.summary());
          }
    }
  MESSAGE(runs << " split-K runs over " << instances.size() << " instances");
}

TEST_CASE("split-K: the epilogue is applied once, to the whole sum") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  const auto cases = whole_sum_epilogue_cases();  // D types: each run below sets its own
  std::uint64_t seed = 700;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const Operands op = random_operands(*e, 33, 200, 1000, rng);
    for (auto& [what, oc0] : cases)
      for (DType out : {DType::f32, DType::bf16})
        for (int s : {2, 5})
          for (SplitKMode mode : kModes) {
            OutputCase oc = oc0;
            oc.d_type = out;
            const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, split(s, mode));
            CHECK_MESSAGE(r.status.ok(), e->name << " " << what << ": " << r.status.to_string());
            if (r.status.ok())
              CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, out)),
                            e->name << " split " << s << " " << mode_name(mode) << " " << what << " out "
                                    << to_string(out) << ": " << r.check.summary());
          }
  }
}

namespace {

// D of one run with a caller workspace (bytes of the whole output buffer).
struct Direct {
  GemmDesc d;
  GemmOperands ops;
  Matrix D;
};

Direct direct_problem(const GemmKernelEntry& e, const Operands& op, DType out) {
  Direct x;
  x.d.m = op.A.st.rows;
  x.d.n = op.B.st.cols;
  x.d.k = op.A.st.cols;
  x.d.ab_type = e.config.operand();
  x.d.a_layout = e.config.a_layout;
  x.d.b_layout = e.config.b_layout;
  x.d.compute = compute_for(e.config.math);
  x.d.d_type = out;
  x.D = poisoned(storage(out, x.d.m, x.d.n, true));
  x.D.upload();
  x.ops.a = op.A.data();
  x.ops.b = op.B.data();
  x.ops.d = x.D.data();
  return x;
}

}  // namespace

TEST_CASE("split-K: deterministic (bit-identical across runs and modes), with a caller workspace full of garbage") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  std::uint64_t seed = 800;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const Operands op = random_operands(*e, 64, 264, 8192, rng);
    std::map<int, std::vector<unsigned char>> by_split;  // serial and parallel add in the same order
    for (SplitKMode mode : kModes)
      for (int s : {3, 8, 37, 64, 256}) {  // 37..256: several slice groups; 256 > k-tiles: empty slices
        Direct x = direct_problem(*e, op, DType::f32);
        GemmOptions opt;
        opt.instance = e->name.data();
        opt.launch = split(s, mode);
        const std::size_t need = gemm_workspace_size(x.d, opt);
        REQUIRE(need > 0);
        DeviceBuffer ws(need);
        std::vector<std::vector<unsigned char>> images;
        for (int run = 0; run < 3; ++run) {
          KT_CUDA(cudaMemset(ws.ptr, run == 0 ? 0xFF : 0x5A, need));  // garbage counters and partials
          KT_CUDA(cudaMemset(x.D.data(), 0xFF, static_cast<std::size_t>(x.d.m * x.d.n * 4)));
          x.ops.workspace = ws.ptr;
          x.ops.workspace_bytes = need;
          const Status st = gemm(x.d, x.ops, nullptr, opt);
          REQUIRE_MESSAGE(st.ok(), st.to_string());
          backend::sync(nullptr);
          images.push_back(x.D.download());
        }
        CHECK_MESSAGE(images[0] == images[1], e->name << " split " << s << " " << mode_name(mode) << " differs run to run");
        CHECK_MESSAGE(images[1] == images[2], e->name << " split " << s << " " << mode_name(mode) << " differs run to run");
        const Check c = check_image(x.D.st, images[0], op.acc);
        CHECK_MESSAGE(c.ok(tolerance(e->config.math, DType::f32)), e->name << ": " << c.summary());
        if (mode == SplitKMode::serial) by_split[s] = images[0];
        else CHECK_MESSAGE(by_split[s] == images[0], e->name << " split " << s << ": serial and parallel differ");
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
  const Operands op = random_operands(*e, 40, 136, 1024, rng);
  for (SplitKMode mode : kModes) {
    Direct x = direct_problem(*e, op, DType::bf16);
    GemmOptions opt;
    opt.instance = e->name.data();
    opt.launch = split(4, mode);
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
    // D untouched (still poison everywhere), the workspace untouched.
    const auto img = x.D.download();
    CHECK(std::all_of(img.begin(), img.end(), [](unsigned char b) { return b == kPoison; }));
    std::vector<unsigned char> w(need);
    backend::to_host(w.data(), ws.ptr, need);
    CHECK(std::all_of(w.begin(), w.end(), [](unsigned char b) { return b == 0x77; }));
    // The launcher itself refuses too (the tuner calls it directly).
    CHECK(e->launch(resolved(x.d), x.ops, opt.launch, nullptr).code() == StatusCode::invalid_argument);
    // Instances without split-K support refuse split_k > 1.
    for (const auto& other : gemm_table().entries())
      if (other.workspace_size == nullptr && !is_route(other)) {
        GemmOptions o2;
        o2.instance = other.name.data();
        o2.launch = split(2, mode);
        CHECK(check_launch_options(other, o2.launch).code() == StatusCode::unsupported);
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
    const Operands op = random_operands(*e, 16, 264, 3000, rng);
    for (cudaStream_t s : {s1, s2, static_cast<cudaStream_t>(nullptr)})
      for (SplitKMode mode : kModes) {
        OutputCase oc;
        oc.d_type = DType::bf16;
        const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, s, split(7, mode));
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
      const Operands op = random_operands(*e, m, 320, 2048, rng);
      GemmDesc d;
      d.m = m;
      d.n = 320;
      d.k = 2048;
      d.ab_type = e->config.operand();
      d.a_layout = e->config.a_layout;
      d.b_layout = e->config.b_layout;
      for (const GemmLaunchOptions& lo : split_k_variants(*e, d, dev)) {
        OutputCase oc;
        oc.d_type = DType::bf16;
        oc.epilogue = bias_activation(Activation::silu);
        const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, lo);
        ++runs;
        CHECK_MESSAGE(r.status.ok(), r.status.to_string());
        if (r.status.ok())
          CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, DType::bf16)),
                        e->name << " M=" << m << " split " << lo.split_k << " " << mode_name(lo.split_mode) << ": "
                                << r.check.summary());
      }
    }
  MESSAGE(runs << " small-M runs");
}

TEST_CASE("split-K inside a CUDA graph: first use on a capturing stream, replayed several times") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = split_instances(dev);
  REQUIRE_FALSE(instances.empty());
  const GemmKernelEntry* e = instances.front();
  Rng rng(1200);
  const Operands op = random_operands(*e, 24, 200, 2048, rng);
  for (SplitKMode mode : kModes) {
    cudaStream_t s = nullptr;  // a fresh stream: ktune has no counters for it yet, and cannot allocate while capturing
    KT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Direct x = direct_problem(*e, op, DType::f32);
    GemmOptions opt;
    opt.instance = e->name.data();
    opt.launch = split(6, mode);
    const std::size_t need = gemm_workspace_size(x.d, opt);
    DeviceBuffer ws(need);
    KT_CUDA(cudaMemset(ws.ptr, 0xFF, need));
    x.ops.workspace = ws.ptr;
    x.ops.workspace_bytes = need;
    cudaGraph_t g = nullptr;
    KT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const Status st = gemm(x.d, x.ops, s, opt);
    KT_CUDA(cudaStreamEndCapture(s, &g));
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    cudaGraphExec_t ge = nullptr;
    KT_CUDA(cudaGraphInstantiate(&ge, g, 0));
    std::vector<unsigned char> first;
    for (int r = 0; r < 3; ++r) {
      KT_CUDA(cudaMemsetAsync(x.D.data(), 0xFF, static_cast<std::size_t>(x.d.m * x.d.n * 4), s));
      KT_CUDA(cudaGraphLaunch(ge, s));
      backend::sync(s);
      const auto img = x.D.download();
      const Check c = check_image(x.D.st, img, op.acc);
      CHECK_MESSAGE(c.ok(tolerance(e->config.math, DType::f32)), mode_name(mode) << " replay " << r << ": " << c.summary());
      if (r == 0) first = img;
      else CHECK(img == first);
    }
    // The same stream outside capture (ktune's own counters now), then the graph again.
    const Status st2 = gemm(x.d, x.ops, s, opt);
    CHECK(st2.ok());
    KT_CUDA(cudaGraphLaunch(ge, s));
    backend::sync(s);
    CHECK(x.D.download() == first);
    KT_CUDA(cudaGraphExecDestroy(ge));
    KT_CUDA(cudaGraphDestroy(g));
    KT_CUDA(cudaStreamDestroy(s));
  }
}

// ---- Cluster mode (SplitKMode::cluster: slices summed in thread-block clusters through distributed
// shared memory, then across clusters by the last to arrive; sm80 tiles of at most 32 rows, sm90 devices)

namespace {

GemmLaunchOptions cluster_split(int s, int cl) {
  GemmLaunchOptions o;
  o.split_k = s;
  o.split_mode = SplitKMode::cluster;
  o.split_cluster = cl;
  return o;
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
constexpr std::pair<int, int> kClusterSplits[] = {{2, 2}, {3, 3}, {4, 4}, {6, 6}, {8, 8}, {16, 16}, {16, 4}, {24, 8}, {64, 8}, {48, 16}};

}  // namespace

TEST_CASE("cluster split-K: every cluster size on edge shapes matches the float64 reference") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = cluster_instances(dev);
  REQUIRE_FALSE(instances.empty());
  if (dev.cc < 90) {  // no clusters: refused, nothing launched
    Rng rng(1300);
    const Operands op = random_operands(*instances.front(), 16, 64, 256, rng);
    OutputCase oc;
    const RunResult r = run_checked(op.A, op.B, op.acc, instances.front()->config.math, oc, instances.front()->name.data(), rng,
                                    nullptr, cluster_split(4, 4));
    CHECK(r.status.code() == StatusCode::unsupported);
    return;
  }
  std::uint64_t seed = 1300;
  int runs = 0;
  for (const GemmKernelEntry* e : instances)
    for (const SplitShape& sh : split_shapes()) {
      Rng rng(seed++);
      if (sh.k % e->config.align != 0) continue;
      const Operands op = random_operands(*e, sh.m, sh.n, sh.k, rng);
      for (DType out : {DType::f32, DType::bf16})
        for (auto [s, cl] : kClusterSplits) {
          OutputCase oc;
          oc.d_type = out;
          oc.ldd_pad = sh.pad_d;
          const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, cluster_split(s, cl));
          ++runs;
          CHECK_MESSAGE(r.status.ok(), e->name << " split " << s << "c" << cl << " " << sh.what << ": " << r.status.to_string());
          if (r.status.ok())
            CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, out)),
                          e->name << " split " << s << "c" << cl << " " << sh.what << " out " << to_string(out) << ": " << r.check.summary());
        }
    }
  MESSAGE(runs << " cluster split-K runs over " << instances.size() << " instances");
}

TEST_CASE("cluster split-K: the epilogue is applied once, to the whole sum (one and several clusters per tile)") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = cluster_instances(dev);
  REQUIRE_FALSE(instances.empty());
  if (dev.cc < 90) return;  // refusal: previous case
  const auto cases = whole_sum_epilogue_cases();
  std::uint64_t seed = 1400;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const Operands op = random_operands(*e, 33, 200, 3000, rng);
    for (auto& [what, oc0] : cases)
      for (DType out : {DType::f32, DType::bf16})
        for (auto [s, cl] : {std::pair{8, 8}, std::pair{16, 4}}) {
          OutputCase oc = oc0;
          oc.d_type = out;
          const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, cluster_split(s, cl));
          CHECK_MESSAGE(r.status.ok(), e->name << " " << what << ": " << r.status.to_string());
          if (r.status.ok())
            CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, out)),
                          e->name << " split " << s << "c" << cl << " " << what << " out " << to_string(out) << ": " << r.check.summary());
        }
  }
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
    const Operands op = random_operands(*e, 64, 136, 16384, rng);
    for (auto [s, cl] : {std::pair{8, 8}, std::pair{64, 8}, std::pair{256, 16}, std::pair{128, 2}}) {
      Direct x = direct_problem(*e, op, DType::f32);
      GemmOptions opt;
      opt.instance = e->name.data();
      opt.launch = cluster_split(s, cl);
      const std::size_t need = gemm_workspace_size(x.d, opt);
      CHECK((s == cl) == (need == 0));  // one cluster per tile: no workspace at all
      DeviceBuffer ws(std::max<std::size_t>(need, 256));
      std::vector<std::vector<unsigned char>> images;
      for (int run = 0; run < 3; ++run) {
        KT_CUDA(cudaMemset(ws.ptr, run == 0 ? 0xFF : 0x5A, std::max<std::size_t>(need, 256)));
        KT_CUDA(cudaMemset(x.D.data(), 0xFF, static_cast<std::size_t>(x.d.m * x.d.n * 4)));
        x.ops.workspace = need > 0 ? ws.ptr : nullptr;
        x.ops.workspace_bytes = need;
        const Status st = gemm(x.d, x.ops, nullptr, opt);
        REQUIRE_MESSAGE(st.ok(), st.to_string());
        backend::sync(nullptr);
        images.push_back(x.D.download());
      }
      CHECK_MESSAGE(images[0] == images[1], e->name << " split " << s << "c" << cl << " differs run to run");
      CHECK_MESSAGE(images[1] == images[2], e->name << " split " << s << "c" << cl << " differs run to run");
      const Check c = check_image(x.D.st, images[0], op.acc);
      CHECK_MESSAGE(c.ok(tolerance(e->config.math, DType::f32)), e->name << " split " << s << "c" << cl << ": " << c.summary());
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
  const Operands op = random_operands(*e, 40, 136, 4096, rng);
  auto expect_refused = [&](const GemmKernelEntry& inst, const GemmLaunchOptions& lo, StatusCode code, std::size_t ws_bytes) {
    Direct x = direct_problem(inst, op, DType::bf16);
    DeviceBuffer ws(std::max<std::size_t>(ws_bytes, 256));
    KT_CUDA(cudaMemset(ws.ptr, 0x77, std::max<std::size_t>(ws_bytes, 256)));
    x.ops.workspace = ws.ptr;
    x.ops.workspace_bytes = ws_bytes;
    GemmOptions opt;
    opt.instance = inst.name.data();
    opt.launch = lo;
    const Status st = gemm(x.d, x.ops, nullptr, opt);
    CHECK_MESSAGE(st.code() == code, inst.name << "@" << launch_suffix(lo) << ": " << st.to_string());
    CHECK(inst.launch(resolved(x.d), x.ops, lo, nullptr).code() == code);  // the launcher itself too
    backend::sync(nullptr);
    const auto img = x.D.download();
    CHECK(std::all_of(img.begin(), img.end(), [](unsigned char b) { return b == kPoison; }));
    std::vector<unsigned char> w(std::max<std::size_t>(ws_bytes, 256));
    backend::to_host(w.data(), ws.ptr, w.size());
    CHECK(std::all_of(w.begin(), w.end(), [](unsigned char b) { return b == 0x77; }));
  };
  expect_refused(*e, cluster_split(12, 8), StatusCode::invalid_argument, 1 << 20);  // 8 does not divide 12
  expect_refused(*e, cluster_split(32, 32), StatusCode::invalid_argument, 1 << 20);  // above max_split_cluster
  expect_refused(*e, cluster_split(8, 1), StatusCode::invalid_argument, 1 << 20);
  GemmLaunchOptions stray = split(8, SplitKMode::parallel);
  stray.split_cluster = 4;  // a cluster size without cluster mode
  expect_refused(*e, stray, StatusCode::invalid_argument, 1 << 20);
  if (dev.cc >= 90) {
    GemmDesc d;
    d.m = 40;
    d.n = 136;
    d.k = 4096;
    d.ab_type = e->config.operand();
    d.a_layout = e->config.a_layout;
    d.b_layout = e->config.b_layout;
    d.d_type = DType::bf16;
    const std::size_t need = workspace_bytes_for(*e, resolved(d), cluster_split(32, 8));
    REQUIRE(need > 0);
    expect_refused(*e, cluster_split(32, 8), StatusCode::invalid_argument, need - 4);
  }
  // Instances outside the cluster-capable set refuse it (unsupported).
  for (const auto& other : gemm_table().entries())
    if (other.workspace_size != nullptr && !is_route(other) && !supports_cluster_split_k(other.config) &&
        other.config.a_layout == e->config.a_layout && other.config.b_layout == e->config.b_layout &&
        other.config.operand() == e->config.operand() && runs_on_device(other, dev).ok()) {
      CHECK(check_launch_options(other, cluster_split(8, 4)).code() == StatusCode::unsupported);
      expect_refused(other, cluster_split(8, 4), StatusCode::unsupported, 1 << 20);
      break;
    }
}

TEST_CASE("cluster split-K inside a CUDA graph: first use on a capturing stream, replayed") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto instances = cluster_instances(dev);
  REQUIRE_FALSE(instances.empty());
  if (dev.cc < 90) return;
  const GemmKernelEntry* e = instances.front();
  Rng rng(1700);
  const Operands op = random_operands(*e, 24, 200, 4096, rng);
  for (auto [s, cl] : {std::pair{8, 8}, std::pair{16, 4}}) {
    cudaStream_t st_ = nullptr;  // fresh: no pooled counters yet, none allocated while capturing
    KT_CUDA(cudaStreamCreateWithFlags(&st_, cudaStreamNonBlocking));
    Direct x = direct_problem(*e, op, DType::f32);
    GemmOptions opt;
    opt.instance = e->name.data();
    opt.launch = cluster_split(s, cl);
    const std::size_t need = gemm_workspace_size(x.d, opt);
    DeviceBuffer ws(std::max<std::size_t>(need, 256));
    KT_CUDA(cudaMemset(ws.ptr, 0xFF, std::max<std::size_t>(need, 256)));
    x.ops.workspace = need > 0 ? ws.ptr : nullptr;
    x.ops.workspace_bytes = need;
    cudaGraph_t g = nullptr;
    KT_CUDA(cudaStreamBeginCapture(st_, cudaStreamCaptureModeThreadLocal));
    const Status st = gemm(x.d, x.ops, st_, opt);
    KT_CUDA(cudaStreamEndCapture(st_, &g));
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    cudaGraphExec_t ge = nullptr;
    KT_CUDA(cudaGraphInstantiate(&ge, g, 0));
    std::vector<unsigned char> first;
    for (int r = 0; r < 3; ++r) {
      KT_CUDA(cudaMemsetAsync(x.D.data(), 0xFF, static_cast<std::size_t>(x.d.m * x.d.n * 4), st_));
      KT_CUDA(cudaGraphLaunch(ge, st_));
      backend::sync(st_);
      const auto img = x.D.download();
      const Check c = check_image(x.D.st, img, op.acc);
      CHECK_MESSAGE(c.ok(tolerance(e->config.math, DType::f32)), "split " << s << "c" << cl << " replay " << r << ": " << c.summary());
      if (r == 0) first = img;
      else CHECK(img == first);
    }
    KT_CUDA(cudaGraphExecDestroy(ge));
    KT_CUDA(cudaGraphDestroy(g));
    KT_CUDA(cudaStreamDestroy(st_));
  }
}
