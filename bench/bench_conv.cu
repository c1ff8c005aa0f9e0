// bench/bench_conv.cu — Google Benchmark of ktune's conv2d fprop with the fused bias + ReLU epilogue
// against cuDNN, same data, same process.
//
// Benchmarks are named conv/<type>/n<N>/<H>x<W>_<C>to<K>_<R>x<S>_s<stride>/<what>, <what> being
//   cudnn_fused        cudnnConvolutionBiasActivationForward (IMPLICIT_PRECOMP_GEMM): the reference
//   cudnn_unfused      cudnnConvolutionForward (cuDNN's _v7 choice) + cudnnAddTensor + cudnnActivationForward
//   ktune              ktune::conv2d() with no instance named: the library's own choice (label: the
//                      tuner's conv tactic where conv2d is tuned, else the instance select_conv picks)
//   <instance>         one conv instance by name (with --sweep: every instance that accepts the problem)
// so --benchmark_filter selects by type, batch, layer or instance, e.g.
//   --benchmark_filter='conv/f16/n32/56x56_64to64_3x3'   or   --benchmark_filter='/(cudnn_fused|ktune)/'
//
// Own flags (after Google Benchmark's):
//   --sweep                                   also every conv instance that accepts each problem
//   --preset=resnet50_n32,resnet50_n256,stem_c3
//                                             the 15 ResNet-50 layers of shared/ANCHORS.md at N = 32 or
//                                             256; stem_c3: the C = 3 stem at N = 32 and 256
//                                             (default: resnet50_n32,resnet50_n256)
//   --dtype=f16,bf16                          element type of x, w, y and bias (default f16)
//   --shapes=FILE                             extra problems, one per line: N H W C K R S [stride [pad]]
//                                             [f16|bf16] (tools/common/conv_presets.hpp); alone, only these
//
// Timing (bench/bench_util.cuh): CUDA events around the replay of a CUDA graph holding about 2 ms of
// launches, UseManualTime with the GPU time per call, warm-up first. Inputs are random non-zero values,
// rotated over several buffer sets when one set of x, w and y would fit in twice the L2 cache (the same
// sets for every benchmark of a problem). Every ktune benchmark (and cudnn_unfused) first checks its
// output against cuDNN's fused output (its unfused output where cuDNN has no fused call for the
// problem; relative Frobenius error, NaN-poisoned y) and is reported as an error when it is wrong.
//
// Counters: TF/s (2·N·P·Q·K·R·S·C over GPU time), GB/s (x, w, y and bias each moved once), vs_cuDNN_fused
// and vs_cuDNN_unfused (this TF/s over cuDNN's, measured earlier in this process on the same data;
// > 1: faster than cuDNN), rel_err, anchor_us (cuDNN's time in shared/ANCHORS.md, N = 32 only), graph
// (0: the calls could not be captured and ran back to back).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../tools/common/conv_data.hpp"
#include "../tools/common/conv_presets.hpp"
#include "bench_util.cuh"
#include "ktune/conv.hpp"
#if KTUNE_HAVE_CUDNN
#include "../tools/common/cudnn_conv_ref.hpp"
#endif

namespace ktune {
struct ConvTactic;  // ktune/conv/tactics.hpp, where conv2d is tuned (see conv_choice)
}  // namespace ktune

