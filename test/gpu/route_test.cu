// GPU tests of the repack route (ktune/gemm/route/): the copy kernel on its own (every misalignment,
// line length and padding), every route entry by name against the float64 CPU reference on unaligned
// shapes (odd M/N/K, primes, 1, K < 8, odd leading dimensions, odd pointers, one operand aligned) in
// all four layouts, f16/bf16, every output type and the epilogues (bias+relu, beta with C aliasing D,
// residual, residual aliasing D), outputs poisoned with guard bands, inputs unchanged; a caller's
// workspace (exact, too small); the direct launch (no workspace: stream-ordered scratch) also inside
// a CUDA graph; and the large unaligned shapes against cuBLAS.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/test_util.cuh"
#include "ktune/gemm/route/plan.hpp"

#if KTUNE_HAVE_CUBLASLT
#include "common/gpu_harness.cuh"
#endif

using namespace kt;

namespace kt {
// test_kernels.cu: route::launch_repack (the copy kernel lives in ktune/gemm/route/repack.cuh, device code).
Status launch_repack_copy(const route::RepackPlan& plan, const void* a, const void* b, void* workspace,
                          cudaStream_t stream);
}  // namespace kt

namespace {

constexpr DType kRouteTypes[] = {DType::f16, DType::bf16};  // the repack routes serve 16-bit operands

// Route entries of this operand type and layout pair that can run on this device (their inner
// instance's architecture and shared memory): asked with a fully misaligned problem.
std::vector<const GemmKernelEntry*> routes_for(DType ab, Layout la, Layout lb, const DeviceInfo& dev) {
  std::vector<const GemmKernelEntry*> out;
  for (const auto& e : gemm_table().entries()) {
    if (!is_route(e) || e.config.operand() != ab || e.config.a_layout != la || e.config.b_layout != lb) continue;
    GemmDesc d;
    d.m = d.n = d.k = 255;
    d.ab_type = ab;
    d.a_layout = la;
    d.b_layout = lb;
    if (can_implement(e, resolved(d), GemmAlignment{1, 1, 1}, &dev).ok()) out.push_back(&e);
  }
  return out;
}

std::size_t route_count(const DeviceInfo& dev) {
  std::size_t n = 0;
  for (DType t : kRouteTypes)
    for (Layout la : {Layout::row, Layout::col})
      for (Layout lb : {Layout::row, Layout::col}) n += routes_for(t, la, lb, dev).size();
  return n;
}

// Would the route take this problem (it refuses aligned operands)?
Status route_accepts(const GemmKernelEntry& e, const Matrix& A, const Matrix& B, const DeviceInfo& dev) {
  GemmDesc d;
  d.m = A.st.rows;
  d.n = B.st.cols;
  d.k = A.st.cols;
  d.ab_type = A.st.type;
  d.a_layout = A.st.row_major ? Layout::row : Layout::col;
  d.b_layout = B.st.row_major ? Layout::row : Layout::col;
  d.lda = A.st.ld;
  d.ldb = B.st.ld;
  GemmOperands o;
  o.a = A.data();
  o.b = B.data();
  d = resolved(d);
  return can_implement(e, d, alignment_of(d, o), &dev);
}

using RouteShape = GemmShape;

const std::vector<RouteShape>& route_shapes() {
  static const std::vector<RouteShape> s = {
      {"1x1x1", 1, 1, 1},
      {"primes", 127, 257, 131},
      {"K < 8", 129, 65, 7},
      {"M = 1", 1, 300, 17},
      {"N = 1, K = 9", 300, 1, 9},
      {"odd leading dimensions", 96, 80, 48, 3, 5, 3},
      {"pointers offset by one element", 33, 40, 100, 0, 0, 0, 1, 1, 1},
      {"even but not 16-byte aligned (K = 76)", 136, 260, 76},
      {"several tiles in M and N, odd K", 300, 520, 93},
      {"A aligned, B misaligned (pointer)", 64, 72, 64, 0, 0, 0, 0, 3, 0},
      {"A misaligned (lda), B aligned", 64, 72, 64, 1, 0, 0},
  };
  return s;
}

constexpr DType kOut[] = {DType::f32, DType::f16, DType::bf16};

struct RouteFailures {
  int count = 0;
  void report(const std::string& msg) {
    ++count;
    if (count <= 40) FAIL_CHECK(msg);
  }
};

}  // namespace

