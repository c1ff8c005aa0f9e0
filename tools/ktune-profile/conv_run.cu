// tools/ktune-profile/conv_run.cu — ktune-profile's conv2d problems (--conv SPEC, and three ResNet-50
// layers in the default run): every conv instance that can implement the problem and ktune::conv2d's
// own tuned pick, verified and timed next to cuDNN on the same data in the same process.
//
// Per problem: random non-zero x, w and bias (tools/common/conv_data.hpp, buffer sets rotated per launch
// as in the GEMM run); cuDNN's fused call (cudnnConvolutionBiasActivationForward; the unfused
// convolution where it has none, e.g. the identity epilogue) writes the reference output on set 0,
// itself checked against a float64 CPU reference on sampled output pixels (three blocks of up to 1024,
// all of them for small outputs); every instance runs once by name on a NaN-poisoned y and is compared with the reference
// (relative Frobenius error), then timed like the GEMM instances (CUDA events around CUDA-graph replays,
// median of the repeats), and so are cuDNN fused and unfused. The tuned pick is ktune::conv2d() as an
// application calls it: the default tuner tunes the key first (its report is printed), then the call is
// checked and timed the same way. Host code: no kernels here (g++ compiles it).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "../common/conv_data.hpp"
#include "../common/conv_presets.hpp"
#include "ktune/conv.hpp"
#include "ktune/tuner/default.hpp"
#include "ktune/tuner/report.hpp"
#include "run_common.hpp"
#if KTUNE_HAVE_CUDNN
#include "../common/cudnn_conv_ref.hpp"
#endif

namespace ktune::profile {
namespace {

using tools::ConvData;
using tools::ErrorStats;
using tools::Timing;

constexpr double kConvTolerance = 1e-2;  // f16/bf16 outputs, relative Frobenius error

// cuDNN for the whole run (one handle), when this build has it.
struct CudnnHolder {
#if KTUNE_HAVE_CUDNN
  tools::CudnnConvRef ref;
#endif
  Status init_status = error(StatusCode::unsupported, "built without cuDNN (KTUNE_HAVE_CUDNN=0)");
};

std::string err_text(const ErrorStats& es) { return std::isfinite(es.rel) ? fmt("%.3e", es.rel) : std::string("nan"); }

// Check once (poisoned y of set 0, one launch, error against the reference), then time; fills the row.
// Returns false when the CUDA context is lost.
bool check_and_time(Context& cx, const ConvData& data, bool use_cpu, const tools::LaunchFn& launch, ResultRow& row) {
  const Conv2dOperands o0 = data.ops(0);
  const auto check = [&](ErrorStats& es) -> Status {
    KTUNE_RETURN_IF_ERROR(data.poison(o0.y, cx.stream));
    KTUNE_RETURN_IF_ERROR(launch(0, cx.stream));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(cx.stream), "conv run"));
    return use_cpu ? data.error_vs_cpu(o0.y, cx.stream, es) : data.error_vs_ref(o0.y, cx.stream, es);
  };
  return verify_and_time(cx, check, launch, tools::conv_flops(data.desc()), kConvTolerance, row);
}

std::string ratio_text(double ref_ms, double ms) { return ref_ms > 0 && ms > 0 ? fmt("%.2fx", ref_ms / ms) : "-"; }