namespace {

using namespace ktune;
using tools::DeviceBuffer;
using tools::ErrorStats;
using tools::LaunchFn;

enum class What { cudnn_fused, cudnn_unfused, ktune_pick, ktune_instance };

struct Gpu : bench::GpuSession {
#if KTUNE_HAVE_CUDNN
  tools::CudnnConvRef cudnn;
#endif
};
Gpu* g_gpu = nullptr;

// One problem's data (tools/common/conv_data.hpp): buffer sets of x, w, y (several when one set would fit
// in twice the L2 cache), the bias, and the reference output (cuDNN's fused output on set 0).
using tools::ConvData;

// The problem being benchmarked. Benchmarks run in registration order, grouped by problem, so one
// problem's buffers are alive at a time.
struct Current {
  std::string key;
  std::unique_ptr<ConvData> data;
#if KTUNE_HAVE_CUDNN
  std::unique_ptr<tools::CudnnConvRef::Plan> plan;
#endif
  bool have_ref = false;
  std::string ref_name;  // which cuDNN call wrote the reference output
  Status status;
};
Current g_current;
std::map<std::string, double> g_cudnn_tflops[2];  // [fused, unfused]: problem path → TF/s in this process

constexpr double kTolerance = 1e-2;  // relative Frobenius error of f16/bf16 outputs

Status prepare(const Conv2dDesc& d) {
  const std::string key = tools::conv_path(d);
  if (g_current.key == key && g_current.data) return g_current.status;
  g_current = Current{};
  g_current.key = key;
  g_current.data = std::make_unique<ConvData>();
  Status setup = [&]() -> Status {
    ConvData& data = *g_current.data;
    const cudaStream_t s = g_gpu->stream;
    KTUNE_RETURN_IF_ERROR(data.create(d, g_gpu->dev, std::hash<std::string>{}(key), s));
#if KTUNE_HAVE_CUDNN
    // make_plan runs the fused call once on set 0, writing the reference output; where cuDNN has no
    // fused call for the problem, the unfused sequence writes it.
    KTUNE_RETURN_IF_ERROR(g_gpu->cudnn.make_plan(d, data.ref_ops(), s, g_current.plan));
    g_current.ref_name = "cuDNN fused";
    if (!g_current.plan->fused_status.ok()) {
      KTUNE_RETURN_IF_ERROR(g_gpu->cudnn.run_unfused(*g_current.plan, data.ref_ops(), s));
      g_current.ref_name = "cuDNN unfused";
    }
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(s), "cuDNN reference"));
    g_current.have_ref = true;
#endif
    return {};
  }();
  std::swap(g_current.status, setup);
  return g_current.status;
}

void fail(benchmark::State& state, const std::string& msg) { g_gpu->fail(state, msg); }

// The reference a benchmark's own output is (so it is not checked against itself).
const char* ref_name_of(What w) {
  return w == What::cudnn_fused ? "cuDNN fused" : w == What::cudnn_unfused ? "cuDNN unfused" : "";
}

// What ktune::conv2d() runs for this problem now: the default tuner's conv tactic where the tuner
// handles conv2d (Tuner::select_conv, ktune/conv/tactics.hpp), else the heuristic's instance. Tactic is a
// template parameter so that this compiles with and without conv tuning in the headers.
template <class Tuner, class Tactic = ConvTactic>
std::string conv_choice(Tuner& t, const Conv2dDesc& d, const Conv2dOperands& o, cudaStream_t s) {
  if constexpr (requires(const Tactic*& p) { t.select_conv(d, o, s, p); }) {
    const Tactic* p = nullptr;
    if (t.select_conv(d, o, s, p).ok() && p != nullptr) return p->name;
  }
  const ConvKernelEntry* e = nullptr;
  if (select_conv(d, o, conv_table(), g_gpu->dev, {}, e).ok() && e != nullptr) return std::string(e->name);
  return "(no choice)";
}

// Poison set 0's y, run once, compare with the reference.
Status check(const ConvData& data, const LaunchFn& fn, ErrorStats& es) {
  const cudaStream_t s = g_gpu->stream;
  KTUNE_RETURN_IF_ERROR(data.poison(data.ops(0).y, s));
  KTUNE_RETURN_IF_ERROR(fn(0, s));
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(s), "checked run"));
  return data.error_vs_ref(data.ops(0).y, s, es);
}