TEST_CASE("repack copy: every misalignment and line length, zero padding, bytes outside untouched") {
  DeviceInfo dev;
  backend::device_info(dev);
  const std::int64_t lengths[] = {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200, 511, 512, 513, 700, 1001};
  RouteFailures fails;
  int runs = 0;
  for (std::int64_t len : lengths)
    for (int offset = 0; offset < 8; ++offset)
      for (std::int64_t ld_pad : {0, 1, 8}) {
        const std::int64_t lines = 5, ld_src = len + ld_pad;
        // Source: guard | offset | lines·ld_src | guard, each element a distinct bit pattern.
        const std::int64_t src_elems = kGuard + offset + lines * ld_src + kGuard;
        std::vector<std::uint16_t> src(static_cast<std::size_t>(src_elems));
        for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(0x1000 + i * 7);
        route::RepackPlan plan;
        plan.a.repack = true;
        plan.a.lines = lines;
        plan.a.contiguous = len;
        plan.a.ld_src = ld_src;
        plan.a.ld = route::scratch_ld(len);
        plan.a.bytes = static_cast<std::size_t>(lines * plan.a.ld * 2);
        plan.workspace_bytes = plan.a.bytes;
        DeviceBuffer s(src.size() * 2), ws(plan.workspace_bytes + 512);
        backend::to_device(s.ptr, src.data(), src.size() * 2);
        KT_CUDA(cudaMemset(ws.ptr, 0xAB, ws.bytes));
        const Status st = launch_repack_copy(plan, s.ptr + (kGuard + offset) * 2, nullptr, ws.ptr, nullptr);
        REQUIRE_MESSAGE(st.ok(), st.to_string());
        backend::sync(nullptr);
        std::vector<std::uint16_t> out(ws.bytes / 2), back(src.size());
        backend::to_host(out.data(), ws.ptr, ws.bytes);
        backend::to_host(back.data(), s.ptr, src.size() * 2);
        ++runs;
        std::ostringstream why;
        for (std::int64_t l = 0; l < lines && why.str().empty(); ++l)
          for (std::int64_t j = 0; j < plan.a.ld; ++j) {
            const std::uint16_t want = j < len ? src[static_cast<std::size_t>(kGuard + offset + l * ld_src + j)] : 0;
            if (out[static_cast<std::size_t>(l * plan.a.ld + j)] != want) {
              why << "line " << l << " element " << j << " is " << out[static_cast<std::size_t>(l * plan.a.ld + j)]
                  << ", expected " << want;
              break;
            }
          }
        for (std::size_t i = static_cast<std::size_t>(lines * plan.a.ld); i < out.size() && why.str().empty(); ++i)
          if (out[i] != 0xABAB) why << "scratch element " << i << " past the copy was written";
        if (back != src) why << " source changed";
        if (!why.str().empty())
          fails.report("len=" + std::to_string(len) + " offset=" + std::to_string(offset) +
                       " ld_pad=" + std::to_string(ld_pad) + ": " + why.str());
      }
  // Both operands in one launch, the second at its 256-byte offset.
  {
    const GemmDesc d = resolved([] {
      GemmDesc g;
      g.m = 37;
      g.n = 45;
      g.k = 29;
      g.ab_type = DType::bf16;
      g.a_layout = Layout::row;
      g.b_layout = Layout::col;
      return g;
    }());
    const route::RepackPlan plan = route::plan_repack(d, GemmAlignment{1, 1, 1});
    REQUIRE(plan.operands() == 2);
    std::vector<std::uint16_t> a(37 * 29), b(45 * 29);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::uint16_t>(i + 1);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint16_t>(0x8000 + i);
    DeviceBuffer da(a.size() * 2), db(b.size() * 2), ws(plan.workspace_bytes);
    backend::to_device(da.ptr, a.data(), a.size() * 2);
    backend::to_device(db.ptr, b.data(), b.size() * 2);
    REQUIRE(launch_repack_copy(plan, da.ptr, db.ptr, ws.ptr, nullptr).ok());
    backend::sync(nullptr);
    std::vector<std::uint16_t> out(plan.workspace_bytes / 2);
    backend::to_host(out.data(), ws.ptr, plan.workspace_bytes);
    int bad = 0;
    for (int l = 0; l < 37; ++l)
      for (int j = 0; j < plan.a.ld; ++j) bad += out[l * plan.a.ld + j] != (j < 29 ? a[l * 29 + j] : 0);
    const std::size_t boff = plan.b.offset / 2;
    for (int l = 0; l < 45; ++l)
      for (int j = 0; j < plan.b.ld; ++j) bad += out[boff + l * plan.b.ld + j] != (j < 29 ? b[l * 29 + j] : 0);
    CHECK(bad == 0);
  }
  CHECK(fails.count == 0);
  MESSAGE(runs << " copies checked");
}

