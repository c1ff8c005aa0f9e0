// tools/ktune-profile/run.cu — run, verify and time every instance that can implement each problem,
// next to cuBLASLt on the same data in the same process.
//
// Per problem: random non-zero A, B (and bias) from a hash kernel; cuBLASLt's output on buffer set 0
// is the reference, itself checked against a float64-accumulating GEMM; every instance whose
// can_implement() accepts the problem runs once on a NaN-poisoned D and is compared with the
// reference (relative Frobenius error), then timed: CUDA events around replays of a CUDA graph of
// many launches, median of the repeats. cuBLAS is timed the same way.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../common/gpu_harness.cuh"
#include "ktune/gemm.hpp"
#include "ktune/tuner/default.hpp"
#include "profile.hpp"
#include "run_common.hpp"

namespace ktune::profile {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

namespace {
constexpr int kNameWidth = 70;  // route names: route_repack+<instance name>
}  // namespace

void print_row_header(const std::string& ref) {
  std::printf("  %-*s %9s %8s %9s %6s %10s %11s %9s\n", kNameWidth, "instance (* = heuristic pick)", "ms", "TF/s", "rel.err",
              "check", (ref + " ms").c_str(), (ref + " TF/s").c_str(), ("vs " + ref).c_str());
}

void print_row(const ResultRow& r) {
  const std::string ms = r.ms >= 0 ? fmt("%.4f", r.ms) : "-";
  const std::string tf = r.ms >= 0 ? fmt("%.1f", r.tflops) : "-";
  const std::string err = r.rel_err >= 0 ? fmt("%.2e", r.rel_err) : (r.status == "FAIL" ? "nan" : "-");
  const std::string cms = r.ref_ms >= 0 ? fmt("%.4f", r.ref_ms) : "-";
  const std::string ctf = r.ref_ms >= 0 ? fmt("%.1f", r.ref_tflops) : "-";
  const std::string ratio = r.ms > 0 && r.ref_ms > 0 ? fmt("%.2fx", r.ref_ms / r.ms) : "-";
  std::printf("%c %-*s %9s %8s %9s %6s %10s %11s %9s\n", r.heuristic_pick ? '*' : ' ', kNameWidth, r.instance.c_str(),
              ms.c_str(), tf.c_str(), err.c_str(), r.status.c_str(), cms.c_str(), ctf.c_str(), ratio.c_str());
  if (!r.message.empty()) std::printf("    %s\n", r.message.c_str());
  std::fflush(stdout);
}

bool verify_and_time(Context& cx, const std::function<Status(tools::ErrorStats&)>& check, const tools::LaunchFn& launch,
                     double flops, double tol, ResultRow& row) {
  // 1. Correctness.
  tools::ErrorStats es;
  if (const Status checked = check(es); !checked.ok()) {
    row.status = "ERROR";
    row.message = checked.to_string();
    return tools::cuda_context_alive();
  }
  row.rel_err = std::isfinite(es.rel) ? es.rel : -1.0;
  row.tol = tol;
  const bool pass = es.passes(tol);
  row.status = pass ? "PASS" : "FAIL";
  if (!pass) {
    row.message = "relative error " + (std::isfinite(es.rel) ? fmt("%.3e", es.rel) : std::string("nan")) + " > tolerance " +
                  fmt("%.0e", tol);
    if (es.nonfinite > 0) row.message += ", " + std::to_string(es.nonfinite) + " non-finite outputs (unwritten or overflow)";
  }
  // 2. Time, also when the result was wrong (the row says FAIL either way).
  tools::Timing t;
  if (const Status timed = tools::time_launches(launch, cx.stream, cx.timing, t); !timed.ok()) {
    row.status = "ERROR";
    row.message = (row.message.empty() ? "" : row.message + "; ") + "timing: " + timed.to_string();
    return tools::cuda_context_alive();
  }
  row.ms = t.median_ms;
  row.tflops = tools::tflops(flops, t.median_ms);
  row.iters = t.iters;
  row.repeats = t.repeats;
  return true;
}

namespace {

using tools::CublasRef;
using tools::ErrorStats;
using tools::ProblemData;
using tools::ProblemSpec;
using tools::Timing;
using tools::TimingOptions;

// Verify and time one GEMM instance. Returns false when the CUDA context is lost (nothing more can run).
bool run_instance(Context& cx, const ProblemData& data, const GemmKernelEntry& e, double ref_tol, bool use_ref32,
                  ResultRow& row) {
  const ProblemSpec& spec = data.spec();
  const GemmDesc desc = spec.desc();
  const std::string name(e.name);
  GemmOptions go;
  go.instance = name.c_str();
  const tools::LaunchFn launch = [&](int i, cudaStream_t s) { return ktune::gemm(desc, data.ops(i), s, go); };
  // Poisoned D, one launch through the public API, error against the reference.
  const auto check = [&](ErrorStats& es) -> Status {
    KTUNE_RETURN_IF_ERROR(data.poison(0, cx.stream));
    KTUNE_RETURN_IF_ERROR(launch(0, cx.stream));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(cx.stream), "instance run"));
    return use_ref32 ? data.error_vs_ref32(data.ops(0).d, cx.stream, es) : data.error_vs_ref(data.ops(0).d, cx.stream, es);
  };
  return verify_and_time(cx, check, launch, spec.flops(), ref_tol, row);
}

