// bench/bench_util.cuh — what the Google Benchmark programs share: the GPU timing loop (warm-up, a CUDA
// graph of about 2 ms of launches, CUDA events around each replay, UseManualTime with GPU time per
// launch), the run context every result file records (GPU, driver, CUDA, commit), and flag helpers.
#pragma once
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../tools/common/gpu_harness.cuh"
#include "ktune/device.hpp"

namespace ktune::bench {

// The device and stream of a benchmark program (one per process; programs derive their reference
// library handles from it). The stream is destroyed after the derived members.
struct GpuSession {
  DeviceInfo dev;
  cudaStream_t stream = nullptr;
  bool context_lost = false;  // a sticky CUDA error: later benchmarks are skipped

  GpuSession() = default;
  GpuSession(const GpuSession&) = delete;
  GpuSession& operator=(const GpuSession&) = delete;
  ~GpuSession() {
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
  Status open() {
    KTUNE_RETURN_IF_ERROR(current_device(dev));
    return cuda_status(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  // Report a failed benchmark; remember when the CUDA context did not survive it.
  void fail(benchmark::State& state, const std::string& msg) {
    if (!tools::cuda_context_alive()) context_lost = true;
    state.SkipWithError(msg.c_str());
  }
};

// The program's GPU state G (a GpuSession with its reference libraries): the session opened, then
// `init(G&)`, then the context every result file carries (add_gpu_context). Null, after saying why on
// stderr, when a step fails.
template <class G, class Init>
std::unique_ptr<G> open_gpu(const char* program, Init&& init);

// What one benchmark's timed loop measured: total GPU seconds over `launches` launches.
struct Measured {
  double seconds = 0.0;
  std::int64_t launches = 0;
  int batch = 0;       // launches per timed replay
  bool graph = false;  // false: the launches could not be captured and ran one by one
  double per_launch_s() const { return launches > 0 ? seconds / double(launches) : 0.0; }
};

// Warm up `fn`, capture about `target_ms` of launches into a CUDA graph, and time each replay with
// CUDA events for as long as Google Benchmark asks (SetIterationTime: one iteration = one launch).
inline Status time_gpu(benchmark::State& state, const tools::LaunchFn& fn, cudaStream_t stream, Measured& out,
                       double target_ms = 2.0) {
  out = Measured{};
  double est_ms = 0.0;
  KTUNE_RETURN_IF_ERROR(tools::estimate_launch_ms(fn, stream, 2, est_ms));
  const int batch = static_cast<int>(std::clamp(std::ceil(target_ms / est_ms), 1.0, 500.0));
  tools::LaunchGraph graph;
  KTUNE_RETURN_IF_ERROR(graph.capture(fn, batch, stream));
  tools::CudaEvent e0, e1;
  KTUNE_RETURN_IF_ERROR(e0.create());
  KTUNE_RETURN_IF_ERROR(e1.create());
  KTUNE_RETURN_IF_ERROR(graph.launch(stream));  // warm the graph (upload, first replay)
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "graph warm-up"));
  out.batch = batch;
  out.graph = graph.is_graph();
  while (state.KeepRunningBatch(batch)) {
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaEventRecord(e0.get(), stream), "cudaEventRecord"));
    KTUNE_RETURN_IF_ERROR(graph.launch(stream));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaEventRecord(e1.get(), stream), "cudaEventRecord"));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(e1.get()), "cudaEventSynchronize"));
    float ms = 0.0f;
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaEventElapsedTime(&ms, e0.get(), e1.get()), "cudaEventElapsedTime"));
    state.SetIterationTime(ms * 1e-3);
    out.seconds += ms * 1e-3;
    out.launches += batch;
  }
  return {};
}

inline std::string slug(const std::string& s) {  // "NVIDIA H200" → "nvidia-h200" (the bench/results/ folder)
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

// The context keys every result file carries (Google Benchmark writes them into --benchmark_out).
inline void add_gpu_context(const DeviceInfo& d) {
  benchmark::AddCustomContext("gpu", d.name);
  benchmark::AddCustomContext("gpu_slug", slug(d.name));
  benchmark::AddCustomContext("gpu_cc", std::to_string(d.cc));
  benchmark::AddCustomContext("gpu_sms", std::to_string(d.sm_count));
  benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(d.l2_bytes));
  benchmark::AddCustomContext("gpu_fingerprint", d.fingerprint());
  benchmark::AddCustomContext("cuda_driver", tools::cuda_version_string(d.driver_version));
  benchmark::AddCustomContext("cuda_runtime", tools::cuda_version_string(d.runtime_version));
  benchmark::AddCustomContext("ktune_commit", tools::git_commit());
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

// "--key=value" → value, when `arg` is that flag.
inline bool flag_value(const std::string& arg, const char* key, std::string& out) {
  const std::string k = std::string(key) + "=";
  if (arg.rfind(k, 0) != 0) return false;
  out = arg.substr(k.size());
  return true;
}

// The flags every sweep benchmark takes: --sweep, --preset=a,b, --shapes=FILE.
struct CommonFlags {
  bool sweep = false;                // also every instance that can implement each problem
  std::vector<std::string> presets;  // empty: the program's default
  std::string shapes_file;
};

// True when `arg` is one of CommonFlags' flags (and stores it).
inline bool parse_common_flag(const std::string& arg, CommonFlags& f) {
  std::string v;
  if (arg == "--sweep") f.sweep = true;
  else if (flag_value(arg, "--preset", v)) f.presets = split(v, ',');
  else if (flag_value(arg, "--shapes", v)) f.shapes_file = v;
  else return false;
  return true;
}

template <class G, class Init>
std::unique_ptr<G> open_gpu(const char* program, Init&& init) {
  auto g = std::make_unique<G>();
  Status st = g->open();
  if (st.ok()) (void)(st = init(*g));
  if (!st.ok()) {
    std::fprintf(stderr, "%s: cannot initialise the GPU: %s\n", program, st.to_string().c_str());
    return nullptr;
  }
  add_gpu_context(g->dev);
  return g;
}

// Every argument Google Benchmark left: CommonFlags' own, else `own(arg)`: 1 = taken, 0 = not a flag
// of this program (`usage` is printed), -1 = taken but bad (`own` printed why).
template <class Own>
bool parse_args(int argc, char** argv, CommonFlags& f, const char* usage, Own&& own) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (parse_common_flag(a, f)) continue;
    const int taken = own(a);
    if (taken < 0) return false;
    if (taken == 0) {
      std::fprintf(stderr, "unknown argument '%s'\n%s\n", a.c_str(), usage);
      return false;
    }
  }
  return true;
}

// "--key=a,b" → `out` = each item through `parse` (returning an optional): 1, or -1 after naming the
// first item it rejects; 0 when `arg` is not --key.
template <class T, class Parse>
int list_flag(const std::string& arg, const char* key, Parse&& parse, std::vector<T>& out, const char* choices) {
  std::string v;
  if (!flag_value(arg, key, v)) return 0;
  out.clear();
  for (const std::string& item : split(v, ',')) {
    const auto x = parse(item);
    if (!x) {
      std::fprintf(stderr, "%s: unknown value '%s' (%s)\n", key, item.c_str(), choices);
      return -1;
    }
    out.push_back(*x);
  }
  return 1;
}

}  // namespace ktune::bench