TEST_CASE("every repack route matches the float64 reference on unaligned shapes, layouts and output types") {
  DeviceInfo dev;
  backend::device_info(dev);
  if (route_count(dev) == 0) {
    MESSAGE("no repack route runs on " << dev.name);
    return;
  }
  RouteFailures fails;
  std::map<std::string_view, int> ran;
  int runs = 0;
  std::uint64_t seed = 60000;
  const auto routes_on_device = [&](DType ab, Layout la, Layout lb) { return routes_for(ab, la, lb, dev); };
  for (const RouteShape& sc : route_shapes())
    for_each_operand_set(
        sc, kRouteTypes, seed, routes_on_device,
        [&](const auto& entries, const Matrix& A, const Matrix& B, const std::vector<double>& acc, Rng& rng, Layout, Layout) {
          for (std::size_t ei = 0; ei < entries.size(); ++ei) {
            const GemmKernelEntry* e = entries[ei];
            const Status ok = route_accepts(*e, A, B, dev);
            if (!ok.ok()) {
              // Only an aligned problem may be refused (the route then says so).
              CHECK_MESSAGE(ok.code() == StatusCode::misaligned, e->name << " on " << sc.what << ": " << ok.to_string());
              continue;
            }
            OutputCase oc;
            oc.d_type = kOut[(ei + runs) % 3];
            oc.ldd_pad = sc.pad_d;
            oc.d_offset = sc.off_d;
            const RunResult r = run_checked(A, B, acc, e->config.math, oc, e->name.data(), rng);
            ++runs;
            ++ran[e->name];
            std::string f = r.failure(tolerance(e->config.math, oc.d_type));
            // The user's operands are read only.
            if (A.download() != A.image) f += " A changed;";
            if (B.download() != B.image) f += " B changed;";
            if (!f.empty()) fails.report(std::string(e->name) + " on " + sc.what + " [" + describe(r.desc) + "]: " + f);
          }
        });
  for (DType ab : kRouteTypes)
    for (Layout la : {Layout::row, Layout::col})
      for (Layout lb : {Layout::row, Layout::col})
        for (const GemmKernelEntry* e : routes_for(ab, la, lb, dev))
          CHECK_MESSAGE(ran[e->name] >= 8, e->name << " ran " << ran[e->name] << " shapes");
  CHECK(fails.count == 0);
  MESSAGE(runs << " route runs, " << fails.count << " failures");
}

TEST_CASE("repack routes compute the epilogues: bias+relu, beta with C aliasing D, residual") {
  DeviceInfo dev;
  backend::device_info(dev);
  auto spec = [](float alpha, float beta, bool bias, bool residual, Activation act) {
    EpilogueSpec e;
    e.alpha = alpha;
    e.beta = beta;
    e.bias = bias;
    e.residual = residual;
    e.activation = act;
    return e;
  };
  struct Epi {
    std::string what;
    EpilogueSpec spec;
    bool c_alias, r_alias;
  };
  const std::vector<Epi> epis = {
      {"bias + relu", spec(1, 0, true, false, Activation::relu), false, false},
      {"alpha, beta, C aliases D", spec(1.5f, 0.5f, false, false, Activation::none), true, false},
      {"beta with a separate C", spec(1, -0.75f, false, false, Activation::none), false, false},
      {"residual", spec(1, 0, false, true, Activation::none), false, false},
      {"residual aliases D, gelu", spec(0.5f, 0, false, true, Activation::gelu_tanh), false, true},
      {"everything, C and residual aliasing D", spec(0.75f, 0.5f, true, true, Activation::silu), true, true},
  };
  const std::vector<RouteShape> shapes = {{"37x45x29", 37, 45, 29}, {"130x70x33 odd ldd", 130, 70, 33, 0, 0, 3}};
  RouteFailures fails;
  int runs = 0;
  std::uint64_t seed = 61000;
  const auto routes_on_device = [&](DType ab, Layout la, Layout lb) { return routes_for(ab, la, lb, dev); };
  for (const RouteShape& sc : shapes)
    for_each_operand_set(
        sc, kRouteTypes, seed, routes_on_device,
        [&](const auto& entries, const Matrix& A, const Matrix& B, const std::vector<double>& acc, Rng& rng, Layout, Layout) {
          for (std::size_t ei = 0; ei < entries.size(); ++ei)
            for (std::size_t ci = 0; ci < epis.size(); ++ci) {
              OutputCase oc;
              oc.d_type = kOut[(ci + ei) % 3];
              oc.ldd_pad = sc.pad_d;
              oc.epilogue = epis[ci].spec;
              oc.c_aliases_d = epis[ci].c_alias;
              oc.residual_aliases_d = epis[ci].r_alias;
              const RunResult r = run_checked(A, B, acc, entries[ei]->config.math, oc, entries[ei]->name.data(), rng);
              ++runs;
              if (const std::string f = r.failure(tolerance(entries[ei]->config.math, oc.d_type)); !f.empty())
                fails.report(std::string(entries[ei]->name) + " '" + epis[ci].what + "' on " + sc.what + " [" + describe(r.desc) + "]: " + f);
            }
        });
  CHECK(fails.count == 0);
  MESSAGE(runs << " epilogue runs");
}

