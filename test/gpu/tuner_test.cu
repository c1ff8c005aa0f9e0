// GPU tests of the runtime tuner with the CUDA measuring backend: the tuned instance computes the
// right result, tuning leaves the caller's buffers untouched (C aliasing D included), broken
// candidates are excluded by validation, graph capture never benchmarks, and a cache written by one
// process is used by another without re-tuning.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gemm_problem.hpp"
#include "gpu/test_util.cuh"
#include "gpu/tuner_log.hpp"
#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/tuner.hpp"

using namespace kt;
using namespace ktune::tuner;

namespace {

using testing::Logged;

TunerOptions test_options(Logged& log, std::string cache = {}) { return testing::logged_options(log, std::move(cache)); }

bool have(MathOp m, Layout la, Layout lb) {
  for (const auto& e : gemm_table().entries())
    if (e.config.math == m && e.config.a_layout == la && e.config.b_layout == lb) return true;
  return false;
}

// A small f16 "tn" problem with C aliasing D, bias and ReLU, on random data.
struct AliasProblem {
  GemmDesc desc;
  Matrix A, B, D, bias;
  std::vector<double> d_init;
  GemmOperands ops() const {
    GemmOperands o;
    o.a = A.data();
    o.b = B.data();
    o.c = D.data();
    o.d = D.data();
    o.bias = bias.data();
    return o;
  }
  explicit AliasProblem(int m = 384, int n = 320, int k = 256, std::uint64_t seed = 7) {
    Rng rng(seed);
    desc = ktune::test::tn_problem(DType::f16, m, n, k);
    desc.epilogue = bias_activation(Activation::relu);
    desc.epilogue.alpha = 1.25f;
    desc.epilogue.beta = 0.5f;
    A = random_matrix(storage(DType::f16, m, k, true), rng);
    B = random_matrix(storage(DType::f16, k, n, false), rng);
    D = random_matrix(storage(DType::f16, m, n, true), rng);
    bias = random_matrix(storage(DType::f16, 1, n, true), rng);
    d_init = D.vals;
  }
  std::vector<double> reference() const {
    const std::vector<double> acc = reference_ab(A, B);
    return reference_epilogue(acc, desc.m, desc.n, desc.epilogue, &d_init, &bias.vals, nullptr);
  }
};

}  // namespace

TEST_CASE("tuner GPU: tuning leaves the caller's buffers untouched and the tuned instance is correct") {
  if (!have(MathOp::mma_f16, Layout::row, Layout::col)) return;
  Logged log;
  Tuner tuner(std::make_shared<CudaBackend>(), &gemm_table(), test_options(log));
  AliasProblem p;
  const std::vector<unsigned char> a0 = p.A.download(), b0 = p.B.download(), d0 = p.D.download(), bias0 = p.bias.download();
  cudaStream_t stream = nullptr;
  KT_CUDA(cudaStreamCreate(&stream));
  const GemmTactic* t = nullptr;
  const Status s = tuner.select(p.desc, p.ops(), stream, t);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(t != nullptr);
  KT_CUDA(cudaStreamSynchronize(stream));
  // Nothing the caller owns changed (D is also C here).
  CHECK(p.A.download() == a0);
  CHECK(p.B.download() == b0);
  CHECK(p.D.download() == d0);
  CHECK(p.bias.download() == bias0);
  REQUIRE(!log.reports.empty());
  const TuningReport r = log.reports.back();
  CHECK(r.source == Source::tuned);
  CHECK(r.winner == t->name);
  CHECK(r.scratch_bytes > 0);
  CHECK(r.count(TacticStatus::failed_validation) == 0);
  CHECK(r.count(TacticStatus::failed_launch) == 0);
  // A problem this small runs in microseconds: its candidates were timed in chains of back-to-back
  // launches over copies of the inputs (CudaBackendOptions::chain_below_ms), and the copies stayed in scratch.
  CHECK(std::any_of(r.records.begin(), r.records.end(), [](const TacticRecord& x) { return x.chain > 1; }));
  MESSAGE(log.joined());
  // The winning tactic (instance and launch options, with a workspace when it needs one) on the
  // caller's real arguments.
  const Status run = ktune::detail::launch_with_workspace(*t->entry, p.desc, p.ops(), t->launch, stream);
  REQUIRE_MESSAGE(run.ok(), run.to_string());
  KT_CUDA(cudaStreamSynchronize(stream));
  const Check c = check_output(p.D, p.reference(), &p.d_init);
  CHECK_MESSAGE(c.ok(tolerance(MathOp::mma_f16, DType::f16)), c.summary());
  // Later calls are lookups; the instance overload agrees.
  const GemmTactic* again = nullptr;
  REQUIRE(tuner.select(p.desc, p.ops(), stream, again).ok());
  CHECK(again == t);
  const GemmKernelEntry* e = nullptr;
  REQUIRE(tuner.select(p.desc, p.ops(), stream, e).ok());
  CHECK(e == t->entry);
  CHECK(tuner.counters().tunings == 1);
  KT_CUDA(cudaStreamDestroy(stream));
}