void run_conv_problem(Context& cx, CudnnHolder& cudnn, const Conv2dDesc& d, int index, int count) {
  ConvSummary sum;
  sum.desc = d;
  sum.name = tools::conv_problem_name(d);
  const ConvShape sh = conv_shape(d);
  const double flops = tools::conv_flops(d);
  std::printf("\n[%d/%d] %s  (%s -> %lldx%lldx%lldx%lld; implicit GEMM %lldx%lldx%lld, %.1f GFLOP)\n", index + 1, count,
              sum.name.c_str(), tools::conv_label(d).c_str(), static_cast<long long>(d.n), static_cast<long long>(sh.p),
              static_cast<long long>(sh.q), static_cast<long long>(d.k), static_cast<long long>(sh.m),
              static_cast<long long>(d.k), static_cast<long long>(sh.kgemm), flops / 1e9);
  auto finish = [&](const std::string& note) {
    if (!note.empty()) {
      sum.note = note;
      std::printf("  %s\n", note.c_str());
    }
    cx.report.conv_problems.push_back(sum);
  };
  auto context_lost = [&](const std::string& where) {
    cx.report.context_lost = true;
    sum.failed += 1;
    finish("CUDA context lost (sticky error) in " + where + ": the remaining instances and problems cannot run");
  };

  ConvData data;
  if (const Status created = data.create(d, cx.dev, 0x636f6e76ull * (index + 1), cx.stream); !created.ok()) {
    sum.failed = 1;
    return finish(record_setup_failure(cx, "conv2d", sum.name, created));
  }
  sum.sets = data.sets();
  const Conv2dOperands o0 = data.ops(0);
  const ConvAlignment al = alignment_of(d, o0);

  // Candidates: every registered conv instance that accepts the problem on this device, in the heuristic
  // order (new families come in through the dispatch table).
  std::vector<const ConvKernelEntry*> cands;
  for (const ConvKernelEntry* e : default_tuner().ranked_conv_candidates(d, al, cx.dev))
    if (cx.opt.filter.empty() || e->name.find(cx.opt.filter) != std::string_view::npos) cands.push_back(e);
  sum.candidates = static_cast<int>(cands.size());
  const ConvKernelEntry* pick = nullptr;
  const Status hs = select_conv(d, o0, conv_table(), cx.dev, ConvOptions{}, pick);
  sum.heuristic_instance = pick != nullptr ? std::string(pick->name) : "";
  std::printf("  x/w/y alignment %d/%d/%d elements, %zu conv instances can implement it%s; heuristic pick: %s\n", al.x, al.w, al.y,
              cands.size(), cx.opt.filter.empty() ? "" : (" (filter \"" + cx.opt.filter + "\")").c_str(),
              pick != nullptr ? sum.heuristic_instance.c_str() : ("none (" + hs.to_string() + ")").c_str());
  std::printf("  data: random non-zero values in ±[1/16, 1); %d buffer set%s of %.1f MB rotated per launch (L2 %d MB)\n",
              data.sets(), data.sets() > 1 ? "s" : "", data.bytes_per_set() / 1e6, cx.dev.l2_bytes >> 20);

  // ---- The references: cuDNN (fused, unfused) on set 0 → data.ref(), checked against float64 on the CPU.
  bool have_ref = false;
  tools::LaunchFn fused_fn, unfused_fn;
#if KTUNE_HAVE_CUDNN
  std::unique_ptr<tools::CudnnConvRef::Plan> plan;
  Status ref_run = cudnn.init_status;
  if (ref_run.ok()) {
    ref_run = [&]() -> Status {
      KTUNE_RETURN_IF_ERROR(cudnn.ref.make_plan(d, data.ref_ops(), cx.stream, plan));
      if (!plan->fused_status.ok()) KTUNE_RETURN_IF_ERROR(cudnn.ref.run_unfused(*plan, data.ref_ops(), cx.stream));
      return cuda_status(cudaStreamSynchronize(cx.stream), "cuDNN reference run");
    }();
  }
  if (ref_run.ok()) {
    have_ref = true;
    sum.reference = plan->fused_status.ok() ? "cuDNN fused" : "cuDNN unfused";
    sum.unfused_label = plan->unfused_label();
    const tools::CudnnConvRef::Plan* pl = plan.get();
    unfused_fn = [&, pl](int i, cudaStream_t s) { return cudnn.ref.run_unfused(*pl, data.ops(i), s); };
    if (plan->fused_status.ok()) {
      sum.fused_label = plan->fused_label();
      fused_fn = [&, pl](int i, cudaStream_t s) { return cudnn.ref.run_fused(*pl, data.ops(i), s); };
    } else {
      sum.fused_label = "none: " + plan->fused_status.message();
    }
  } else {
    sum.ref_message = "cuDNN: " + ref_run.to_string();
    if (!tools::cuda_context_alive()) return context_lost("the cuDNN reference");
  }
#else
  sum.ref_message = cudnn.init_status.message();
#endif
  // The float64 CPU reference of set 0: the check of cuDNN's output, and the reference when there is none.
  bool use_cpu = !have_ref;
  if (const Status cpu = data.compute_cpu_ref(cx.stream); !cpu.ok()) {
    if (!tools::cuda_context_alive()) return context_lost("the CPU reference's copies");
    sum.ref_status = "unchecked";
    sum.ref_message += (sum.ref_message.empty() ? "" : "; ") + ("CPU reference: " + cpu.to_string());
    if (!have_ref) return finish("no reference available: " + sum.ref_message);
  } else {
    sum.ref_cpu_scope = data.cpu_ref_scope();
    if (!have_ref) {
      sum.reference = "float64 CPU";
      sum.ref_status = "unchecked";
    } else {
      ErrorStats es;
      const Status cmp = data.error_vs_cpu(data.ref(), cx.stream, es);
      sum.ref_cpu_err = std::isfinite(es.rel) ? es.rel : -1.0;
      if (cmp.ok() && es.passes(kConvTolerance)) {
        sum.ref_status = "PASS";
      } else {
        // A wrong reference would fail every instance: verify against the CPU reference instead.
        sum.ref_status = "FAIL";
        sum.ref_message += (sum.ref_message.empty() ? "" : "; ") +
                           (cmp.ok() ? sum.reference + " differs from the float64 CPU reference by " + err_text(es) +
                                           "; instances are verified against that reference instead (on " + sum.ref_cpu_scope + ")"
                                     : cmp.to_string());
        use_cpu = true;
      }
    }
  }
  // Timing of the references (their outputs go to the rotating sets' y, not to the reference buffer).
  Timing fused_t, unfused_t;  // iters and repeats for the reference rows
  auto time_ref = [&](const tools::LaunchFn& fn, const std::string& name, double& ms, double& tf, Timing& t) -> bool {
    if (!fn) return true;
    const Status timed = tools::time_launches(fn, cx.stream, cx.timing, t);
    if (timed.ok()) {
      ms = t.median_ms;
      tf = tools::tflops(flops, t.median_ms);
      return true;
    }
    sum.ref_message += (sum.ref_message.empty() ? "" : "; ") + (name + " timing: " + timed.to_string());
    return tools::cuda_context_alive();
  };
  if (!time_ref(fused_fn, "cuDNN fused", sum.fused_ms, sum.fused_tflops, fused_t)) return context_lost("timing cuDNN fused");
  if (!time_ref(unfused_fn, "cuDNN unfused", sum.unfused_ms, sum.unfused_tflops, unfused_t))
    return context_lost("timing cuDNN unfused");
  // What the ratios are against: cuDNN fused, or unfused where there is no fused call.
  const double ref_ms = sum.fused_ms > 0 ? sum.fused_ms : sum.unfused_ms;
  const double ref_tflops = sum.fused_ms > 0 ? sum.fused_tflops : sum.unfused_tflops;
  const std::string ref_name = sum.fused_ms > 0 ? "cuDNN fused" : sum.unfused_ms > 0 ? "cuDNN unfused" : "cuDNN";
  std::printf("  reference: %s; cuDNN fused %s%s, unfused %s%s; %s vs float64 CPU reference (%s): %s %s\n",
              sum.reference.empty() ? "none" : sum.reference.c_str(),
              sum.fused_ms > 0 ? fmt("%.4f ms ", sum.fused_ms).c_str() : "-", sum.fused_ms > 0 ? fmt("%.1f TF/s", sum.fused_tflops).c_str() : "",
              sum.unfused_ms > 0 ? fmt("%.4f ms ", sum.unfused_ms).c_str() : "-",
              sum.unfused_ms > 0 ? fmt("%.1f TF/s", sum.unfused_tflops).c_str() : "", have_ref ? sum.reference.c_str() : "nothing",
              sum.ref_cpu_scope.empty() ? "-" : sum.ref_cpu_scope.c_str(), sum.ref_cpu_err >= 0 ? fmt("%.2e", sum.ref_cpu_err).c_str() : "-",
              sum.ref_status.c_str());
  if (!sum.fused_label.empty()) std::printf("    fused: %s; unfused: %s\n", sum.fused_label.c_str(), sum.unfused_label.c_str());
  if (!sum.ref_message.empty()) std::printf("    %s\n", sum.ref_message.c_str());
  // A row of this problem, with its references.
  auto make_row = [&](const std::string& instance, const std::string& family) {
    ResultRow row;
    row.op = "conv2d";
    row.problem = sum.name;
    row.instance = instance;
    row.family = family;
    row.tol = kConvTolerance;
    row.reference = ref_name;
    row.ref_ms = ref_ms;
    row.ref_tflops = ref_tflops;
    row.ref2_ms = sum.unfused_ms;
    row.ref2_tflops = sum.unfused_tflops;
    return row;
  };
  auto ref_row = [&](const std::string& name, double ms, double tf, const Timing& t, double err, const std::string& status,
                     const std::string& msg) {
    ResultRow r = make_row(name, "cudnn");
    r.ms = ms;
    r.tflops = tf;
    r.iters = t.iters;
    r.repeats = t.repeats;
    r.rel_err = err;
    r.status = status;
    r.message = msg;
    cx.report.rows.push_back(r);
  };
  if (have_ref) {  // the reference's own rows (its CPU check on the one that wrote the reference output)
    const bool fused_is_ref = sum.reference == "cuDNN fused";
    if (sum.fused_ms > 0 || fused_is_ref)
      ref_row("cuDNN fused", sum.fused_ms, sum.fused_tflops, fused_t, fused_is_ref ? sum.ref_cpu_err : -1.0, fused_is_ref ? sum.ref_status : "PASS",
              fused_is_ref ? sum.ref_message : "");
    ref_row("cuDNN unfused", sum.unfused_ms, sum.unfused_tflops, unfused_t, fused_is_ref ? -1.0 : sum.ref_cpu_err,
            fused_is_ref ? "unchecked" : sum.ref_status, fused_is_ref ? "" : sum.ref_message);
  }

  // ---- Every instance, by name.
  std::vector<ResultRow> rows;
  if (cands.empty()) {
    std::printf("  no conv instance can implement this problem%s\n", cx.opt.filter.empty() ? "" : " (after the filter)");
  } else {
    print_row_header(ref_name);
    rows.reserve(cands.size());
    for (const ConvKernelEntry* e : cands) {
      ResultRow row = make_row(std::string(e->name), std::string(e->family));
      row.heuristic_pick = e == pick;
      const std::string name(e->name);
      const tools::LaunchFn launch = [&](int i, cudaStream_t s) {
        ConvOptions co;
        co.instance = name.c_str();
        return ktune::conv2d(d, data.ops(i), s, co);
      };
      const bool alive = check_and_time(cx, data, use_cpu, launch, row);
      print_row(row);
      rows.push_back(row);
      if (!alive) {
        cx.report.context_lost = true;
        break;
      }
    }
  }
  const ResultRow* best = tally_rows(rows, sum);
  cx.report.rows.insert(cx.report.rows.end(), rows.begin(), rows.end());
  if (cx.report.context_lost) return finish("CUDA context lost (sticky error): the remaining instances and problems cannot run");

  // "0.95x cuDNN fused, 2.40x cuDNN unfused" (the unfused call alone where it is the reference).
  auto vs_cudnn = [&](double ms) {
    std::string t = ratio_text(ref_ms, ms) + " " + ref_name;
    if (sum.fused_ms > 0) t += ", " + ratio_text(sum.unfused_ms, ms) + " cuDNN unfused";
    return t;
  };

  // ---- ktune::conv2d's own choice: the default tuner's tactic, tuned now (or from the cache).
  tuner::TuningReport tr;
  const auto t0 = std::chrono::steady_clock::now();
  const Status ts = default_tuner().tune_conv(d, al, &tr);
  sum.tuning_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const ConvTactic* tac = default_tuner().lookup_conv(d, o0);
  sum.tuned_source = std::string(tuner::to_string(tr.source));
  sum.tuned_tactic = tac != nullptr ? tac->name : "";
  ResultRow tuned = make_row(tac != nullptr ? tac->name : std::string("(no tuned tactic)"), "tuned");
  std::printf("  tuned: %s\n", ts.ok() ? tuner::summary_line(tr).c_str() : ("FAILED: " + ts.to_string()).c_str());
  const tools::LaunchFn launch_tuned = [&](int i, cudaStream_t s) { return ktune::conv2d(d, data.ops(i), s); };
  const bool alive = check_and_time(cx, data, use_cpu, launch_tuned, tuned);
  if (!ts.ok()) tuned.message = "tuning: " + ts.to_string() + (tuned.message.empty() ? "" : "; " + tuned.message);
  sum.tuned_status = tuned.status;
  if (tuned.status == "PASS") {
    sum.tuned_ms = tuned.ms;
    sum.tuned_tflops = tuned.tflops;
  } else {
    ++sum.failed;
  }
  std::printf("  tuned pick (ktune::conv2d): %s %s ms %s TF/s, rel.err %s %s = %s%s\n", tuned.instance.c_str(),
              tuned.ms >= 0 ? fmt("%.4f", tuned.ms).c_str() : "-", tuned.ms >= 0 ? fmt("%.1f", tuned.tflops).c_str() : "-",
              tuned.rel_err >= 0 ? fmt("%.2e", tuned.rel_err).c_str() : "-", tuned.status.c_str(), vs_cudnn(tuned.ms).c_str(),
              best != nullptr && tuned.ms > 0 ? fmt("; %.0f%% of the best instance", 100.0 * best->ms / tuned.ms).c_str() : "");
  if (!tuned.message.empty()) std::printf("    %s\n", tuned.message.c_str());
  cx.report.rows.push_back(tuned);
  if (!alive) {
    cx.report.context_lost = true;
    return finish("CUDA context lost (sticky error): the remaining problems cannot run");
  }
  if (best != nullptr) {
    std::printf("  best: %s %.4f ms %.1f TF/s = %s", best->instance.c_str(), best->ms, best->tflops, vs_cudnn(best->ms).c_str());
    if (sum.heuristic_tflops > 0) std::printf("; heuristic pick reaches %.0f%% of the best", 100.0 * sum.heuristic_tflops / best->tflops);
    std::printf("\n");
  }
  finish("");
}

}  // namespace

