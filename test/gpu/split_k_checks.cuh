// test/gpu/split_k_checks.cuh — the checks the split-K, sm90 split-K and stream-K GPU tests share, table
// driven: every (instance, edge shape, D type, launch) against the float64 reference; the whole-sum
// epilogues; bit-identity of launches that must add in the same order, with garbage workspaces; a
// launch captured in a CUDA graph on a fresh stream. Each test file gives the tables (instances, shapes,
// launches); the loops, messages and checks live here once.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "gemm_problem.hpp"
#include "gpu/test_util.cuh"

namespace kt {

using ktune::test::cluster_split_launch;
using ktune::test::split_k_launch;
using ktune::test::stream_k_launch;

// An edge shape: D's rows padded by pad_d elements; max_ctas > 0 caps an sm90 launch's grid (so that a
// CTA walks several units).
struct EdgeShape {
  std::string what;
  int m, n, k;
  int pad_d = 0;
  int max_ctas = 0;
};

// The tables of check_edge_shapes: an instance's shapes, its D types, and the launches of one of its
// shapes (none: the shape is skipped).
struct EdgeRuns {
  std::function<std::vector<EdgeShape>(const GemmKernelEntry&)> shapes;
  std::function<std::vector<DType>(const GemmKernelEntry&)> d_types;
  std::function<std::vector<GemmLaunchOptions>(const GemmKernelEntry&, const EdgeShape&)> launches;
};

inline std::string tactic_of(const GemmKernelEntry& e, const GemmLaunchOptions& lo) {
  return std::string(e.name) + "@" + launch_suffix(lo);
}

// Every instance × shape × D type × launch through run_checked (poisoned D, guard bands, float64
// reference); a shape's max_ctas applies to each of its launches. Each (instance, shape) draws its
// operands from Rng(seed++). Returns the number of runs.
inline int check_edge_shapes(const std::vector<const GemmKernelEntry*>& instances, const EdgeRuns& t, std::uint64_t seed) {
  int runs = 0;
  for (const GemmKernelEntry* e : instances)
    for (const EdgeShape& sh : t.shapes(*e)) {
      Rng rng(seed++);
      const std::vector<GemmLaunchOptions> launches = t.launches(*e, sh);
      if (launches.empty()) continue;
      const RandomOperands op = random_operands(*e, sh.m, sh.n, sh.k, rng);
      for (DType out : t.d_types(*e))
        for (GemmLaunchOptions lo : launches) {
          if (sh.max_ctas > 0) lo.max_ctas = sh.max_ctas;
          OutputCase oc;
          oc.d_type = out;
          oc.ldd_pad = sh.pad_d;
          const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, lo);
          ++runs;
          CHECK_MESSAGE(r.status.ok(), tactic_of(*e, lo) << " " << sh.what << ": " << r.status.to_string());
          if (r.status.ok())
            CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, out)),
                          tactic_of(*e, lo) << " " << sh.what << " out " << to_string(out) << ": " << r.check.summary());
        }
    }
  return runs;
}

// whole_sum_epilogue_cases() on one problem per instance (shape_of(e); operands from Rng(seed++)) × D type
// (`d_types`; empty: each case's own) × launch: the epilogue applied once, to the whole sum. Returns the
// number of runs.
inline int check_whole_sum_epilogues(const std::vector<const GemmKernelEntry*>& instances,
                                     const std::function<EdgeShape(const GemmKernelEntry&)>& shape_of,
                                     const std::vector<DType>& d_types,
                                     const std::function<std::vector<GemmLaunchOptions>(const GemmKernelEntry&)>& launches_of,
                                     std::uint64_t seed) {
  const auto cases = whole_sum_epilogue_cases();
  int runs = 0;
  for (const GemmKernelEntry* e : instances) {
    Rng rng(seed++);
    const EdgeShape sh = shape_of(*e);
    const RandomOperands op = random_operands(*e, sh.m, sh.n, sh.k, rng);
    const std::vector<GemmLaunchOptions> launches = launches_of(*e);
    for (auto& [what, oc0] : cases)
      for (DType out : d_types.empty() ? std::vector<DType>{oc0.d_type} : d_types)
        for (const GemmLaunchOptions& lo : launches) {
          OutputCase oc = oc0;
          oc.d_type = out;
          const RunResult r = run_checked(op.A, op.B, op.acc, e->config.math, oc, e->name.data(), rng, nullptr, lo);
          ++runs;
          CHECK_MESSAGE(r.status.ok(), tactic_of(*e, lo) << " " << what << ": " << r.status.to_string());
          if (r.status.ok())
            CHECK_MESSAGE(r.check.ok(tolerance(e->config.math, out)),
                          tactic_of(*e, lo) << " " << what << " out " << to_string(out) << ": " << r.check.summary());
        }
  }
  return runs;
}