namespace {
// Candidates that launch but compute the wrong thing: one writes nothing, one drops the last K step.
const GemmKernelEntry* g_real = nullptr;
Status launch_nothing(const GemmDesc&, const GemmOperands&, const GemmLaunchOptions&, cudaStream_t) { return {}; }
Status launch_short_k(const GemmDesc& d, const GemmOperands& o, const GemmLaunchOptions& l, cudaStream_t s) {
  GemmDesc shorter = resolved(d);
  shorter.k -= 16;
  return g_real->launch(shorter, o, l, s);
}
}  // namespace

TEST_CASE("tuner GPU: candidates with wrong output fail validation and are never picked") {
  if (!have(MathOp::mma_f16, Layout::row, Layout::col)) return;
  GemmTable table;
  for (const auto& e : gemm_table().entries()) table.add(e);
  AliasProblem p(256, 256, 512, 11);
  DeviceInfo dev;
  backend::device_info(dev);
  const GemmDesc d = resolved(p.desc);
  const auto cands = gemm_table().candidates(d, alignment_of(d, p.ops()), &dev);
  REQUIRE(!cands.empty());
  g_real = cands.back();
  GemmKernelEntry nothing = *g_real, short_k = *g_real;
  nothing.name = "test_broken_writes_nothing";
  nothing.launch = &launch_nothing;
  short_k.name = "test_broken_short_k";
  short_k.launch = &launch_short_k;
  table.add(nothing);
  table.add(short_k);
  Logged log;
  TunerOptions o = test_options(log);
  // Rank the broken ones first, so they would be measured first and be fastest.
  o.cost_model = [](const GemmKernelEntry& e, const GemmDesc&, const DeviceInfo&) {
    return std::string_view(e.name).rfind("test_broken", 0) == 0 ? 0.0 : 1.0;
  };
  Tuner tuner(std::make_shared<CudaBackend>(), &table, std::move(o));
  const GemmKernelEntry* e = nullptr;
  REQUIRE(tuner.select(p.desc, p.ops(), nullptr, e).ok());
  REQUIRE(e != nullptr);
  CHECK(std::string_view(e->name).rfind("test_broken", 0) != 0);
  const TuningReport r = log.reports.back();
  // Both broken instances, and every launch variant of them that was run (split-K: they copy a real
  // entry's workspace function; with PDL twins there can be more than the top-k measures), failed validation.
  int broken = 0, broken_defaults = 0;
  for (const auto& t : r.records)
    if (t.name.rfind("test_broken", 0) == 0) {
      broken_defaults += t.name.find('@') == std::string::npos ? 1 : 0;
      if (t.status == TacticStatus::pruned_by_model || t.status == TacticStatus::pruned_by_budget) continue;
      ++broken;
      CHECK_MESSAGE(t.status == TacticStatus::failed_validation, t.name << ": " << to_string(t.status) << " " << t.detail);
    }
  CHECK(broken_defaults == 2);
  CHECK(broken >= 2);
  MESSAGE(log.joined());
}

TEST_CASE("tuner GPU: a call made while capturing a graph never benchmarks; tune_pending() tunes it later") {
  if (!have(MathOp::mma_f16, Layout::row, Layout::col)) return;
  Logged log;
  Tuner tuner(std::make_shared<CudaBackend>(), &gemm_table(), test_options(log));
  AliasProblem p(200, 264, 128, 5);
  cudaStream_t stream = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  KT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const GemmKernelEntry* e = nullptr;
  const Status s = tuner.select(p.desc, p.ops(), stream, e);
  Status launched;
  if (s.ok() && e) (void)(launched = e->launch(resolved(p.desc), p.ops(), GemmLaunchOptions{}, stream));
  KT_CUDA(cudaStreamEndCapture(stream, &graph));
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(e != nullptr);
  REQUIRE(launched.ok());
  CHECK(tuner.counters().tunings == 0);
  CHECK(tuner.pending_count() == 1);
  cudaGraphExec_t exec = nullptr;
  KT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  KT_CUDA(cudaGraphLaunch(exec, stream));
  KT_CUDA(cudaStreamSynchronize(stream));
  const Check c = check_output(p.D, p.reference(), &p.d_init);
  CHECK_MESSAGE(c.ok(tolerance(MathOp::mma_f16, DType::f16)), c.summary());
  std::size_t n = 0;
  REQUIRE(tuner.tune_pending(&n).ok());
  CHECK(n == 1);
  CHECK(tuner.counters().tunings == 1);
  CHECK(tuner.lookup(p.desc, p.ops()) != nullptr);
  KT_CUDA(cudaGraphExecDestroy(exec));
  KT_CUDA(cudaGraphDestroy(graph));
  KT_CUDA(cudaStreamDestroy(stream));
}