void run_problem(Context& cx, const ProblemSpec& spec, int index, int count) {
  ProblemSummary sum;
  sum.spec = spec;
  std::printf("\n[%d/%d] %s  (%.1f GFLOP)\n", index + 1, count, spec.name().c_str(), spec.flops() / 1e9);
  auto finish = [&](const std::string& note) {
    if (!note.empty()) {
      sum.note = note;
      std::printf("  %s\n", note.c_str());
    }
    cx.report.problems.push_back(sum);
  };

  ProblemData data;
  const Status created = data.create(spec, cx.dev, 0x6b74756e65ull * (index + 1), cx.stream);
  if (!created.ok()) {
    sum.failed = 1;
    return finish(record_setup_failure(cx, "gemm", spec.name(), created));
  }
  sum.sets = data.sets();
  const GemmDesc desc = spec.desc();
  const GemmOperands ops0 = data.ops(0);

  // Candidates: every registered instance whose can_implement() accepts the problem on this device.
  const GemmDesc rd = resolved(desc);
  const GemmAlignment al = alignment_of(rd, ops0);
  std::vector<const GemmKernelEntry*> cands;
  for (const GemmKernelEntry* e : gemm_table().candidates(rd, al, &cx.dev))
    if (cx.opt.filter.empty() || std::string_view(e->name).find(cx.opt.filter) != std::string_view::npos) cands.push_back(e);
  sum.candidates = static_cast<int>(cands.size());

  const GemmKernelEntry* pick = nullptr;
  const Status hs = select_gemm(desc, ops0, gemm_table(), cx.dev, {}, pick);
  sum.heuristic_instance = pick != nullptr ? std::string(pick->name) : "";
  std::printf("  A/B alignment %d/%d elements, %zu instances can implement it%s; heuristic pick: %s\n", al.a, al.b,
              cands.size(), cx.opt.filter.empty() ? "" : (" (filter \"" + cx.opt.filter + "\")").c_str(),
              pick != nullptr ? sum.heuristic_instance.c_str() : ("none (" + hs.to_string() + ")").c_str());
  std::printf("  data: random non-zero values in ±[1/16, 1); %d buffer set%s of %.1f MB rotated per launch (L2 %d MB)\n",
              data.sets(), data.sets() > 1 ? "s" : "", data.bytes_per_set() / 1e6, cx.dev.l2_bytes >> 20);

  // The reference: cuBLASLt on set 0, checked against the float64-accumulating GEMM.
  std::unique_ptr<CublasRef::Plan> plan;
  const Status ref_run = [&]() -> Status {
    KTUNE_RETURN_IF_ERROR(cx.cublas.make_plan(spec, data.bias(), plan));
    KTUNE_RETURN_IF_ERROR(cx.cublas.run(*plan, ops0.a, ops0.b, data.ref(), cx.stream));
    return cuda_status(cudaStreamSynchronize(cx.stream), "cuBLAS reference run");
  }();
  const bool have_cublas = ref_run.ok();
  sum.cublas_api = have_cublas ? plan->api() : "";
  if (!have_cublas) {
    sum.cublas_status = "ERROR";
    sum.cublas_message = ref_run.to_string();
    if (!tools::cuda_context_alive()) {
      cx.report.context_lost = true;
      return finish("CUDA context lost in the cuBLAS reference: " + ref_run.to_string());
    }
  }
  bool use_ref32 = !have_cublas;
  if (cx.opt.check_reference || !have_cublas) {
    const Status r32 = data.compute_ref32(cx.stream);
    if (!r32.ok()) {
      if (!tools::cuda_context_alive()) cx.report.context_lost = true;
      if (!have_cublas || cx.report.context_lost) return finish("no reference available: " + r32.to_string());
      sum.cublas_status = "unchecked";
      sum.cublas_message = "fp32 reference failed: " + r32.to_string();
    } else if (have_cublas) {
      ErrorStats es;
      const Status cmp = data.ref_vs_ref32(cx.stream, es);
      sum.cublas_ref_err = std::isfinite(es.rel) ? es.rel : -1.0;
      if (cmp.ok() && es.passes(spec.tol())) {
        sum.cublas_status = "PASS";
      } else {
        // A wrong reference would fail every instance: verify against the fp32 reference instead.
        sum.cublas_status = "FAIL";
        sum.cublas_message = cmp.ok() ? "cuBLAS differs from the float64-accumulating reference by " + fmt("%.3e", es.rel) +
                                           "; instances are verified against that reference instead"
                                     : cmp.to_string();
        use_ref32 = true;
      }
    }
  } else {
    sum.cublas_status = "unchecked";
  }
  int cublas_iters = 0, cublas_repeats = 0;
  if (have_cublas) {
    Timing t;
    const tools::LaunchFn launch = [&](int i, cudaStream_t s) {
      const GemmOperands o = data.ops(i);
      return cx.cublas.run(*plan, o.a, o.b, o.d, s);
    };
    const Status timed = tools::time_launches(launch, cx.stream, cx.timing, t);
    if (timed.ok()) {
      sum.cublas_ms = t.median_ms;
      sum.cublas_tflops = tools::tflops(spec.flops(), t.median_ms);
      cublas_iters = t.iters;
      cublas_repeats = t.repeats;
    } else {
      sum.cublas_message += (sum.cublas_message.empty() ? "" : "; ") + ("timing: " + timed.to_string());
      if (!tools::cuda_context_alive()) {
        cx.report.context_lost = true;
        return finish("CUDA context lost while timing cuBLAS");
      }
    }
  }
  std::printf("  reference: %s %s%s  %s TF/s; vs float64-accumulating GEMM: %s %s\n",
              have_cublas ? sum.cublas_api.c_str() : "cuBLAS failed", sum.cublas_ms >= 0 ? fmt("%.4f", sum.cublas_ms).c_str() : "-",
              sum.cublas_ms >= 0 ? " ms" : "", sum.cublas_ms >= 0 ? fmt("%.1f", sum.cublas_tflops).c_str() : "-",
              sum.cublas_ref_err >= 0 ? fmt("%.2e", sum.cublas_ref_err).c_str() : "-", sum.cublas_status.c_str());
  if (!sum.cublas_message.empty()) std::printf("    %s\n", sum.cublas_message.c_str());
  {
    ResultRow r;  // the reference's own row in the results table
    r.problem = spec.name();
    r.instance = have_cublas ? sum.cublas_api : "cuBLAS";
    r.family = "cublas";
    r.ms = sum.cublas_ms;
    r.tflops = sum.cublas_tflops;
    r.rel_err = sum.cublas_ref_err;
    r.tol = spec.tol();
    r.status = sum.cublas_status;
    r.message = sum.cublas_message;
    r.reference = r.instance;
    r.ref_ms = sum.cublas_ms;
    r.ref_tflops = sum.cublas_tflops;
    r.iters = cublas_iters;
    r.repeats = cublas_repeats;
    cx.report.rows.push_back(r);
  }

  if (cands.empty()) return finish("no instance can implement this problem" + std::string(cx.opt.filter.empty() ? "" : " (after the filter)"));
  print_row_header("cuBLAS");
  const ResultRow* best = nullptr;
  std::vector<ResultRow> rows;
  rows.reserve(cands.size());
  for (const GemmKernelEntry* e : cands) {
    ResultRow row;
    row.problem = spec.name();
    row.instance = std::string(e->name);
    row.family = std::string(e->family);
    row.heuristic_pick = e == pick;
    row.tol = spec.tol();
    row.reference = sum.cublas_api;
    row.ref_ms = sum.cublas_ms;
    row.ref_tflops = sum.cublas_tflops;
    const bool alive = run_instance(cx, data, *e, spec.tol(), use_ref32, row);
    print_row(row);
    rows.push_back(row);
    if (!alive) {
      cx.report.context_lost = true;
      break;
    }
  }
  best = tally_rows(rows, sum);
  if (best != nullptr) {
    std::printf("  best: %s %.4f ms %.1f TF/s", best->instance.c_str(), best->ms, best->tflops);
    if (sum.cublas_ms > 0) std::printf(" = %.2fx cuBLAS", sum.cublas_ms / best->ms);
    if (sum.heuristic_tflops > 0) std::printf("; heuristic pick reaches %.0f%% of the best", 100.0 * sum.heuristic_tflops / best->tflops);
    std::printf("\n");
  }
  // The best instance against cuBLAS once more, in alternating rounds (power-cap drift cancels out); also the
  // best mma.sync instance when another one won (issue 2's mma.sync target is a ratio to cuBLAS too).
  const auto pair_with_cublas = [&](const ResultRow& row, const std::string& what) -> std::optional<tools::PairedTiming> {
    tools::PairedTiming pt;
    GemmOptions go;
    const std::string name = row.instance;
    go.instance = name.c_str();
    const tools::LaunchFn ours = [&](int i, cudaStream_t s) { return ktune::gemm(desc, data.ops(i), s, go); };
    const tools::LaunchFn theirs = [&](int i, cudaStream_t s) {
      const GemmOperands o = data.ops(i);
      return cx.cublas.run(*plan, o.a, o.b, o.d, s);
    };
    const Status paired = tools::time_paired(ours, theirs, cx.stream, cx.timing, cx.opt.paired_rounds, pt);
    if (paired.ok()) {
      std::printf("  paired%s (%d alternating rounds, each side timed after ~%.0f ms of its own replays): ktune %.4f ms "
                  "(%.1f TF/s), cuBLAS %.4f ms, median ratio %.3fx\n",
                  what.c_str(), pt.rounds, cx.timing.paired_settle_ms, pt.a_ms, tools::tflops(spec.flops(), pt.a_ms), pt.b_ms,
                  pt.ratio_b_over_a);
      return pt;
    }
    std::printf("  paired timing%s failed: %s\n", what.c_str(), paired.to_string().c_str());
    if (!tools::cuda_context_alive()) cx.report.context_lost = true;
    return std::nullopt;
  };
  if (best != nullptr && have_cublas && sum.cublas_ms > 0 && cx.opt.paired_rounds > 0 && !cx.report.context_lost) {
    const auto keep_if_better = [&](const ResultRow& row, const std::optional<tools::PairedTiming>& pt) {
      if (pt.has_value() && pt->ratio_b_over_a > sum.paired_speedup) {
        sum.paired_speedup = pt->ratio_b_over_a;
        sum.paired_instance = row.instance;
        sum.paired_rounds = pt->rounds;
      }
    };
    keep_if_better(*best, pair_with_cublas(*best, ""));
    // Instances timed later in the list run on a hotter, power-capped GPU: the unpaired order can rank a
    // runner-up behind the best by less than that drift. Pair those too (paired_runner_ups within the margin).
    for (const ResultRow* r : paired_runner_ups(rows, *best)) {
      if (cx.report.context_lost) break;
      keep_if_better(*r, pair_with_cublas(*r, " of the runner-up " + r->instance));
    }
    const auto is_mma_sync = [](const ResultRow& r) { return r.family.rfind("sm80_mma", 0) == 0; };
    const ResultRow* best_mma = nullptr;
    for (const ResultRow& r : rows)
      if (r.status == "PASS" && r.ms > 0 && is_mma_sync(r) && (best_mma == nullptr || r.ms < best_mma->ms)) best_mma = &r;
    if (best_mma != nullptr && !is_mma_sync(*best) && !cx.report.context_lost)
      (void)pair_with_cublas(*best_mma, " of the best mma.sync instance " + best_mma->instance);
  }
  cx.report.rows.insert(cx.report.rows.end(), rows.begin(), rows.end());
  finish(cx.report.context_lost ? "CUDA context lost (sticky error): the remaining instances and problems cannot run"
                                : "");
}

