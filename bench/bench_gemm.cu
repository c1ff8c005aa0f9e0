// bench/bench_gemm.cu — Google Benchmark sweeps of ktune's GEMM against cuBLASLt, same data, same
// process.
//
// Benchmarks are named gemm/<precision>/<layout>/<M>x<N>x<K>/<what>, <what> being
//   cublasLt          the reference (cuBLASLt's default heuristic; cublasGemmEx if Lt has none)
//   ktune             ktune::gemm() with no instance named: the one-call API's own choice (the default
//                     tuner's tactic, tuned by the first call; KTUNE_TUNING=heuristic: the cost model's);
//                     label: that tactic's name
//   ktune_gemm_sm80_… one instance by name (with --sweep: every instance that can implement the problem)
// so --benchmark_filter selects by precision, layout, shape or instance, e.g.
//   --benchmark_filter='gemm/bf16/tn/4096x4096x4096/'   or   --benchmark_filter='_w32x64_'
//
// Own flags (after Google Benchmark's):
//   --sweep                       also every instance that can implement each problem
//   --preset=square,llm,unaligned,fp32   shape sets (default: all four)
//   --dtype=bf16,f16,f32,tf32     precisions for every selected preset (default: the preset's own:
//                                 bf16,f16 for square/llm/unaligned; f32,tf32 for fp32)
//   --layout=tn,nn,nt,tt          A/B layouts, 't' = row-major, 'n' = column-major (default tn)
//   --shapes=FILE                 extra shapes, one per line: "M N K" or "MxNxK", optionally followed by
//                                 a precision and a layout ("4096 4096 4096 bf16 tn"); '#' comments
//
// Timing: CUDA events around the replay of a CUDA graph holding a batch of launches (about 2 ms of
// work), UseManualTime with the batch's GPU time, so the reported time is GPU time per GEMM; warm-up
// first; inputs are random non-zero values, rotated over several buffer sets when one set would fit in
// twice the L2 cache. Each ktune benchmark first verifies its output against cuBLAS (relative
// Frobenius error, counter rel_err) and is reported as an error if it is wrong.
//
// Counters: TF/s, GB/s (A, B and D each moved once), vs_cuBLAS (ktune TF/s over cuBLAS TF/s, when the
// cuBLAS benchmark of the same problem ran earlier in this process), rel_err.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../tools/common/gpu_harness.cuh"
#include "bench_util.cuh"
#include "ktune/gemm.hpp"