void run_conv_problems(Context& cx) {
  // Conv launches take tens of microseconds: 10 ms per repeat is hundreds of them (the GEMM default of
  // 20 ms would double the conv part of the default run for no steadier median).
  const tools::TimingOptions gemm_timing = cx.timing;
  cx.timing.target_ms_per_repeat = std::min(cx.timing.target_ms_per_repeat, 10.0);
  CudnnHolder cudnn;
#if KTUNE_HAVE_CUDNN
  cudnn.init_status = cudnn.ref.init();
  if (cudnn.init_status.ok()) cx.report.cudnn = tools::cudnn_version_string();
  else std::printf("\ncuDNN could not be initialised (%s): conv outputs are checked against the float64 CPU reference only\n",
                   cudnn.init_status.to_string().c_str());
#else
  std::printf("\nbuilt without cuDNN: conv outputs are checked against the float64 CPU reference only, and there is no cuDNN time\n");
#endif
  const int first = static_cast<int>(cx.opt.problems.size());
  const int count = first + static_cast<int>(cx.opt.conv_problems.size());
  for (std::size_t j = 0; j < cx.opt.conv_problems.size(); ++j) {
    if (cx.report.context_lost) {
      ConvSummary s;
      s.desc = cx.opt.conv_problems[j];
      s.name = tools::conv_problem_name(s.desc);
      s.note = "skipped: CUDA context lost earlier";
      s.failed = 1;
      cx.report.conv_problems.push_back(s);
      continue;
    }
    run_conv_problem(cx, cudnn, cx.opt.conv_problems[j], first + static_cast<int>(j), count);
  }
  cx.timing = gemm_timing;
}

