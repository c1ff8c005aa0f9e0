// bench/bench_gemm.cu — Google Benchmark sweeps of ktune's GEMM against cuBLASLt, same data, same
// process.
//
// Benchmarks are named gemm/<precision>/<layout>/<M>x<N>x<K>/<what>, <what> being
//   cublasLt          the reference (cuBLASLt's default heuristic; cublasGemmEx if Lt has none)
//   ktune             ktune::gemm() with no instance named: the one-call API's own choice
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
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../tools/common/gpu_harness.cuh"
#include "ktune/gemm.hpp"

namespace {

using namespace ktune;
using tools::CublasRef;
using tools::ErrorStats;
using tools::LaunchFn;
using tools::Precision;
using tools::ProblemData;
using tools::ProblemSpec;

enum class What { cublas, ktune_heuristic, ktune_instance };

// Process-wide GPU state.
struct Gpu {
  DeviceInfo dev;
  cudaStream_t stream = nullptr;
  CublasRef cublas;
  bool context_lost = false;
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

void fail(benchmark::State& state, const std::string& msg) {
  if (!tools::cuda_context_alive()) g_gpu->context_lost = true;
  state.SkipWithError(msg.c_str());
}

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
    if (what == What::ktune_heuristic) {
      const GemmKernelEntry* pick = nullptr;
      if (select_gemm(desc, data.ops(0), gemm_table(), g_gpu->dev, {}, pick).ok() && pick != nullptr)
        state.SetLabel(std::string(pick->name));
    }
    // Correctness first: NaN-poisoned D, one launch, error against the reference.
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
  }

  // A batch of about 2 ms of launches per timed graph replay (after warm-up).
  double est_ms = 0.0;
  if (const Status st = tools::estimate_launch_ms(fn, stream, 2, est_ms); !st.ok()) return fail(state, st.to_string());
  const int batch = static_cast<int>(std::clamp(std::ceil(2.0 / est_ms), 1.0, 500.0));
  tools::LaunchGraph graph;
  if (const Status st = graph.capture(fn, batch, stream); !st.ok()) return fail(state, st.to_string());
  tools::CudaEvent e0, e1;
  const Status ready = [&]() -> Status {
    KTUNE_RETURN_IF_ERROR(e0.create());
    KTUNE_RETURN_IF_ERROR(e1.create());
    KTUNE_RETURN_IF_ERROR(graph.launch(stream));
    return cuda_status(cudaStreamSynchronize(stream), "graph warm-up");
  }();
  if (!ready.ok()) return fail(state, ready.to_string());

  double total_s = 0.0;
  std::int64_t launches = 0;
  while (state.KeepRunningBatch(batch)) {
    const Status st = [&]() -> Status {
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaEventRecord(e0.get(), stream), "cudaEventRecord"));
      KTUNE_RETURN_IF_ERROR(graph.launch(stream));
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaEventRecord(e1.get(), stream), "cudaEventRecord"));
      return cuda_status(cudaEventSynchronize(e1.get()), "cudaEventSynchronize");
    }();
    if (!st.ok()) return fail(state, st.to_string());
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, e0.get(), e1.get()) != cudaSuccess) return fail(state, "cudaEventElapsedTime failed");
    state.SetIterationTime(ms * 1e-3);
    total_s += ms * 1e-3;
    launches += batch;
  }
  if (total_s <= 0.0 || launches == 0) return;
  const double tflops = spec.flops() * double(launches) / total_s / 1e12;
  const double bytes = data.bytes_per_set();
  state.counters["TF/s"] = tflops;
  state.counters["GB/s"] = bytes * double(launches) / total_s / 1e9;
  state.counters["batch"] = batch;
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

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

struct Flags {
  bool sweep = false;
  std::vector<std::string> presets;           // empty: all
  std::vector<Precision> precisions;          // empty: each preset's own
  std::vector<std::string> layouts{"tn"};
  std::string shapes_file;
};

bool parse_flags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* key, std::string& out) {
      const std::string k = std::string(key) + "=";
      if (a.rfind(k, 0) != 0) return false;
      out = a.substr(k.size());
      return true;
    };
    std::string v;
    if (a == "--sweep") {
      f.sweep = true;
    } else if (val("--preset", v)) {
      f.presets = split(v, ',');
    } else if (val("--dtype", v)) {
      f.precisions.clear();
      for (const auto& d : split(v, ',')) {
        const auto p = tools::parse_precision(d);
        if (!p) {
          std::fprintf(stderr, "bench_gemm: unknown precision '%s' (bf16, f16, f32, tf32)\n", d.c_str());
          return false;
        }
        f.precisions.push_back(*p);
      }
    } else if (val("--layout", v)) {
      f.layouts = split(v, ',');
      for (const auto& l : f.layouts) {
        Layout la, lb;
        if (!tools::parse_layouts(l, la, lb)) {
          std::fprintf(stderr, "bench_gemm: unknown layout '%s' (tn, nn, nt, tt)\n", l.c_str());
          return false;
        }
      }
    } else if (val("--shapes", v)) {
      f.shapes_file = v;
    } else {
      std::fprintf(stderr,
                   "bench_gemm: unknown argument '%s'\n  own flags: --sweep --preset=square,llm,unaligned,fp32 "
                   "--dtype=bf16,f16,f32,tf32 --layout=tn,nn,nt,tt --shapes=FILE (see the top of bench/bench_gemm.cu)\n",
                   a.c_str());
      return false;
    }
  }
  return true;
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
  reg(prefix + "ktune", What::ktune_heuristic, "");
  if (f.sweep)
    for (const std::string& inst : implementing_instances(spec, dev)) reg(prefix + inst, What::ktune_instance, inst);
}

std::string slug(std::string s) {  // "NVIDIA H200" → "nvidia-h200"
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown-gpu" : out;
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
  auto gpu_owner = std::make_unique<Gpu>();
  Gpu& gpu = *gpu_owner;
  g_gpu = &gpu;
  const Status init = [&]() -> Status {
    KTUNE_RETURN_IF_ERROR(current_device(gpu.dev));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&gpu.stream, cudaStreamNonBlocking), "cudaStreamCreate"));
    return gpu.cublas.init();
  }();
  if (!init.ok()) {
    std::fprintf(stderr, "bench_gemm: cannot initialise the GPU: %s\n", init.to_string().c_str());
    return 1;
  }

  const DeviceInfo& d = gpu.dev;
  benchmark::AddCustomContext("gpu", d.name);
  benchmark::AddCustomContext("gpu_slug", slug(d.name));
  benchmark::AddCustomContext("gpu_cc", std::to_string(d.cc));
  benchmark::AddCustomContext("gpu_sms", std::to_string(d.sm_count));
  benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(d.l2_bytes));
  benchmark::AddCustomContext("gpu_fingerprint", d.fingerprint());
  benchmark::AddCustomContext("cuda_driver", tools::cuda_version_string(d.driver_version));
  benchmark::AddCustomContext("cuda_runtime", tools::cuda_version_string(d.runtime_version));
  benchmark::AddCustomContext("cublaslt", tools::cublaslt_version_string());
  benchmark::AddCustomContext("ktune_commit", tools::git_commit());
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
  if (gpu.stream != nullptr) (void)cudaStreamDestroy(gpu.stream);
  const bool lost = gpu.context_lost;
  g_gpu = nullptr;
  gpu_owner.reset();  // cuBLAS handles and workspace, while the runtime is still up
  return lost ? 1 : 0;
}