void print_summary(const RunReport& rep) {
  std::printf("\nsummary (best verified ktune instance vs %s; same data, same process; ratio = speed-up over cuBLAS)\n",
              "cuBLAS");
  std::printf("%-34s %10s %8s %10s %8s %8s %7s  %-70s %9s %9s\n", "problem", "cuBLAS ms", "TF/s", "ktune ms", "TF/s",
              "ratio", "paired", "best instance", "heur TF/s", "pass/run");
  for (const ProblemSummary& s : rep.problems) {
    const std::string cms = s.cublas_ms > 0 ? fmt("%.4f", s.cublas_ms) : "-";
    const std::string ctf = s.cublas_ms > 0 ? fmt("%.1f", s.cublas_tflops) : "-";
    const std::string kms = s.best_ms > 0 ? fmt("%.4f", s.best_ms) : "-";
    const std::string ktf = s.best_ms > 0 ? fmt("%.1f", s.best_tflops) : "-";
    const std::string ratio = s.best_ms > 0 && s.cublas_ms > 0 ? fmt("%.2fx", s.cublas_ms / s.best_ms) : "-";
    const std::string htf = s.heuristic_tflops > 0 ? fmt("%.1f", s.heuristic_tflops) : "-";
    const std::string pr = std::to_string(s.passed) + "/" + std::to_string(s.passed + s.failed);
    const std::string paired = s.paired_speedup > 0 ? fmt("%.3fx", s.paired_speedup) : "-";
    std::printf("%-34s %10s %8s %10s %8s %8s %7s  %-70s %9s %9s\n", s.spec.name().c_str(), cms.c_str(), ctf.c_str(), kms.c_str(),
                ktf.c_str(), ratio.c_str(), paired.c_str(), s.best_instance.empty() ? "-" : s.best_instance.c_str(), htf.c_str(), pr.c_str());
    if (!s.paired_instance.empty() && s.paired_instance != s.best_instance)
      std::printf("%-34s %10s %8s %10s %8s %8s %7s  (paired: %s)\n", "", "", "", "", "", "", "", s.paired_instance.c_str());
  }
}

}  // namespace

