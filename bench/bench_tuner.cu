// bench/bench_tuner.cu — what the runtime tuner costs: the host time of a tuned ktune::gemm call (a
// cache hit) next to a raw launch of the same tactic and a cublasLtMatmul call, and the time of the
// first call of a new key (tuning).
//
// Benchmarks:
//   overhead/<precision>/<layout>/<MxNxK>/<what>   host time per call, <what> one of
//       raw        the pinned tactic's launch function (GemmKernelEntry::launch with the tactic's
//                  options, workspace acquired beforehand): the floor of any dispatch
//       ktune      ktune::gemm(desc, ops, stream): validation, tuner lookup, workspace, launch
//       select     Tuner::select alone (the lookup: device, alignment, key, hash, map, atomic)
//       cublasLt   cublasLtMatmul with a plan (descriptors, heuristic algorithm) made beforehand
//   tune/<precision>/<layout>/<MxNxK>              first call of a new key: a fresh tuner (and
//       scratch pool) tunes it with the default options (cost-model top 32, key budget 2 s)
//   cache_load/<entries>                           tuner::load_cache_file of a cache file with that
//       many entries (written beforehand into the temporary directory): read, parse, check and merge
//       into an empty store; host time per load (counters entries, us_per_entry, MB/s). Needs no GPU:
//       on a machine without one these are the only benchmarks that run.
//
// Overhead timing: batches of 100 back-to-back calls on one stream, steady_clock around the batch's
// calls only; the stream is synchronised after each batch, outside the timed part, so the launch
// queue never fills and the GPU time of the kernels is not measured. The reported time (and the
// us_per_call counter) is host microseconds per call; overhead_vs_raw = this minus raw (target: the
// tuned call ≤ 3 µs above raw). Every variant's output is checked against cuBLAS first.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../tools/common/gpu_harness.cuh"
#include "bench_util.cuh"
#include "ktune/gemm.hpp"
#include "ktune/tuner/cache.hpp"
#include "ktune/tuner/cuda_backend.hpp"

namespace {

using namespace ktune;
using tools::CublasRef;
using tools::Precision;
using tools::ProblemData;
using tools::ProblemSpec;

constexpr int kBatch = 100;

struct Gpu : bench::GpuSession {
  CublasRef cublas;
};
Gpu* g_gpu = nullptr;

// One problem's data, reference and tuned tactic, made on first use.
struct Prepared {
  std::unique_ptr<ProblemData> data;
  std::unique_ptr<CublasRef::Plan> plan;
  const GemmTactic* tactic = nullptr;
  GemmOperands raw_ops;  // set 0 with the tactic's workspace
  Status status;
};
std::map<std::string, Prepared> g_prepared;
std::map<std::string, double> g_raw_us;  // problem path → raw µs per call measured in this process

Status check_output(const ProblemData& data, cudaStream_t s, const std::function<Status()>& run) {
  tools::ErrorStats es;
  KTUNE_RETURN_IF_ERROR(data.poison(0, s));
  KTUNE_RETURN_IF_ERROR(run());
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(s), "checked run"));
  KTUNE_RETURN_IF_ERROR(data.error_vs_ref(data.ops(0).d, s, es));
  if (!es.passes(data.spec().tol()))
    return error(StatusCode::internal, "wrong result: relative error " + std::to_string(es.rel));
  return {};
}

// The problem's data and cuBLAS reference; with `tactic`, also the default tuner's tactic (the first
// ktune::gemm call tunes the key; later calls hit the pinned tactic).
Prepared& prepare(const ProblemSpec& spec, bool tactic = true) {
  Prepared& p = g_prepared[spec.path()];
  if (!p.data) {
    p.data = std::make_unique<ProblemData>();
    (void)(p.status = [&]() -> Status {
      const cudaStream_t s = g_gpu->stream;
      KTUNE_RETURN_IF_ERROR(p.data->create(spec, g_gpu->dev, 1234, s, /*max_sets=*/1));
      const GemmOperands o = p.data->ops(0);
      KTUNE_RETURN_IF_ERROR(g_gpu->cublas.make_plan(spec, p.data->bias(), p.plan));
      KTUNE_RETURN_IF_ERROR(g_gpu->cublas.run(*p.plan, o.a, o.b, p.data->ref(), s));
      return cuda_status(cudaStreamSynchronize(s), "cuBLAS reference");
    }());
  }
  if (!tactic || !p.status.ok() || p.tactic != nullptr) return p;
  (void)(p.status = [&]() -> Status {
    const cudaStream_t s = g_gpu->stream;
    const GemmOperands o = p.data->ops(0);
    KTUNE_RETURN_IF_ERROR(check_output(*p.data, s, [&] { return ktune::gemm(spec.desc(), o, s); }));
    KTUNE_RETURN_IF_ERROR(default_tuner().select(spec.desc(), o, s, p.tactic));
    p.raw_ops = o;
    const std::size_t need = workspace_bytes_for(*p.tactic->entry, p.data->desc(), p.tactic->launch);
    if (need > 0)
      KTUNE_RETURN_IF_ERROR(gemm_workspace_pool().acquire(s, need, p.raw_ops.workspace, p.raw_ops.workspace_bytes));
    const GemmTactic* t = p.tactic;
    const GemmDesc d = p.data->desc();
    const GemmOperands ro = p.raw_ops;
    return check_output(*p.data, s, [&] { return t->entry->launch(d, ro, t->launch, s); });
  }());
  return p;
}