namespace {

using namespace ktune;
using tools::CublasRef;
using tools::ErrorStats;
using tools::LaunchFn;
using tools::Precision;
using tools::ProblemData;
using tools::ProblemSpec;

enum class What { cublas, ktune_call, ktune_instance };

// Process-wide GPU state.
struct Gpu : bench::GpuSession {
  CublasRef cublas;
};
Gpu* g_gpu = nullptr;

// The data of the problem being benchmarked. Benchmarks run in registration order, grouped by
// problem, so one problem's buffers are alive at a time.
struct Current {
  std::string key;
  std::unique_ptr<ProblemData> data;
  std::unique_ptr<CublasRef::Plan> plan;
  Status status;          // set-up of data and reference
  bool ref_is_fp32 = false;  // cuBLAS could not run: verify against the float64-accumulating GEMM
};
Current g_current;
std::map<std::string, double> g_cublas_tflops;  // problem path → cuBLAS TF/s measured in this process

Status prepare(const ProblemSpec& spec) {
  if (g_current.key == spec.path() && g_current.data) return g_current.status;
  g_current.plan.reset();
  g_current.data.reset();
  g_current.key = spec.path();
  g_current.ref_is_fp32 = false;
  g_current.data = std::make_unique<ProblemData>();
  Status setup = [&]() -> Status {
    ProblemData& d = *g_current.data;
    KTUNE_RETURN_IF_ERROR(d.create(spec, g_gpu->dev, std::hash<std::string>{}(spec.path()), g_gpu->stream));
    const GemmOperands o = d.ops(0);
    const Status ref = [&]() -> Status {
      KTUNE_RETURN_IF_ERROR(g_gpu->cublas.make_plan(spec, d.bias(), g_current.plan));
      KTUNE_RETURN_IF_ERROR(g_gpu->cublas.run(*g_current.plan, o.a, o.b, d.ref(), g_gpu->stream));
      return cuda_status(cudaStreamSynchronize(g_gpu->stream), "cuBLAS reference");
    }();
    if (ref.ok()) return {};
    g_current.plan.reset();
    if (!tools::cuda_context_alive()) return ref;
    g_current.ref_is_fp32 = true;
    return d.compute_ref32(g_gpu->stream);
  }();
  std::swap(g_current.status, setup);
  return g_current.status;
}

void fail(benchmark::State& state, const std::string& msg) { g_gpu->fail(state, msg); }

void run_gemm(benchmark::State& state, const ProblemSpec& spec, What what, const std::string& instance) {
  if (g_gpu->context_lost) return state.SkipWithError("CUDA context lost in an earlier benchmark");
  if (const Status st = prepare(spec); !st.ok()) return fail(state, "set-up: " + st.to_string());
  const ProblemData& data = *g_current.data;
  const cudaStream_t stream = g_gpu->stream;
  const GemmDesc desc = spec.desc();
  GemmOptions go;
  go.instance = what == What::ktune_instance ? instance.c_str() : nullptr;

  LaunchFn fn;
  if (what == What::cublas) {
    if (!g_current.plan) return state.SkipWithError("cuBLAS has no algorithm for this problem");
    const CublasRef::Plan* plan = g_current.plan.get();
    state.SetLabel(plan->api());
    fn = [plan, &data](int i, cudaStream_t s) {
      const GemmOperands o = data.ops(i);
      return g_gpu->cublas.run(*plan, o.a, o.b, o.d, s);
    };
  } else {
    fn = [desc, go, &data](int i, cudaStream_t s) { return ktune::gemm(desc, data.ops(i), s, go); };
    // Correctness first: NaN-poisoned D, one launch, error against the reference. (For the ktune
    // benchmark that first call is also where the default tuner tunes a new key.)
    ErrorStats es;
    const Status checked = [&]() -> Status {
      KTUNE_RETURN_IF_ERROR(data.poison(0, stream));
      KTUNE_RETURN_IF_ERROR(fn(0, stream));
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "ktune GEMM"));
      return g_current.ref_is_fp32 ? data.error_vs_ref32(data.ops(0).d, stream, es) : data.error_vs_ref(data.ops(0).d, stream, es);
    }();
    if (!checked.ok()) return fail(state, checked.to_string());
    if (!es.passes(spec.tol())) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "wrong result: relative error %.3e > %.0e (%lld non-finite outputs)", es.rel, spec.tol(),
                    static_cast<long long>(es.nonfinite));
      return fail(state, buf);
    }
    state.counters["rel_err"] = es.rel;
    if (what == What::ktune_call) {  // what ktune::gemm() runs now: the tuner's tactic (or its heuristic)
      const GemmTactic* t = nullptr;
      if (default_tuner().select(desc, data.ops(0), stream, t).ok() && t != nullptr) state.SetLabel(t->name);
    }
  }

  bench::Measured m;
  if (const Status st = bench::time_gpu(state, fn, stream, m); !st.ok()) return fail(state, st.to_string());
  if (m.seconds <= 0.0 || m.launches == 0) return;
  const double tflops = spec.flops() / m.per_launch_s() / 1e12;
  state.counters["TF/s"] = tflops;
  state.counters["GB/s"] = data.bytes_per_set() / m.per_launch_s() / 1e9;
  state.counters["batch"] = m.batch;
  if (what == What::cublas) {
    g_cublas_tflops[spec.path()] = tflops;
  } else if (const auto it = g_cublas_tflops.find(spec.path()); it != g_cublas_tflops.end() && it->second > 0) {
    state.counters["vs_cuBLAS"] = tflops / it->second;
  }
}

