// tools/sm90-probes/main.cu — ktune-sm90-probes: experimental Hopper schedules (variants.cuh: ping-pong
// consumers, TMA-store epilogue, TFLOAT32 tensor maps) timed next to the default sm90 instances and
// cuBLASLt on the same data in the same process, the way ktune-profile times (CUDA-graph replays between
// events, buffer sets rotated past the L2, median of the repeats). The probes exist only in this binary.
//
//   ktune-sm90-probes [--dtype bf16|f16|tf32] [--gemm MxNxK] [--filter TEXT]... [--repeats N] [--small]
//
// Every instance whose name contains one of the filters (default: every sm90 instance of the precision)
// runs once on NaN-poisoned D and is compared with cuBLASLt's output and with a float64-accumulating
// reference GEMM, then timed. --small: 264x392x200, one checked launch per instance on 2 CTAs, no
// timing (for compute-sanitizer: each CTA walks several tiles, partial ones included, the ring wraps).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/gpu_harness.cuh"

namespace {

using namespace ktune;
using namespace ktune::tools;

struct Args {
  Precision precision = Precision::bf16;
  std::int64_t m = 4096, n = 4096, k = 4096;
  std::vector<std::string> filters;
  int repeats = 5;
  bool small = false;
};

bool parse_shape(const char* s, Args& a) {
  long long m = 0, n = 0, k = 0;
  if (std::sscanf(s, "%lldx%lldx%lld", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) return false;
  a.m = m;
  a.n = n;
  a.k = k;
  return true;
}

int usage() {
  std::fprintf(stderr, "usage: ktune-sm90-probes [--dtype bf16|f16|tf32] [--gemm MxNxK] [--filter TEXT]... "
                       "[--repeats N] [--small]\n");
  return 2;
}

Status run(const Args& a, int& failures) {
  DeviceInfo dev;
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  if (dev.cc != 90) return error(StatusCode::no_instance, "the probes are sm_90a kernels: needs compute capability 9.0");
  cudaStream_t s = nullptr;
  KTUNE_TOOLS_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const ProblemSpec spec = make_problem(a.m, a.n, a.k, a.precision, "tn");
  ProblemData data;
  KTUNE_RETURN_IF_ERROR(data.create(spec, dev, 20261130, s, a.small ? 1 : 32));
  CublasRef cublas;
  KTUNE_RETURN_IF_ERROR(cublas.init());
  std::unique_ptr<CublasRef::Plan> plan;
  KTUNE_RETURN_IF_ERROR(cublas.make_plan(spec, nullptr, plan));
  const GemmOperands o0 = data.ops(0);
  KTUNE_RETURN_IF_ERROR(cublas.run(*plan, o0.a, o0.b, data.ref(), s));
  KTUNE_RETURN_IF_ERROR(data.compute_ref32(s));
  ErrorStats cublas_err;
  KTUNE_RETURN_IF_ERROR(data.ref_vs_ref32(s, cublas_err));

  TimingOptions topt;
  topt.repeats = a.repeats;
  topt.target_ms_per_repeat = 10.0;
  Timing tc;
  if (!a.small)
    KTUNE_RETURN_IF_ERROR(time_launches(
        [&](int i, cudaStream_t st) {
          const GemmOperands o = data.ops(i);
          return cublas.run(*plan, o.a, o.b, o.d, st);
        },
        s, topt, tc));
  std::printf("%s on %s (%d SMs): %d buffer set(s), median of %d repeats\n", spec.name().c_str(), dev.name.c_str(),
              dev.sm_count, data.sets(), a.repeats);
  std::printf("  %-62s %8s %8s %10s %10s %7s\n", "instance", "ms", "TF/s", "err/cuBLAS", "err/f64", "x cuBLAS");
  std::printf("  %-62s %8.4f %8.1f %10s %10.2e %7s\n", "cuBLASLt", tc.median_ms, tflops(spec.flops(), tc.median_ms), "-",
              cublas_err.rel, "1.00");

  const GemmDesc d = data.desc();
  const std::string prefix = "ktune_gemm_sm90_wgmma_" + std::string(to_string(a.precision)) + "_tn_";
  for (const GemmKernelEntry& e : gemm_table().entries()) {
    const std::string name(e.name);
    bool match = a.filters.empty() ? name.rfind(prefix, 0) == 0 : false;
    for (const auto& f : a.filters) match |= name.find(f) != std::string::npos;
    if (!match) continue;
    const Status can = can_implement(e, d, alignment_of(d, o0), &dev);
    if (!can.ok()) continue;
    KTUNE_RETURN_IF_ERROR(data.poison(0, s));
    // --small: two CTAs walk all tiles (ping-pong consumers alternate, the ring wraps across tiles).
    GemmLaunchOptions lo;
    if (a.small) lo.max_ctas = 2;
    const Status launched = e.launch(d, o0, lo, s);
    const cudaError_t synced = cudaStreamSynchronize(s);
    ErrorStats err, err64;
    if (launched.ok() && synced == cudaSuccess) {
      KTUNE_RETURN_IF_ERROR(data.error_vs_ref(o0.d, s, err));
      KTUNE_RETURN_IF_ERROR(data.error_vs_ref32(o0.d, s, err64));
    }
    const bool pass = launched.ok() && synced == cudaSuccess && err.passes(spec.tol());
    failures += pass ? 0 : 1;
    Timing t;
    if (pass && !a.small)
      KTUNE_RETURN_IF_ERROR(time_launches(
          [&](int i, cudaStream_t st) { return e.launch(d, data.ops(i), GemmLaunchOptions{}, st); }, s, topt, t));
    std::printf("%c %-62s %8.4f %8.1f %10.2e %10.2e %7.3f%s%s\n", pass ? ' ' : '!', name.c_str(), t.median_ms,
                tflops(spec.flops(), t.median_ms), err.rel, err64.rel, tc.median_ms / t.median_ms,
                pass ? "" : "  FAIL ", launched.ok() ? "" : launched.message().c_str());
    if (synced != cudaSuccess) return cuda_status(synced, "instance run");
  }
  (void)cudaStreamDestroy(s);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
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
    } else if (arg == "--repeats") {
      const char* v = value();
      if (!v || (a.repeats = std::atoi(v)) < 1) return usage();
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