// Runs only as the child of the next test (KTUNE_TEST_CHILD_CACHE set): selects the same problem with
// a fresh tuner on the cache file and requires that nothing was measured.
TEST_CASE("tuner GPU: child process reads the cache") {
  const char* path = std::getenv("KTUNE_TEST_CHILD_CACHE");
  if (path == nullptr) return;
  Logged log;
  Tuner tuner(std::make_shared<CudaBackend>(), &gemm_table(), test_options(log, path));
  AliasProblem p(512, 512, 512, 3);
  const GemmKernelEntry* e = nullptr;
  REQUIRE(tuner.select(p.desc, p.ops(), nullptr, e).ok());
  REQUIRE(e != nullptr);
  CHECK(tuner.counters().tunings == 0);
  CHECK(tuner.counters().from_cache == 1);
  const char* want = std::getenv("KTUNE_TEST_CHILD_EXPECT");
  CHECK(want != nullptr);
  if (want) CHECK(std::string(e->name) == want);
}

TEST_CASE("tuner GPU: a cache written by one process is used by another without re-tuning") {
  if (std::getenv("KTUNE_TEST_CHILD_CACHE") != nullptr) return;
  if (!have(MathOp::mma_f16, Layout::row, Layout::col)) return;
  const std::string path = (std::filesystem::temp_directory_path() / ("ktune_gpu_cache_" + std::to_string(::getpid()) + ".ktune")).string();
  std::filesystem::remove(path);
  std::string winner;
  {
    Logged log;
    Tuner tuner(std::make_shared<CudaBackend>(), &gemm_table(), test_options(log, path));
    AliasProblem p(512, 512, 512, 3);
    const GemmKernelEntry* e = nullptr;
    REQUIRE(tuner.select(p.desc, p.ops(), nullptr, e).ok());
    REQUIRE(e != nullptr);
    CHECK(tuner.counters().tunings == 1);
    winner = std::string(e->name);
    MESSAGE("tuning took " << log.reports.back().tuning_ms << " ms for " << log.reports.back().records.size() << " instances");
  }
  REQUIRE(std::filesystem::exists(path));
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  MESSAGE("cache file:\n" << text.str());
  char exe[4096] = {};
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(len > 0);
  const std::string cmd = "KTUNE_TEST_CHILD_CACHE='" + path + "' KTUNE_TEST_CHILD_EXPECT='" + winner + "' '" +
                          std::string(exe, static_cast<std::size_t>(len)) + "' -tc='tuner GPU: child process reads the cache' > /dev/null";
  CHECK(std::system(cmd.c_str()) == 0);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".lock");
}

namespace {

// A bf16 "tn" problem with bias and ReLU (no C), random data, for tactic tests.
struct TacticProblem {
  GemmDesc desc;
  Matrix A, B, D, bias;
  GemmOperands ops() const {
    GemmOperands o;
    o.a = A.data();
    o.b = B.data();
    o.d = D.data();
    o.bias = bias.data();
    return o;
  }
  TacticProblem(DType t, int m, int n, int k, std::uint64_t seed) {
    Rng rng(seed);
    desc.m = m;
    desc.n = n;
    desc.k = k;
    desc.ab_type = t;
    desc.d_type = t;
    desc.a_layout = Layout::row;
    desc.b_layout = Layout::col;
    desc.epilogue = bias_activation(Activation::relu);
    A = random_matrix(storage(t, m, k, true), rng);
    B = random_matrix(storage(t, k, n, false), rng);
    D = poisoned(storage(t, m, n, true));
    bias = random_matrix(storage(t, 1, n, true), rng);
  }
};

}  // namespace

