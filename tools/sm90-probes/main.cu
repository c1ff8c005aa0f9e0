// tools/sm90-probes/main.cu — ktune-sm90-probes: experimental Hopper schedules (variants.cuh: ping-pong
// consumers, TMA-store epilogue, TFLOAT32 tensor maps) timed next to the default sm90 instances and
// cuBLASLt on the same data in the same process, the way ktune-profile times (CUDA-graph replays between
// events, buffer sets rotated past the L2, median of the repeats). The probes exist only in this binary.
//
//   ktune-sm90-probes [--dtype bf16|f16|tf32] [--gemm MxNxK] [--filter TEXT]... [--cluster 1,2]
//                     [--raster 8,16] [--repeats N] [--ms MS] [--no-f64] [--paired] [--small] [--bias-relu]
//   ktune-sm90-probes --fill gemm|conv ...   (fill.cu: the TMA's fill rate of one stage ring, no wgmma)
//
// Every instance whose name contains one of the filters (default: every sm90 instance of the precision)
// runs once per launch variant (cluster size × raster group) on NaN-poisoned D and is compared with
// cuBLASLt's output (and with a float64-accumulating reference GEMM unless --no-f64), then timed.
// cuBLASLt is timed again before every instance, and each ratio is against that neighbouring timing
// (clocks drift by several % over a run: on the H200 cuBLASLt ran 798 TF/s cold, 620-700 under load).
// --paired: each launch variant instead alternates with cuBLASLt, round by round (one graph replay of
// ~MS of each per round, N rounds), and reports the median of the per-round ratios: both see the same
// clocks and temperature. --small: 264x392x200, one checked launch per instance on 2 CTAs,
// no timing (for compute-sanitizer: each CTA walks several tiles, partial ones included, the ring wraps).
// --bias-relu: D = relu(A·B + bias[col]) for ktune and cuBLASLt (its BIAS epilogue) and the float64
// reference (the fused epilogue of cuDNN's 1x1 convolutions), instead of D = A·B.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/gpu_harness.cuh"

namespace ktune::probes {
int resident_clusters_of_2(int threads, int smem_bytes);  // occupancy.cu
int fill_main(int argc, char** argv);                     // fill.cu: --fill gemm|conv
}