// One problem run directly through gemm() with the caller's workspace: D (poisoned, guards), the C and
// bias the epilogue reads (random), and D's float64 reference.
struct DirectRun {
  GemmDesc d;
  GemmOperands ops;
  Matrix D, C, bias;
  DeviceBuffer ws;
  std::vector<double> ref;
};

// D = epilogue(A·B) on op in instance e's types and layouts, D of type `out`; rng draws C and bias.
inline DirectRun direct_run(const GemmKernelEntry& e, const RandomOperands& op, DType out, const EpilogueSpec& ep, Rng& rng) {
  DirectRun x;
  const std::int64_t m = op.A.st.rows, n = op.B.st.cols;
  x.d = ktune::test::problem_for(e.config, m, n, op.A.st.cols);
  x.d.compute = compute_for(e.config.math);
  x.d.d_type = out;
  x.d.epilogue = ep;
  x.D = poisoned(storage(out, m, n, true));
  x.D.upload();
  x.ops.a = op.A.data();
  x.ops.b = op.B.data();
  x.ops.d = x.D.data();
  if (ep.beta != 0.0f) {
    x.C = random_matrix(storage(out, m, n, true), rng);
    x.ops.c = x.C.data();
    x.d.ldc = x.C.st.ld;
  }
  if (ep.bias) {
    x.bias = random_matrix(storage(out, 1, n, true), rng);
    x.ops.bias = x.bias.data();
  }
  x.ref = reference_epilogue(op.acc, m, n, ep, x.ops.c ? &x.C.vals : nullptr, x.ops.bias ? &x.bias.vals : nullptr, nullptr);
  return x;
}

// D's bytes (guards included) after one run of x with launch lo: D poisoned and the workspace (as much as
// the launch needs; none if it needs none) filled with `junk` first.
inline std::vector<unsigned char> run_image(DirectRun& x, const GemmKernelEntry& e, const GemmLaunchOptions& lo, unsigned char junk,
                                            cudaStream_t stream = nullptr) {
  GemmOptions opt;
  opt.instance = e.name.data();
  opt.launch = lo;
  const std::size_t need = gemm_workspace_size(x.d, opt);
  if (need > x.ws.bytes) x.ws = DeviceBuffer(need);
  if (need > 0) KT_CUDA(cudaMemset(x.ws.ptr, junk, need));
  x.ops.workspace = need > 0 ? x.ws.ptr : nullptr;
  x.ops.workspace_bytes = need;
  x.D.upload();
  const Status st = gemm(x.d, x.ops, stream, opt);
  REQUIRE_MESSAGE(st.ok(), tactic_of(e, lo) << ": " << st.to_string());
  backend::sync(stream);
  return x.D.download();
}