void run_conv(benchmark::State& state, const Conv2dDesc& d, What what, const std::string& instance, double anchor_us) {
  if (g_gpu->context_lost) return state.SkipWithError("CUDA context lost in an earlier benchmark");
  if (const Status st = prepare(d); !st.ok()) return fail(state, "set-up: " + st.to_string());
  const ConvData& data = *g_current.data;
  const std::string key = g_current.key;

  LaunchFn fn;
  switch (what) {
    case What::cudnn_fused:
    case What::cudnn_unfused: {
#if KTUNE_HAVE_CUDNN
      const tools::CudnnConvRef::Plan* plan = g_current.plan.get();
      const bool fused = what == What::cudnn_fused;
      if (fused && !plan->fused_status.ok()) return state.SkipWithError(("cuDNN fused: " + plan->fused_status.to_string()).c_str());
      state.SetLabel(fused ? plan->fused_label() : plan->unfused_label());
      fn = [plan, fused, &data](int i, cudaStream_t s) {
        return fused ? g_gpu->cudnn.run_fused(*plan, data.ops(i), s) : g_gpu->cudnn.run_unfused(*plan, data.ops(i), s);
      };
      if (anchor_us > 0) state.counters["anchor_us"] = anchor_us;
      break;
#else
      return state.SkipWithError("built without cuDNN");
#endif
    }
    case What::ktune_pick:
      fn = [d, &data](int i, cudaStream_t s) { return ktune::conv2d(d, data.ops(i), s); };
      break;
    case What::ktune_instance:
      fn = [d, instance, &data](int i, cudaStream_t s) {
        ConvOptions opt;
        opt.instance = instance.c_str();
        return ktune::conv2d(d, data.ops(i), s, opt);
      };
      break;
  }
  // Correctness first: against the reference output (cuDNN fused; unfused where there is no fused call).
  if (!g_current.have_ref) {
    state.counters["verified"] = 0;  // no reference without cuDNN
  } else if (g_current.ref_name != ref_name_of(what)) {
    ErrorStats es;
    if (const Status st = check(data, fn, es); !st.ok()) return fail(state, st.to_string());
    if (!es.passes(kTolerance)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "wrong result: relative error %.3e > %.0e vs %s (%lld non-finite outputs)", es.rel,
                    kTolerance, g_current.ref_name.c_str(), static_cast<long long>(es.nonfinite));
      return fail(state, buf);
    }
    state.counters["rel_err"] = es.rel;
  }
  if (what == What::ktune_pick) state.SetLabel(conv_choice(default_tuner(), d, data.ops(0), g_gpu->stream));

  bench::Measured m;
  if (const Status st = bench::time_gpu(state, fn, g_gpu->stream, m); !st.ok()) return fail(state, st.to_string());
  if (m.seconds <= 0.0 || m.launches == 0) return;
  const double tflops = tools::conv_flops(d) / m.per_launch_s() / 1e12;
  state.counters["TF/s"] = tflops;
  state.counters["GB/s"] = tools::conv_bytes(d) / m.per_launch_s() / 1e9;
  state.counters["batch"] = m.batch;
  state.counters["graph"] = m.graph ? 1 : 0;
  if (what == What::cudnn_fused || what == What::cudnn_unfused) {
    g_cudnn_tflops[what == What::cudnn_fused ? 0 : 1][key] = tflops;
  } else {
    const char* names[2] = {"vs_cuDNN_fused", "vs_cuDNN_unfused"};
    for (int r = 0; r < 2; ++r)
      if (const auto it = g_cudnn_tflops[r].find(key); it != g_cudnn_tflops[r].end() && it->second > 0)
        state.counters[names[r]] = tflops / it->second;
  }
}

// ---- Problems and registration --------------------------------------------------------------------------

struct Problem {
  Conv2dDesc desc;
  double anchor_fused_us = 0, anchor_unfused_us = 0;
};

const std::vector<std::string> kPresets = {"resnet50_n32", "resnet50_n256", "stem_c3"};

std::vector<Problem> preset_problems(const std::string& name, DType type) {
  std::vector<Problem> out;
  if (name == "stem_c3") {
    for (int n : {32, 256}) out.push_back({tools::conv_problem(n, tools::resnet50_stem_c3, type)});
    return out;
  }
  const int n = name == "resnet50_n256" ? 256 : 32;
  for (const tools::ConvLayer& l : tools::resnet50_layers()) {
    Problem p{tools::conv_problem(n, l, type)};
    if (n == 32 && type == DType::f16) {  // ANCHORS.md measured f16 at N = 32
      p.anchor_fused_us = l.anchor_fused_us;
      p.anchor_unfused_us = l.anchor_unfused_us;
    }
    out.push_back(p);
  }
  return out;
}

struct Flags : bench::CommonFlags {
  std::vector<DType> types{DType::f16};
};

bool parse_flags(int argc, char** argv, Flags& f) {
  const char* usage =
      "bench_conv's own flags: --sweep --preset=resnet50_n32,resnet50_n256,stem_c3 --dtype=f16,bf16 --shapes=FILE "
      "(see the top of bench/bench_conv.cu)";
  auto type = [](const std::string& t) -> std::optional<DType> {
    if (t == "f16" || t == "fp16") return DType::f16;
    if (t == "bf16") return DType::bf16;
    return std::nullopt;
  };
  if (!bench::parse_args(argc, argv, f, usage,
                         [&](const std::string& a) { return bench::list_flag(a, "--dtype", type, f.types, "f16, bf16"); }))
    return false;
  for (const auto& p : f.presets)
    if (std::find(kPresets.begin(), kPresets.end(), p) == kPresets.end()) {
      std::fprintf(stderr, "--preset: unknown value '%s' (resnet50_n32, resnet50_n256, stem_c3)\n", p.c_str());
      return false;
    }
  if (f.types.empty()) std::fprintf(stderr, "--dtype: no type given (f16, bf16)\n");
  return !f.types.empty();
}