int run_problems(const RunOptions& opt) {
  Context cx(opt);
  if (opt.device >= 0) {
    const Status st = cuda_status(cudaSetDevice(opt.device), "cudaSetDevice");
    if (!st.ok()) {
      std::fprintf(stderr, "ktune-profile: %s\n", st.to_string().c_str());
      return 1;
    }
  }
  const Status st = [&]() -> Status {
    KTUNE_RETURN_IF_ERROR(current_device(cx.dev));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&cx.stream, cudaStreamNonBlocking), "cudaStreamCreate"));
    return cx.cublas.init();
  }();
  if (!st.ok()) {
    std::fprintf(stderr, "ktune-profile: cannot initialise the GPU: %s\n", st.to_string().c_str());
    return 1;
  }
  RunReport& rep = cx.report;
  rep.device = cx.dev.name;
  rep.fingerprint = cx.dev.fingerprint();
  rep.driver = tools::cuda_version_string(cx.dev.driver_version);
  rep.runtime = tools::cuda_version_string(cx.dev.runtime_version);
  rep.cublaslt = tools::cublaslt_version_string();
  rep.commit = tools::git_commit();

  cx.timing.repeats = std::max(1, opt.repeats);
  cx.timing.iters = opt.iters;
  cx.timing.target_ms_per_repeat = opt.target_ms;

  std::printf("ktune-profile on %s (sm%d, %d SMs, L2 %d MB, smem opt-in %d B) driver %s, runtime %s, cuBLASLt %s, commit %s\n",
              cx.dev.name.c_str(), cx.dev.cc, cx.dev.sm_count, cx.dev.l2_bytes >> 20, cx.dev.smem_optin_bytes,
              rep.driver.c_str(), rep.runtime.c_str(), rep.cublaslt.c_str(), rep.commit.c_str());
  std::printf("%zu GEMM and %zu conv2d instances registered; timing: CUDA events around CUDA-graph replays, %s launches per repeat, "
              "median of %d repeats; tolerances (relative Frobenius error): f32 1e-5, tf32 3e-3, f16/bf16 1e-2\n",
              gemm_table().size(), conv_table().size(),
              opt.iters > 0 ? std::to_string(opt.iters).c_str()
                            : (fmt("~%.0f ms of", opt.target_ms) + (opt.conv_problems.empty() ? "" : fmt(" (conv2d: ~%.0f ms of)", std::min(opt.target_ms, 10.0)))).c_str(),
              cx.timing.repeats);

  // The tuned conv picks go through ktune's default tuner, as in an application: into --cache OUT when
  // given (merged, saved after each tuned key), else into KTUNE_CACHE when set.
  if (!opt.cache_path.empty()) {
    tuner::TunerOptions o = default_tuner().options();
    o.cache_path = opt.cache_path;
    o.autosave = true;
    default_tuner().set_options(o);
  }

  const int n = static_cast<int>(opt.problems.size());
  const int total = n + static_cast<int>(opt.conv_problems.size());
  for (int i = 0; i < n; ++i) {
    if (rep.context_lost) {
      ProblemSummary s;
      s.spec = opt.problems[i];
      s.note = "skipped: CUDA context lost earlier";
      s.failed = 1;
      rep.problems.push_back(s);
      continue;
    }
    run_problem(cx, opt.problems[i], i, total);
  }
  if (!opt.conv_problems.empty()) run_conv_problems(cx);
  if (!rep.problems.empty()) print_summary(rep);
  if (!rep.conv_problems.empty()) print_conv_summary(rep);

  int fails = 0;
  for (const auto& s : rep.problems) fails += s.failed;
  for (const auto& s : rep.conv_problems) fails += s.failed;
  bool io_ok = true;
  if (!opt.conv_problems.empty() && !default_tuner().options().cache_path.empty()) {
    const std::string path = default_tuner().options().cache_path;
    const Status saved = default_tuner().save_cache();
    if (saved.ok()) std::printf("\ntuning cache %s: the tuned conv picks merged in\n", path.c_str());
    else std::fprintf(stderr, "ktune-profile: the tuning cache %s was NOT saved: %s\n", path.c_str(), saved.to_string().c_str());
    io_ok &= saved.ok();
  }
  if (!opt.csv_path.empty()) io_ok &= write_csv(opt.csv_path, rep);
  if (!opt.json_path.empty()) io_ok &= write_json(opt.json_path, rep);
  if (cx.stream != nullptr) (void)cudaStreamDestroy(cx.stream);
  if (rep.context_lost) std::printf("\nERROR: the CUDA context was lost (sticky error); later results are missing\n");
  if (fails > 0) std::printf("\n%d instance run%s FAILED or errored\n", fails, fails == 1 ? "" : "s");
  return fails > 0 || rep.context_lost || !io_ok ? 1 : 0;
}

}  // namespace ktune::profile