enum class What { raw, ktune, select, cublas };
constexpr const char* name_of(What w) {
  switch (w) {
    case What::raw: return "raw";
    case What::ktune: return "ktune";
    case What::select: return "select";
    case What::cublas: return "cublasLt";
  }
  return "?";
}

void bench_overhead(benchmark::State& state, const ProblemSpec& spec, What what) {
  Prepared& p = prepare(spec);
  if (!p.status.ok()) return state.SkipWithError(("set-up: " + p.status.to_string()).c_str());
  const cudaStream_t s = g_gpu->stream;
  const GemmDesc desc = spec.desc();          // as a caller passes it (leading dimensions 0)
  const GemmDesc resolved_desc = p.data->desc();
  const GemmOperands ops = p.data->ops(0);
  const GemmTactic* t = p.tactic;
  const CublasRef::Plan* plan = p.plan.get();
  state.SetLabel(what == What::cublas ? plan->api() : t->name);
  Status st;
  auto call = [&]() -> Status {
    switch (what) {
      case What::raw: return t->entry->launch(resolved_desc, p.raw_ops, t->launch, s);
      case What::ktune: return ktune::gemm(desc, ops, s);
      case What::select: {
        const GemmTactic* x = nullptr;
        return default_tuner().select(desc, ops, s, x);
      }
      case What::cublas: return g_gpu->cublas.run(*plan, ops.a, ops.b, ops.d, s);
    }
    return {};
  };
  // Warm-up (first-call effects: lazy module loading, pool growth).
  for (int i = 0; i < kBatch && st.ok(); ++i) (void)(st = call());
  if (st.ok()) (void)(st = cuda_status(cudaStreamSynchronize(s), "warm-up"));
  if (!st.ok()) return state.SkipWithError(st.to_string().c_str());
  double total_s = 0;
  std::int64_t calls = 0;
  while (state.KeepRunningBatch(kBatch)) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i)
      if (Status x = call(); !x.ok() && st.ok()) (void)(st = x);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(sec);  // the batch's time; KeepRunningBatch counts kBatch iterations (calls)
    total_s += sec;
    calls += kBatch;
    if (Status x = cuda_status(cudaStreamSynchronize(s), "batch"); !x.ok() && st.ok()) (void)(st = x);
    if (!st.ok()) return state.SkipWithError(st.to_string().c_str());
  }
  if (calls == 0) return;
  const double us = total_s / double(calls) * 1e6;
  state.counters["us_per_call"] = us;
  if (what == What::raw) g_raw_us[spec.path()] = us;
  else if (auto it = g_raw_us.find(spec.path()); it != g_raw_us.end()) state.counters["overhead_vs_raw_us"] = us - it->second;
}

// First call of a new key: a fresh tuner with a fresh scratch pool (as in a new process), default options.
void bench_tune(benchmark::State& state, const ProblemSpec& spec) {
  Prepared& p = prepare(spec, /*tactic=*/false);
  if (!p.status.ok()) return state.SkipWithError(("set-up: " + p.status.to_string()).c_str());
  const GemmDesc desc = spec.desc();
  const GemmAlignment al = alignment_of(desc, p.data->ops(0));
  tuner::TuningReport last;
  for (auto _ : state) {
    tuner::TunerOptions o;
    o.log_level = tuner::LogLevel::off;
    tuner::Tuner t(std::make_shared<tuner::CudaBackend>(), &gemm_table(), o);
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = t.tune(desc, al, &last, /*force=*/true);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t.release_scratch();
    if (!s.ok()) return state.SkipWithError(s.to_string().c_str());
    state.SetIterationTime(sec);
  }
  const std::size_t measured = last.count(tuner::TacticStatus::selected) + last.count(tuner::TacticStatus::measured) +
                               last.count(tuner::TacticStatus::slower_than_best);
  state.counters["tactics_measured"] = double(measured);
  state.counters["tactics_failed"] = double(last.count(tuner::TacticStatus::failed_validation) +
                                            last.count(tuner::TacticStatus::failed_launch) +
                                            last.count(tuner::TacticStatus::exceeded_time_bound));
  state.counters["tactics_pruned"] = double(last.count(tuner::TacticStatus::pruned_by_model) +
                                            last.count(tuner::TacticStatus::pruned_by_budget));
  state.counters["winner_ms"] = last.winner_ms;
  state.counters["scratch_MiB"] = double(last.scratch_bytes) / double(1u << 20);
  state.SetLabel(std::string(tuner::to_string(last.source)) + " " + last.winner);
}