// ---- Problems and registration --------------------------------------------------------------------------

struct Preset {
  std::string name;
  std::vector<std::array<std::int64_t, 3>> shapes;
  std::vector<Precision> precisions;
};

std::vector<Preset> builtin_presets() {
  std::vector<Preset> out;
  for (const auto& p : tools::shape_presets())
    out.push_back({std::string(p.name), p.shapes, {Precision::bf16, Precision::f16}});
  out.push_back({"fp32", {{4096, 4096, 4096}, {2048, 2048, 2048}}, {Precision::f32, Precision::tf32}});
  return out;
}

struct Flags : bench::CommonFlags {          // presets empty: all
  std::vector<Precision> precisions;          // empty: each preset's own
  std::vector<std::string> layouts{"tn"};
};

bool parse_flags(int argc, char** argv, Flags& f) {
  const char* usage =
      "bench_gemm's own flags: --sweep --preset=square,llm,unaligned,fp32 --dtype=bf16,f16,f32,tf32 "
      "--layout=tn,nn,nt,tt --shapes=FILE (see the top of bench/bench_gemm.cu)";
  auto layout = [](const std::string& l) -> std::optional<std::string> {
    Layout a, b;
    return tools::parse_layouts(l, a, b) ? std::optional<std::string>(l) : std::nullopt;
  };
  return bench::parse_args(argc, argv, f, usage, [&](const std::string& a) {
    if (const int r = bench::list_flag(a, "--dtype", tools::parse_precision, f.precisions, "bf16, f16, f32, tf32")) return r;
    return bench::list_flag(a, "--layout", layout, f.layouts, "tn, nn, nt, tt");
  });
}

// "M N K [precision] [layout]" or "MxNxK [precision] [layout]" per line.
bool read_shapes(const std::string& path, const Flags& f, std::vector<ProblemSpec>& out) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "bench_gemm: cannot read %s\n", path.c_str());
    return false;
  }
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (const auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream ls(line);
    std::vector<std::string> tok;
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    ProblemSpec p;
    std::size_t next = 0;
    if (tools::parse_mnk(tok[0], p.m, p.n, p.k)) {
      next = 1;
    } else if (tok.size() >= 3 && tools::parse_mnk(tok[0] + "x" + tok[1] + "x" + tok[2], p.m, p.n, p.k)) {
      next = 3;
    } else {
      std::fprintf(stderr, "bench_gemm: %s:%d: expected 'M N K' or 'MxNxK'\n", path.c_str(), lineno);
      return false;
    }
    std::vector<Precision> precs = f.precisions.empty() ? std::vector<Precision>{Precision::bf16} : f.precisions;
    std::vector<std::string> lays = f.layouts;
    if (next < tok.size()) {
      const auto pr = tools::parse_precision(tok[next]);
      if (!pr) {
        std::fprintf(stderr, "bench_gemm: %s:%d: unknown precision '%s'\n", path.c_str(), lineno, tok[next].c_str());
        return false;
      }
      precs = {*pr};
      ++next;
    }
    if (next < tok.size()) {
      if (!tools::parse_layouts(tok[next], p.a_layout, p.b_layout)) {
        std::fprintf(stderr, "bench_gemm: %s:%d: unknown layout '%s'\n", path.c_str(), lineno, tok[next].c_str());
        return false;
      }
      lays = {tok[next]};
    }
    for (Precision pr : precs)
      for (const auto& l : lays) {
        ProblemSpec q = p;
        q.precision = pr;
        tools::parse_layouts(l, q.a_layout, q.b_layout);
        out.push_back(q);
      }
  }
  return true;
}