void print_conv_summary(const RunReport& rep) {
  std::printf("\nconv2d summary (ktune vs cuDNN%s; same data, same process; ratio = cuDNN ms / ktune ms, > 1: ktune is faster;\n"
              "tuned = ktune::conv2d's own choice, best = the fastest verified instance run by name)\n",
              rep.cudnn.empty() ? "" : (" " + rep.cudnn).c_str());
  std::printf("%-50s %9s %8s %9s %8s %9s %8s %8s %8s %9s %8s  %-70s %9s\n", "problem", "fused ms", "TF/s", "unfus ms", "TF/s",
              "tuned ms", "TF/s", "vs fused", "vs unfus", "best TF/s", "vs fused", "best instance", "pass/run");
  double lg_fused = 0, lg_unfused = 0;
  int n_fused = 0, n_unfused = 0;
  for (const ConvSummary& s : rep.conv_problems) {
    auto ms = [](double v) { return v > 0 ? fmt("%.4f", v) : std::string("-"); };
    auto tf = [](double ms_, double v) { return ms_ > 0 ? fmt("%.1f", v) : std::string("-"); };
    const std::string pr = std::to_string(s.passed) + "/" + std::to_string(s.passed + s.failed);
    std::printf("%-50s %9s %8s %9s %8s %9s %8s %8s %8s %9s %8s  %-70s %9s\n", s.name.c_str(), ms(s.fused_ms).c_str(),
                tf(s.fused_ms, s.fused_tflops).c_str(), ms(s.unfused_ms).c_str(), tf(s.unfused_ms, s.unfused_tflops).c_str(),
                ms(s.tuned_ms).c_str(), tf(s.tuned_ms, s.tuned_tflops).c_str(), ratio_text(s.fused_ms, s.tuned_ms).c_str(),
                ratio_text(s.unfused_ms, s.tuned_ms).c_str(), tf(s.best_ms, s.best_tflops).c_str(),
                ratio_text(s.fused_ms, s.best_ms).c_str(), s.best_instance.empty() ? "-" : s.best_instance.c_str(), pr.c_str());
    if (s.fused_ms > 0 && s.tuned_ms > 0) {
      lg_fused += std::log(s.fused_ms / s.tuned_ms);
      ++n_fused;
    }
    if (s.unfused_ms > 0 && s.tuned_ms > 0) {
      lg_unfused += std::log(s.unfused_ms / s.tuned_ms);
      ++n_unfused;
    }
  }
  std::string geo;
  if (n_fused > 0) geo += fmt("%.2fx cuDNN fused", std::exp(lg_fused / n_fused)) + " (" + std::to_string(n_fused) + " problems)";
  if (n_unfused > 0)
    geo += (geo.empty() ? "" : ", ") + fmt("%.2fx cuDNN unfused", std::exp(lg_unfused / n_unfused)) + " (" + std::to_string(n_unfused) +
           " problems)";
  if (!geo.empty()) std::printf("geomean of the tuned pick: %s\n", geo.c_str());
}

}  // namespace ktune::profile