namespace {

// A misaligned bf16 tn problem in device memory with its float64 reference.
struct Problem {
  GemmDesc d;
  Matrix A, B;
  std::vector<double> acc;
  explicit Problem(Layout la = Layout::row, Layout lb = Layout::col) {
    Rng rng(777);
    A = random_matrix(storage(DType::bf16, 70, 45, la == Layout::row), rng);
    B = random_matrix(storage(DType::bf16, 45, 90, lb == Layout::row), rng);
    acc = reference_ab(A, B);
    d.m = 70;
    d.n = 90;
    d.k = 45;
    d.ab_type = DType::bf16;
    d.a_layout = la;
    d.b_layout = lb;
    d.d_type = DType::f32;
    d = resolved(d);
  }
  GemmOperands ops(void* D) const {
    GemmOperands o;
    o.a = A.data();
    o.b = B.data();
    o.d = D;
    return o;
  }
};

}  // namespace

TEST_CASE("repack route workspace: the caller's (exact size works, too small is refused untouched)") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto rs = routes_for(DType::bf16, Layout::row, Layout::col, dev);
  if (rs.empty()) return;
  const GemmKernelEntry& e = *rs.front();
  CAPTURE(e.name);
  Problem p;
  GemmOptions opt;
  opt.instance = e.name.data();
  const std::size_t need = gemm_workspace_size(p.d, opt);
  CHECK(need == route::repack_workspace_bound(p.d));
  DeviceBuffer ws(need);

  Matrix D = poisoned(storage(DType::f32, 70, 90, true));
  D.upload();
  GemmOperands o = p.ops(D.data());
  o.workspace = ws.ptr;
  o.workspace_bytes = need;
  const Status s = gemm(p.d, o, nullptr, opt);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  backend::sync(nullptr);
  const Check c = check_output(D, p.acc);
  CHECK_MESSAGE(c.ok(1e-2), c.summary());

  Matrix D2 = poisoned(storage(DType::f32, 70, 90, true));
  D2.upload();
  GemmOperands small = p.ops(D2.data());
  small.workspace = ws.ptr;
  small.workspace_bytes = need - 256;
  const Status t = gemm(p.d, small, nullptr, opt);
  CHECK(t.code() == StatusCode::invalid_argument);
  backend::sync(nullptr);
  CHECK(D2.download() == D2.image);  // nothing launched
}

TEST_CASE("repack route launched directly (no workspace): stream-ordered scratch, also in a CUDA graph") {
  DeviceInfo dev;
  backend::device_info(dev);
  for (Layout la : {Layout::row, Layout::col})
    for (Layout lb : {Layout::row, Layout::col}) {
      const auto rs = routes_for(DType::bf16, la, lb, dev);
      if (rs.empty()) continue;
      const GemmKernelEntry& e = *rs.back();
      CAPTURE(e.name);
      Problem p(la, lb);
      cudaStream_t stream;
      KT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      Matrix D = poisoned(storage(DType::f32, 70, 90, true));
      D.upload();
      const Status s = e.launch(p.d, p.ops(D.data()), GemmLaunchOptions{}, stream);
      REQUIRE_MESSAGE(s.ok(), s.to_string());
      backend::sync(stream);
      const Check c = check_output(D, p.acc);
      CHECK_MESSAGE(c.ok(1e-2), c.summary());

      Matrix G = poisoned(storage(DType::f32, 70, 90, true));
      G.upload();
      cudaGraph_t graph = nullptr;
      KT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      const Status cs = e.launch(p.d, p.ops(G.data()), GemmLaunchOptions{}, stream);
      KT_CUDA(cudaStreamEndCapture(stream, &graph));
      REQUIRE_MESSAGE(cs.ok(), cs.to_string());
      cudaGraphExec_t exec = nullptr;
      KT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      for (int i = 0; i < 3; ++i) KT_CUDA(cudaGraphLaunch(exec, stream));
      backend::sync(stream);
      const Check g = check_output(G, p.acc);
      CHECK_MESSAGE(g.ok(1e-2), g.summary());
      KT_CUDA(cudaGraphExecDestroy(exec));
      KT_CUDA(cudaGraphDestroy(graph));
      KT_CUDA(cudaStreamDestroy(stream));
    }
}