// Instances that can implement the problem with cudaMalloc'd (256-byte aligned) buffers.
std::vector<std::string> implementing_instances(const ProblemSpec& spec, const DeviceInfo& dev) {
  const GemmDesc d = resolved(spec.desc());
  GemmOperands fake;
  fake.a = reinterpret_cast<const void*>(std::uintptr_t{1} << 20);
  fake.b = reinterpret_cast<const void*>(std::uintptr_t{2} << 20);
  fake.d = reinterpret_cast<void*>(std::uintptr_t{3} << 20);
  fake.bias = reinterpret_cast<const void*>(std::uintptr_t{4} << 20);
  std::vector<std::string> out;
  for (const GemmKernelEntry* e : gemm_table().candidates(d, alignment_of(d, fake), &dev)) out.emplace_back(e->name);
  return out;
}

void register_problem(const ProblemSpec& spec, const Flags& f, const DeviceInfo& dev) {
  const std::string prefix = "gemm/" + spec.path() + "/";
  auto reg = [&](const std::string& name, What what, const std::string& instance) {
    benchmark::RegisterBenchmark(name.c_str(), [spec, what, instance](benchmark::State& st) { run_gemm(st, spec, what, instance); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  };
  reg(prefix + "cublasLt", What::cublas, "");
  reg(prefix + "ktune", What::ktune_call, "");
  if (f.sweep)
    for (const std::string& inst : implementing_instances(spec, dev)) reg(prefix + inst, What::ktune_instance, inst);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // removes Google Benchmark's own flags from argv
  Flags flags;
  if (!parse_flags(argc, argv, flags)) return 2;

  std::vector<ProblemSpec> problems;
  const auto presets = builtin_presets();
  for (const std::string& want : flags.presets)
    if (std::none_of(presets.begin(), presets.end(), [&](const Preset& p) { return p.name == want; })) {
      std::fprintf(stderr, "bench_gemm: unknown preset '%s' (square, llm, unaligned, fp32)\n", want.c_str());
      return 2;
    }
  for (const Preset& p : presets) {
    if (!flags.presets.empty() && std::find(flags.presets.begin(), flags.presets.end(), p.name) == flags.presets.end()) continue;
    if (flags.presets.empty() && !flags.shapes_file.empty()) continue;  // --shapes alone: only the file's shapes
    const auto& precs = flags.precisions.empty() ? p.precisions : flags.precisions;
    for (Precision pr : precs)
      for (const auto& l : flags.layouts)
        for (const auto& s : p.shapes) problems.push_back(tools::make_problem(s[0], s[1], s[2], pr, l));
  }
  if (!flags.shapes_file.empty() && !read_shapes(flags.shapes_file, flags, problems)) return 2;

  if (ktune::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_gemm: no CUDA device found: no benchmarks registered\n");
    return 0;
  }
  auto gpu_owner = bench::open_gpu<Gpu>("bench_gemm", [](Gpu& g) { return g.cublas.init(); });
  if (!gpu_owner) return 1;
  Gpu& gpu = *gpu_owner;
  g_gpu = &gpu;
  const DeviceInfo& d = gpu.dev;
  benchmark::AddCustomContext("cublaslt", tools::cublaslt_version_string());
  benchmark::AddCustomContext("ktune_instances", std::to_string(gemm_table().size()));
  benchmark::AddCustomContext("timing", "CUDA events around CUDA-graph replays of ~2 ms batches; time is GPU time per GEMM");
  benchmark::AddCustomContext("l2_policy", "inputs rotate over buffer sets totalling >= 2x L2 when one set is smaller");
  benchmark::AddCustomContext("data", "random non-zero values in +-[1/16, 1); ktune outputs verified against cuBLAS first");

  std::set<std::string> seen;
  for (const ProblemSpec& p : problems)
    if (seen.insert(p.path()).second) register_problem(p, flags, d);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_current = Current{};  // free device memory before the CUDA runtime shuts down
  const bool lost = gpu.context_lost;
  g_gpu = nullptr;
  gpu_owner.reset();  // cuBLAS handles, workspace and stream, while the runtime is still up
  return lost ? 1 : 0;
}