namespace {

using namespace ktune;
using namespace ktune::tools;

struct Args {
  Precision precision = Precision::bf16;
  std::int64_t m = 4096, n = 4096, k = 4096;
  std::vector<std::string> filters;
  std::vector<int> clusters{1};
  std::vector<int> rasters{8};
  int repeats = 5;
  double ms_per_repeat = 10.0;
  bool f64 = true;
  bool paired = false;
  bool small = false;
  bool bias_relu = false;
};

bool parse_shape(const char* s, Args& a) {
  long long m = 0, n = 0, k = 0;
  if (std::sscanf(s, "%lldx%lldx%lld", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) return false;
  a.m = m;
  a.n = n;
  a.k = k;
  return true;
}

// "1,2" -> {1, 2}; every value in [lo, hi].
bool parse_list(const char* s, int lo, int hi, std::vector<int>& out) {
  out.clear();
  std::string t(s);
  std::size_t pos = 0;
  while (pos <= t.size()) {
    const std::size_t end = std::min(t.find(',', pos), t.size());
    const int v = std::atoi(t.substr(pos, end - pos).c_str());
    if (v < lo || v > hi) return false;
    out.push_back(v);
    pos = end + 1;
  }
  return !out.empty();
}

int usage() {
  std::fprintf(stderr, "usage: ktune-sm90-probes [--dtype bf16|f16|tf32] [--gemm MxNxK] [--filter TEXT]... "
                       "[--cluster 1,2] [--raster 8,16] [--repeats N] [--ms MS] [--no-f64] [--paired] [--small] [--bias-relu]\n");
  return 2;
}

// Alternate `rounds` replays of a cuBLASLt graph and an instance graph (~ms each); per-launch median times
// of each and the median of the per-round ratios cuBLASLt / instance.
struct Paired {
  double ref_ms = 0.0, ms = 0.0, ratio = 0.0;
};
Status time_paired(const LaunchFn& ref, const LaunchFn& fn, cudaStream_t s, double ms_per_replay, int rounds, Paired& out) {
  double est_ref = 0.0, est = 0.0;
  KTUNE_RETURN_IF_ERROR(estimate_launch_ms(ref, s, 2, est_ref));
  KTUNE_RETURN_IF_ERROR(estimate_launch_ms(fn, s, 2, est));
  auto iters_for = [&](double e) { return static_cast<int>(std::clamp(std::ceil(ms_per_replay / e), 1.0, 1000.0)); };
  LaunchGraph gr, gk;
  KTUNE_RETURN_IF_ERROR(gr.capture(ref, iters_for(est_ref), s));
  KTUNE_RETURN_IF_ERROR(gk.capture(fn, iters_for(est), s));
  KTUNE_RETURN_IF_ERROR(gr.launch(s));
  KTUNE_RETURN_IF_ERROR(gk.launch(s));
  KTUNE_TOOLS_CUDA(cudaStreamSynchronize(s));
  CudaEvent e0, e1, e2;
  KTUNE_RETURN_IF_ERROR(e0.create());
  KTUNE_RETURN_IF_ERROR(e1.create());
  KTUNE_RETURN_IF_ERROR(e2.create());
  std::vector<double> tr, tk, ratio;
  for (int r = 0; r < std::max(1, rounds); ++r) {
    // Alternate which goes first, so neither always runs on the hotter GPU.
    const LaunchGraph& first = r % 2 ? gk : gr;
    const LaunchGraph& second = r % 2 ? gr : gk;
    KTUNE_TOOLS_CUDA(cudaEventRecord(e0.get(), s));
    KTUNE_RETURN_IF_ERROR(first.launch(s));
    KTUNE_TOOLS_CUDA(cudaEventRecord(e1.get(), s));
    KTUNE_RETURN_IF_ERROR(second.launch(s));
    KTUNE_TOOLS_CUDA(cudaEventRecord(e2.get(), s));
    KTUNE_TOOLS_CUDA(cudaEventSynchronize(e2.get()));
    float t1 = 0.0f, t2 = 0.0f;
    KTUNE_TOOLS_CUDA(cudaEventElapsedTime(&t1, e0.get(), e1.get()));
    KTUNE_TOOLS_CUDA(cudaEventElapsedTime(&t2, e1.get(), e2.get()));
    const double a = double(r % 2 ? t2 : t1) / gr.iters(), b = double(r % 2 ? t1 : t2) / gk.iters();
    tr.push_back(a);
    tk.push_back(b);
    ratio.push_back(a / b);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  out = Paired{median(tr), median(tk), median(ratio)};
  return {};
}

struct Best {
  std::string name;
  double ms = 0.0, ratio = 0.0;
};

Status run(const Args& a, int& failures) {
  DeviceInfo dev;
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  if (dev.cc != 90) return error(StatusCode::no_instance, "the probes are sm_90a kernels: needs compute capability 9.0");
  cudaStream_t s = nullptr;
  KTUNE_TOOLS_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const ProblemSpec spec = make_problem(a.m, a.n, a.k, a.precision, "tn", a.bias_relu);
  ProblemData data;
  KTUNE_RETURN_IF_ERROR(data.create(spec, dev, 20261130, s, a.small ? 1 : 32));
  CublasRef cublas;
  KTUNE_RETURN_IF_ERROR(cublas.init());
  std::unique_ptr<CublasRef::Plan> plan;
  KTUNE_RETURN_IF_ERROR(cublas.make_plan(spec, a.bias_relu ? data.bias() : nullptr, plan));
  const GemmOperands o0 = data.ops(0);
  KTUNE_RETURN_IF_ERROR(cublas.run(*plan, o0.a, o0.b, data.ref(), s));
  ErrorStats cublas_err;
  if (a.f64) {
    KTUNE_RETURN_IF_ERROR(data.compute_ref32(s));
    KTUNE_RETURN_IF_ERROR(data.ref_vs_ref32(s, cublas_err));
  }

  TimingOptions topt;
  topt.repeats = a.repeats;
  topt.target_ms_per_repeat = a.ms_per_repeat;
  auto time_cublas = [&](Timing& t) {
    return time_launches(
        [&](int i, cudaStream_t st) {
          const GemmOperands o = data.ops(i);
          return cublas.run(*plan, o.a, o.b, o.d, st);
        },
        s, topt, t);
  };
  Timing tc;
  if (!a.small) KTUNE_RETURN_IF_ERROR(time_cublas(tc));
  std::printf("%s on %s (%d SMs): %d buffer set(s), median of %d repeats, ~%.0f ms each\n", spec.name().c_str(),
              dev.name.c_str(), dev.sm_count, data.sets(), a.repeats, a.ms_per_repeat);
  std::printf("  %-70s %8s %8s %10s %10s %7s\n", "instance@launch", "ms", "TF/s", "err/cuBLAS", "err/f64", "x cuBLAS");
  std::printf("  %-70s %8.4f %8.1f %10s %10.2e %7s\n", "cuBLASLt", tc.median_ms, tflops(spec.flops(), tc.median_ms), "-",
              cublas_err.rel, "1.00");

  if (std::find(a.clusters.begin(), a.clusters.end(), 2) != a.clusters.end())
    std::printf("  clusters of 2 resident at once (384 threads, 227 KB shared memory): %d, on %d SMs\n",
                probes::resident_clusters_of_2(384, 227 * 1024), dev.sm_count);
  const GemmDesc d = data.desc();
  const std::string prefix = "ktune_gemm_sm90_wgmma_" + std::string(to_string(a.precision)) + "_tn_";
  std::vector<double> cublas_ms{tc.median_ms};
  Best best;
  for (const GemmKernelEntry& e : gemm_table().entries()) {
    const std::string name(e.name);
    bool match = a.filters.empty() ? name.rfind(prefix, 0) == 0 : false;
    for (const auto& f : a.filters) match |= name.find(f) != std::string::npos;
    if (!match) continue;
    const Status can = can_implement(e, d, alignment_of(d, o0), &dev);
    if (!can.ok()) continue;
    // cuBLASLt again right before this instance: its ratios compare neighbouring timings.
    Timing tn;
    if (!a.small && !a.paired && cublas_ms.size() > 1) KTUNE_RETURN_IF_ERROR(time_cublas(tn));
    const double ref_ms = a.small ? 0.0 : (cublas_ms.size() > 1 ? tn.median_ms : tc.median_ms);
    cublas_ms.push_back(ref_ms);
    if (!a.small && !a.paired && cublas_ms.size() > 2)
      std::printf("  %-70s %8.4f %8.1f\n", "cuBLASLt (again)", ref_ms, tflops(spec.flops(), ref_ms));
    for (const int cl : a.clusters) {
      for (const int rg : a.rasters) {
        GemmLaunchOptions lo;
        lo.cluster = cl;
        lo.raster_group = rg;
        std::string label = name;
        if (cl != 1) label += "@cl" + std::to_string(cl);
        if (rg != 8) label += "@rg" + std::to_string(rg);
        KTUNE_RETURN_IF_ERROR(data.poison(0, s));
        // --small: two CTAs walk all tiles (ping-pong consumers alternate, the ring wraps across tiles).
        GemmLaunchOptions check = lo;
        if (a.small) check.max_ctas = 2 * cl;
        const Status launched = e.launch(d, o0, check, s);
        const cudaError_t synced = cudaStreamSynchronize(s);
        ErrorStats err, err64;
        if (launched.ok() && synced == cudaSuccess) {
          KTUNE_RETURN_IF_ERROR(data.error_vs_ref(o0.d, s, err));
          if (a.f64) KTUNE_RETURN_IF_ERROR(data.error_vs_ref32(o0.d, s, err64));
        }
        const bool pass = launched.ok() && synced == cudaSuccess && err.passes(spec.tol());
        failures += pass ? 0 : 1;
        Timing t;
        double ratio = 0.0;
        std::string extra;
        const LaunchFn instance_fn = [&](int i, cudaStream_t st) { return e.launch(d, data.ops(i), lo, st); };
        if (pass && !a.small && a.paired) {
          Paired pr;
          KTUNE_RETURN_IF_ERROR(time_paired(
              [&](int i, cudaStream_t st) {
                const GemmOperands o = data.ops(i);
                return cublas.run(*plan, o.a, o.b, o.d, st);
              },
              instance_fn, s, a.ms_per_repeat, a.repeats, pr));
          t.median_ms = pr.ms;
          ratio = pr.ratio;
          cublas_ms.push_back(pr.ref_ms);
          char buf[64];
          std::snprintf(buf, sizeof buf, "  (cuBLASLt %.1f TF/s in the same rounds)", tflops(spec.flops(), pr.ref_ms));
          extra = buf;
        } else if (pass && !a.small) {
          KTUNE_RETURN_IF_ERROR(time_launches(instance_fn, s, topt, t));
          ratio = ref_ms / t.median_ms;
        }
        std::printf("%c %-70s %8.4f %8.1f %10.2e %10.2e %7.3f%s%s%s\n", pass ? ' ' : '!', label.c_str(), t.median_ms,
                    tflops(spec.flops(), t.median_ms), err.rel, err64.rel, ratio, extra.c_str(), pass ? "" : "  FAIL ",
                    launched.ok() ? "" : launched.message().c_str());
        if (synced != cudaSuccess) return cuda_status(synced, "instance run");
        if (pass && !a.small && ratio > best.ratio) best = Best{label, t.median_ms, ratio};
      }
    }
  }
  if (!a.small && !best.name.empty()) {
    std::vector<double> c = cublas_ms;
    std::sort(c.begin(), c.end());
    std::printf("best %s %.4f ms %.1f TF/s = %.3fx its neighbouring cuBLASLt; cuBLASLt over the run %.4f..%.4f ms "
                "(median %.4f)\n",
                best.name.c_str(), best.ms, tflops(spec.flops(), best.ms), best.ratio, c.front(), c.back(),
                c[c.size() / 2]);
  }
  (void)cudaStreamDestroy(s);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--fill") return ktune::probes::fill_main(argc - 1, argv + 1);
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--dtype") {
      const char* v = value();
      const auto p = v ? parse_precision(v) : std::nullopt;
      if (!p || *p == Precision::f32) return usage();
      a.precision = *p;
    } else if (arg == "--gemm") {
      const char* v = value();
      if (!v || !parse_shape(v, a)) return usage();
    } else if (arg == "--filter") {
      const char* v = value();
      if (!v) return usage();
      a.filters.emplace_back(v);
    } else if (arg == "--cluster") {
      const char* v = value();
      if (!v || !parse_list(v, 1, 2, a.clusters)) return usage();
    } else if (arg == "--raster") {
      const char* v = value();
      if (!v || !parse_list(v, 1, max_raster_group, a.rasters)) return usage();
    } else if (arg == "--repeats") {
      const char* v = value();
      if (!v || (a.repeats = std::atoi(v)) < 1) return usage();
    } else if (arg == "--ms") {
      const char* v = value();
      if (!v || (a.ms_per_repeat = std::atof(v)) <= 0.0) return usage();
    } else if (arg == "--no-f64") {
      a.f64 = false;
    } else if (arg == "--paired") {
      a.paired = true;
    } else if (arg == "--bias-relu") {
      a.bias_relu = true;
    } else if (arg == "--small") {
      a.small = true;
      a.m = 264;
      a.n = 392;
      a.k = 200;
    } else {
      return usage();
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("ktune-sm90-probes: no CUDA device\n");
    return 77;
  }
  int failures = 0;
  const Status st = run(a, failures);
  if (!st.ok()) {
    std::printf("ktune-sm90-probes: %s\n", st.to_string().c_str());
    return 1;
  }
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