// Launches that must give the same bits (one tactic run to run, or modes that add in the same order):
// x run with each, the workspace holding different garbage each time; every image equal to the first,
// the first within tolerance of x.ref. Returns it.
inline std::vector<unsigned char> check_same_bits(DirectRun& x, const GemmKernelEntry& e, const std::vector<GemmLaunchOptions>& same) {
  constexpr unsigned char junk[] = {0xFF, 0x5A, 0x33, 0x00};
  std::vector<unsigned char> first;
  for (std::size_t i = 0; i < same.size(); ++i) {
    const std::vector<unsigned char> img = run_image(x, e, same[i], junk[i % 4]);
    if (i == 0) first = img;
    else CHECK_MESSAGE(img == first, tactic_of(e, same[i]) << " differs from " << tactic_of(e, same[0]) << " (run " << i << ")");
  }
  const Check c = check_image(x.D.st, first, x.ref);
  CHECK_MESSAGE(c.ok(tolerance(e.config.math, x.d.d_type)), tactic_of(e, same[0]) << ": " << c.summary());
  return first;
}

// Is every byte of D (guards included) still poison?
inline bool still_poisoned(const Matrix& D) {
  const std::vector<unsigned char> img = D.download();
  return std::all_of(img.begin(), img.end(), [](unsigned char b) { return b == kPoison; });
}

// Is every one of the first `bytes` bytes of ws still `value`?
inline bool still_filled(const DeviceBuffer& ws, std::size_t bytes, unsigned char value) {
  std::vector<unsigned char> w(bytes);
  backend::to_host(w.data(), ws.ptr, bytes);
  return std::all_of(w.begin(), w.end(), [&](unsigned char b) { return b == value; });
}

// Launch lo of instance e on op (f32 D) captured into a CUDA graph on a fresh stream (ktune has no pooled
// counters for it yet and cannot allocate while capturing), with a garbage workspace; the graph replayed
// 3 times (D poisoned before each) against float64 and bit for bit; then the same launch outside capture
// on that stream (ktune's own counters now) and the graph once more.
inline void check_graph_replays(const GemmKernelEntry& e, const RandomOperands& op, const GemmLaunchOptions& lo) {
  cudaStream_t s = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Rng unused(0);
  DirectRun x = direct_run(e, op, DType::f32, EpilogueSpec{}, unused);
  GemmOptions opt;
  opt.instance = e.name.data();
  opt.launch = lo;
  const std::size_t need = gemm_workspace_size(x.d, opt);
  x.ws = DeviceBuffer(std::max<std::size_t>(need, 256));
  KT_CUDA(cudaMemset(x.ws.ptr, 0xFF, x.ws.bytes));
  x.ops.workspace = need > 0 ? x.ws.ptr : nullptr;
  x.ops.workspace_bytes = need;
  cudaGraph_t g = nullptr;
  KT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const Status st = gemm(x.d, x.ops, s, opt);
  KT_CUDA(cudaStreamEndCapture(s, &g));
  REQUIRE_MESSAGE(st.ok(), tactic_of(e, lo) << ": " << st.to_string());
  cudaGraphExec_t ge = nullptr;
  KT_CUDA(cudaGraphInstantiate(&ge, g, 0));
  std::vector<unsigned char> first;
  for (int r = 0; r < 3; ++r) {
    KT_CUDA(cudaMemsetAsync(x.D.dev.ptr, kPoison, x.D.dev.bytes, s));
    KT_CUDA(cudaGraphLaunch(ge, s));
    backend::sync(s);
    const auto img = x.D.download();
    const Check c = check_image(x.D.st, img, x.ref);
    CHECK_MESSAGE(c.ok(tolerance(e.config.math, DType::f32)), tactic_of(e, lo) << " replay " << r << ": " << c.summary());
    if (r == 0) first = img;
    else CHECK_MESSAGE(img == first, tactic_of(e, lo) << " replay " << r << " differs");
  }
  CHECK(gemm(x.d, x.ops, s, opt).ok());
  KT_CUDA(cudaGraphLaunch(ge, s));
  backend::sync(s);
  CHECK_MESSAGE(x.D.download() == first, tactic_of(e, lo) << ": the graph after a launch outside capture differs");
  KT_CUDA(cudaGraphExecDestroy(ge));
  KT_CUDA(cudaGraphDestroy(g));
  KT_CUDA(cudaStreamDestroy(s));
}

}  // namespace kt