// Every launch variant the tuner times (split-K serial/parallel on a decode-like shape, sm90 clusters
// of 2 on a wgmma shape) is validated by the tuner, and, pinned, gives the right result through
// ktune::gemm (pooled workspace, guard bands intact); tuning leaves the caller's buffers unchanged.
TEST_CASE("tuner GPU: tuned split-K and cluster tactics are correct through ktune::gemm; tuning leaves the caller's buffers unchanged") {
  struct Shape {
    DType t;
    int m, n, k;
  };
  // 48x2048 output = 16 tiles of 128x128 with a long K: split-K variants; 512x768: 12 tiles of 128x256 for clusters.
  const Shape shapes[] = {{DType::bf16, 48, 2048, 3072}, {DType::f16, 512, 768, 512}};
  std::size_t variants_checked = 0;
  std::string checked;
  for (const Shape& sh : shapes) {
    CAPTURE(sh.m);
    TacticProblem p(sh.t, sh.m, sh.n, sh.k, 11 + sh.m);
    const std::vector<unsigned char> a0 = p.A.download(), b0 = p.B.download(), d0 = p.D.download(), bias0 = p.bias.download();
    Logged log;
    TunerOptions o = test_options(log);
    o.max_candidates = 0;  // every tactic
    Tuner tuner(std::make_shared<CudaBackend>(), &gemm_table(), o);
    const GemmAlignment al = alignment_of(p.desc, p.ops());
    TuningReport r;
    const Status s = tuner.tune(p.desc, al, &r, /*force=*/true);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    CHECK(r.source == Source::tuned);
    CHECK(r.count(TacticStatus::failed_validation) == 0);
    KT_CUDA(cudaDeviceSynchronize());
    CHECK(p.A.download() == a0);
    CHECK(p.B.download() == b0);
    CHECK(p.D.download() == d0);
    CHECK(p.bias.download() == bias0);
    const std::vector<double> ref = reference_epilogue(reference_ab(p.A, p.B), sh.m, sh.n, p.desc.epilogue, nullptr, &p.bias.vals, nullptr);
    const MathOp math = sh.t == DType::bf16 ? MathOp::mma_bf16 : MathOp::mma_f16;
    for (const TacticRecord& rec : r.records) {
      if (rec.name.find('@') == std::string::npos || rec.status == TacticStatus::cannot_implement ||
          rec.status == TacticStatus::pruned_by_model)
        continue;
      CAPTURE(rec.name);
      // A variant that ran was validated by the tuner against its reference.
      const std::string status = std::string(to_string(rec.status)) + ": " + rec.detail;
      CHECK_MESSAGE((rec.status == TacticStatus::selected || rec.status == TacticStatus::measured ||
                     rec.status == TacticStatus::slower_than_best),
                    status);
      REQUIRE(ktune::default_tuner().pin(p.desc, al, rec.name).ok());
      const GemmTactic* pinned = ktune::default_tuner().lookup_tactic(p.desc, p.ops());
      REQUIRE(pinned != nullptr);
      CHECK(pinned->name == rec.name);
      KT_CUDA(cudaMemset(p.D.dev.ptr, kPoison, p.D.image.size()));
      const Status g = ktune::gemm(p.desc, p.ops());
      REQUIRE_MESSAGE(g.ok(), g.to_string());
      KT_CUDA(cudaDeviceSynchronize());
      const Check c = check_output(p.D, ref);
      CHECK_MESSAGE(c.ok(tolerance(math, sh.t)), c.summary());
      CHECK(p.A.download() == a0);
      CHECK(p.B.download() == b0);
      if (pinned->launch.split_k > 1) {
        // A caller workspace too small for the tactic: the same instance runs with default options.
        DeviceBuffer tiny(256);
        GemmOperands o = p.ops();
        o.workspace = tiny.ptr;
        o.workspace_bytes = 16;
        KT_CUDA(cudaMemset(p.D.dev.ptr, kPoison, p.D.image.size()));
        const Status small = ktune::gemm(p.desc, o);
        REQUIRE_MESSAGE(small.ok(), small.to_string());
        KT_CUDA(cudaDeviceSynchronize());
        const Check cs = check_output(p.D, ref);
        CHECK_MESSAGE(cs.ok(tolerance(math, sh.t)), cs.summary());
      }
      ++variants_checked;
      checked += " " + rec.name;
    }
  }
  ktune::default_tuner().reset();
  MESSAGE("launch variants checked through ktune::gemm:" << checked);
  // An sm80+ GPU has split-K capable instances; an sm90 GPU also cluster variants.
  CHECK(variants_checked >= 1);
}