// Instances that accept the problem with cudaMalloc'd (256-byte aligned) buffers on this device.
std::vector<std::string> accepting_instances(const Conv2dDesc& d, const DeviceInfo& dev) {
  const ConvAlignment al = alignment_of(d, tools::placeholder_conv_operands());
  std::vector<std::string> out;
  for (const ConvKernelEntry& e : conv_table().entries())
    if (can_implement(e, d, al, &dev).ok()) out.emplace_back(e.name);
  return out;
}

void register_problem(const Problem& p, const Flags& f, const DeviceInfo& dev) {
  const std::string prefix = "conv/" + tools::conv_path(p.desc) + "/";
  auto reg = [&](const std::string& what_name, What what, const std::string& instance, double anchor) {
    const Conv2dDesc d = p.desc;
    benchmark::RegisterBenchmark((prefix + what_name).c_str(),
                                 [d, what, instance, anchor](benchmark::State& st) { run_conv(st, d, what, instance, anchor); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  };
#if KTUNE_HAVE_CUDNN
  reg("cudnn_fused", What::cudnn_fused, "", p.anchor_fused_us);
  reg("cudnn_unfused", What::cudnn_unfused, "", p.anchor_unfused_us);
#endif
  reg("ktune", What::ktune_pick, "", 0);
  if (f.sweep)
    for (const std::string& inst : accepting_instances(p.desc, dev)) reg(inst, What::ktune_instance, inst, 0);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // removes Google Benchmark's own flags from argv
  Flags flags;
  if (!parse_flags(argc, argv, flags)) return 2;

  std::vector<Problem> problems;
  std::vector<std::string> presets = flags.presets;
  if (presets.empty() && flags.shapes_file.empty()) presets = {"resnet50_n32", "resnet50_n256"};
  for (DType t : flags.types)
    for (const std::string& name : presets)
      for (const Problem& p : preset_problems(name, t)) problems.push_back(p);
  if (!flags.shapes_file.empty()) {
    std::ifstream in(flags.shapes_file);
    std::vector<Conv2dDesc> descs;
    std::string why;
    if (!in) {
      std::fprintf(stderr, "bench_conv: cannot read %s\n", flags.shapes_file.c_str());
      return 2;
    }
    if (!tools::read_conv_shapes(in, flags.shapes_file, flags.types.front(), descs, why)) {
      std::fprintf(stderr, "bench_conv: %s\n", why.c_str());
      return 2;
    }
    for (const Conv2dDesc& d : descs) problems.push_back({d});
  }

  if (ktune::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_conv: no CUDA device found: no benchmarks registered\n");
    return 0;
  }
  auto gpu_owner = bench::open_gpu<Gpu>("bench_conv", [](Gpu& g) {
#if KTUNE_HAVE_CUDNN
    return g.cudnn.init();
#else
    return Status{};
#endif
  });
  if (!gpu_owner) return 1;
  Gpu& gpu = *gpu_owner;
  g_gpu = &gpu;
#if KTUNE_HAVE_CUDNN
  benchmark::AddCustomContext("cudnn", tools::cudnn_version_string());
#else
  benchmark::AddCustomContext("cudnn", "not built with cuDNN: ktune outputs are not verified");
#endif
  benchmark::AddCustomContext("ktune_conv_instances", std::to_string(conv_table().size()));
  benchmark::AddCustomContext("problem", "conv2d fprop, NHWC x, KRSC w, NPQK y, fp32 accumulate, y = relu(conv + bias)");
  benchmark::AddCustomContext("timing", "CUDA events around CUDA-graph replays of ~2 ms batches; time is GPU time per call");
  benchmark::AddCustomContext("l2_policy", "inputs rotate over buffer sets totalling >= 2x L2 when one set is smaller");
  benchmark::AddCustomContext("data", "random non-zero values in +-[1/16, 1); outputs verified against cuDNN fused first");

  std::set<std::string> seen;
  for (const Problem& p : problems)
    if (seen.insert(tools::conv_path(p.desc)).second) register_problem(p, flags, gpu.dev);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_current = Current{};  // free device memory (and cuDNN descriptors) before the runtime shuts down
  const bool lost = gpu.context_lost;
  g_gpu = nullptr;
  gpu_owner.reset();
  return lost ? 1 : 0;
}