// A cache file of `entries` distinct bf16 keys (M = 1.., N and K from LLM layers), as a long-running
// service that has tuned many shapes would have; the identity is this build's with a placeholder device.
std::string write_cache_file(int entries) {
  tuner::CacheStore store;
  const std::int64_t nk[4][2] = {{4096, 4096}, {11008, 4096}, {4096, 11008}, {28672, 8192}};
  for (int i = 0; i < entries; ++i) {
    GemmDesc d = tools::make_problem(1 + i / 4, nk[i % 4][0], nk[i % 4][1], Precision::bf16).desc();
    tuner::CacheEntry e;
    e.key = tuner::make_key(d, GemmAlignment{8, 8, 8});
    e.id = tuner::CacheIdentity{"bench-device|cc90|sm132", std::string(tuner::ktune_version), "0123456789abcdef"};
    e.instance = "ktune_gemm_sm90_wgmma_bf16_tn_128x256x64_w64x256_s4_a8";
    e.launch = i % 3 == 0 ? "split4s" : "";
    e.ms = 0.01 + 1e-5 * i;
    e.tflops = 2.0 * double(d.m) * double(d.n) * double(d.k) / (e.ms * 1e-3) / 1e12;
    store.insert(e);
  }
  const auto path = std::filesystem::temp_directory_path() /
                    ("ktune_bench_cache_" + std::to_string(::getpid()) + "_" + std::to_string(entries) + ".jsonl");
  std::ofstream(path, std::ios::binary) << store.serialize();
  return path.string();
}

void bench_cache_load(benchmark::State& state, int entries) {
  const std::string path = write_cache_file(entries);
  std::error_code ec;
  const double bytes = double(std::filesystem::file_size(path, ec));
  std::size_t loaded = 0;
  double total_s = 0.0;
  std::int64_t loads = 0;
  for (auto _ : state) {
    tuner::CacheStore store;
    std::vector<std::string> warnings;
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = tuner::load_cache_file(path, store, warnings);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    loaded = store.size();
    if (!s.ok() || !warnings.empty() || loaded != std::size_t(entries)) {
      std::filesystem::remove(path, ec);
      return state.SkipWithError(("cache load: " + s.to_string() + ", " + std::to_string(loaded) + " of " +
                                  std::to_string(entries) + " entries, " + std::to_string(warnings.size()) + " warnings" +
                                  (warnings.empty() ? std::string() : ": " + warnings.front()))
                                     .c_str());
    }
    state.SetIterationTime(sec);
    total_s += sec;
    ++loads;
  }
  std::filesystem::remove(path, ec);
  if (loads == 0 || total_s <= 0.0) return;
  const double per_load_s = total_s / double(loads);
  state.counters["entries"] = double(loaded);
  state.counters["file_KiB"] = bytes / 1024.0;
  state.counters["us_per_entry"] = per_load_s * 1e6 / double(entries);
  state.counters["MB/s"] = bytes * 1e-6 / per_load_s;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc > 1) {
    std::fprintf(stderr, "bench_tuner: unknown argument '%s' (only Google Benchmark flags)\n", argv[1]);
    return 2;
  }
  for (int entries : {1000, 10000})
    benchmark::RegisterBenchmark(("cache_load/" + std::to_string(entries)).c_str(),
                                 [entries](benchmark::State& st) { bench_cache_load(st, entries); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  if (ktune::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_tuner: no CUDA device found: only the cache_load benchmarks run\n");
    benchmark::AddCustomContext("ktune_commit", tools::git_commit());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  auto gpu = bench::open_gpu<Gpu>("bench_tuner", [](Gpu& g) { return g.cublas.init(); });
  if (!gpu) return 1;
  g_gpu = gpu.get();
  benchmark::AddCustomContext("overhead_timing", "host steady_clock around batches of 100 back-to-back calls, stream synchronised between batches (untimed); time = host us per call");

  const std::vector<ProblemSpec> small = {tools::make_problem(256, 256, 256, Precision::bf16),
                                          tools::make_problem(128, 128, 128, Precision::f16),
                                          tools::make_problem(16, 4096, 4096, Precision::bf16)};
  for (const ProblemSpec& spec : small)
    for (What w : {What::raw, What::ktune, What::select, What::cublas})
      benchmark::RegisterBenchmark(("overhead/" + spec.path() + "/" + name_of(w)).c_str(),
                                   [spec, w](benchmark::State& st) { bench_overhead(st, spec, w); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
  const std::vector<ProblemSpec> tune_keys = {
      tools::make_problem(4096, 4096, 4096, Precision::bf16), tools::make_problem(16, 4096, 4096, Precision::bf16),
      tools::make_problem(1024, 1024, 1024, Precision::f16), tools::make_problem(4095, 4097, 4093, Precision::bf16),
      tools::make_problem(256, 256, 256, Precision::bf16)};
  for (const ProblemSpec& spec : tune_keys)
    benchmark::RegisterBenchmark(("tune/" + spec.path()).c_str(), [spec](benchmark::State& st) { bench_tune(st, spec); })
        ->UseManualTime()
        ->Iterations(3)
        ->Unit(benchmark::kMillisecond);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_prepared.clear();  // device memory, while the runtime is up
  g_gpu = nullptr;
  gpu.reset();
  return 0;
}