TEST_CASE("repack route refuses split-K and aligned problems") {
  DeviceInfo dev;
  backend::device_info(dev);
  const auto rs = routes_for(DType::bf16, Layout::row, Layout::col, dev);
  if (rs.empty()) return;
  Problem p;
  Matrix D = poisoned(storage(DType::f32, 70, 90, true));
  D.upload();
  GemmOptions opt;
  opt.instance = rs.front()->name.data();
  opt.launch.split_k = 2;
  const Status s = gemm(p.d, p.ops(D.data()), nullptr, opt);
  CHECK_FALSE(s.ok());
  backend::sync(nullptr);
  CHECK(D.download() == D.image);
  // An aligned problem by name: refused with the reason.
  const GemmDesc aligned = resolved(GemmDesc{.m = 64, .n = 64, .k = 64, .ab_type = DType::bf16, .a_layout = Layout::row,
                              .b_layout = Layout::col, .d_type = DType::f32});
  DeviceBuffer a(64 * 64 * 2), b(64 * 64 * 2), d(64 * 64 * 4);
  GemmOptions by_name;
  by_name.instance = rs.front()->name.data();
  const Status t = gemm(aligned, GemmOperands{.a = a.ptr, .b = b.ptr, .d = d.ptr}, nullptr, by_name);
  CHECK(t.code() == StatusCode::misaligned);
  CHECK(t.message().find("operands already aligned") != std::string::npos);
}

#if KTUNE_HAVE_CUBLASLT
TEST_CASE("repack routes on large unaligned shapes agree with cuBLAS") {
  using namespace ktune::tools;
  DeviceInfo dev;
  backend::device_info(dev);
  if (route_count(dev) == 0) return;
  CublasRef cublas;
  REQUIRE(cublas.init().ok());
  struct Big {
    int m, n, k;
    const char* layouts;
  };
  const Big bigs[] = {{4095, 4097, 4093, "tn"}, {4095, 4097, 4093, "nn"}, {4095, 4097, 4093, "nt"},
                      {4095, 4097, 4093, "tt"}, {3000, 5000, 700, "tn"},  {1023, 1025, 1029, "nt"}};
  RouteFailures fails;
  int runs = 0;
  std::uint64_t seed = 62000;
  for (const Big& bg : bigs)
    for (Precision prec : {Precision::bf16, Precision::f16}) {
      const ProblemSpec spec = make_problem(bg.m, bg.n, bg.k, prec, bg.layouts);
      ProblemData data;
      REQUIRE(data.create(spec, dev, seed++, nullptr, 1).ok());
      std::unique_ptr<CublasRef::Plan> plan;
      REQUIRE(cublas.make_plan(spec, nullptr, plan).ok());
      REQUIRE(cublas.run(*plan, data.ops(0).a, data.ops(0).b, data.ref(), nullptr).ok());
      backend::sync(nullptr);
      for (const GemmKernelEntry* e : routes_for(spec.operand_type(), spec.a_layout, spec.b_layout, dev)) {
        REQUIRE(data.poison(0, nullptr).ok());
        GemmOptions opt;
        opt.instance = e->name.data();
        const Status s = gemm(spec.desc(), data.ops(0), nullptr, opt);
        backend::sync(nullptr);
        ErrorStats es;
        const Status cmp = s.ok() ? data.error_vs_ref(data.ops(0).d, nullptr, es) : s;
        ++runs;
        if (!cmp.ok() || !es.passes(spec.tol()))
          fails.report(std::string(e->name) + " on " + spec.name() + ": " +
                       (cmp.ok() ? "relative error " + std::to_string(es.rel) : cmp.to_string()));
      }
    }
  CHECK(fails.count == 0);
  MESSAGE(runs << " large route runs against cuBLAS");
}
#endif
