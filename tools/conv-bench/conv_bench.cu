// ktune-conv-bench — conv2d fprop on the 15 ResNet-50 layers of shared/ANCHORS.md (and the C = 3 stem),
// fp16 NHWC, fused bias + ReLU, against cuDNN in the same process on the same data:
//   cuDNN fused    cudnnConvolutionBiasActivationForward (IMPLICIT_PRECOMP_GEMM, the only algorithm it
//                  takes with ReLU)
//   cuDNN unfused  cudnnConvolutionForward (cuDNN's own _v7 choice) + cudnnAddTensor + cudnnActivationForward
// Every ktune instance that accepts a layer is run by name; the heuristic's pick (select_conv, the
// Heuristic policy) is marked "pick"; "tuned" is ktune::conv2d() as it runs by default: the runtime
// tuner's tactic (instance + raster group), tuned on the first call of each layer (tuning time shown;
// KTUNE_TUNING=heuristic|off and KTUNE_CACHE apply as usual). CSV: "picked" marks the heuristic's
// instance, "tuned" the tuned tactic's row (its instance's default row when the tactic has no row of its own).
// "tuned-flushed": a second tuner whose conv measurements flush L2 before every repeat (the GEMM
// backend's policy, CudaBackendOptions::flush_l2 = true); the default conv tuner does not (its
// repeats find x and w in L2, as in this benchmark's graph replays; see tuner/conv_cuda_backend.hpp).
// Timing (tools::time_launches): warm-up calls, a CUDA graph of 10 calls, one warm-up replay, median of 5
// replays (GPU time per call); one buffer set, so x and w stay in L2 between calls. mma.sync instances:
// only those of the best gather rank among them (no narrower analytic vectors where a wider iterator
// applies). Every instance's output is compared with cuDNN's fused output (relative Frobenius error).
// The layers, the data (random non-zero values), the cuDNN calls and the error norm are tools/common's
// (conv_presets.hpp, conv_data.hpp, cudnn_conv_ref.hpp), as in bench/bench_conv.cu and ktune-profile --conv.
//
//   ktune-conv-bench [--n 32] [--csv out.csv] [--all] [--layer I[,J...]] [--budget SECONDS] [--tactics]
//                    [--splits S[,S...]] [--multicast] [--sm80]
// --all prints every instance's time per layer (default: the best 3 per route); --budget stops before
// a layer once that many seconds have passed (the summary covers the layers done). --tactics also times
// every non-default tactic the tuner would time (conv_launch_variants: raster group, split-K) of every
// instance; --splits also times every split-K instance (the Hopper routes) with each split count given,
// in parallel mode and, where the instance has it, serial mode, and with every cluster split-K size it
// takes (cluster_k, "@ck2"); with --multicast too, every cluster of both ("@ck2@mc2"). Those rows are named
// by tactic ("<instance>@split4p") and count for "best" like instances. --multicast also times every Hopper
// instance in each multicast cluster size it takes ("@mc2", "@mc4", "@mc8"). --only TEXT times only the
// tactics whose name contains TEXT and tunes nothing (for ncu: the first launches of a kernel are then that
// tactic's; the pick and cuDNN still run). --sm80 times only the mma.sync instances and picks among them
// (the mma.sync tile policy): the issue's "with the mma.sync families alone" figure, faster (no tuning: the
// "tuned" figures fall back to the pick); with --tactics also their persistent grids ("@pk2").
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../common/conv_data.hpp"
#include "../common/conv_presets.hpp"
#include "../common/cudnn_conv_ref.hpp"
#include "ktune/conv.hpp"
#include "ktune/tuner/conv_cuda_backend.hpp"
#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/default.hpp"

#ifndef KTUNE_GIT_COMMIT
#define KTUNE_GIT_COMMIT "unknown"
#endif

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

bool g_graph_failed = false;

// µs per call (see the header); -1 when the call fails.
double time_us(cudaStream_t s, const ktune::tools::LaunchFn& call) {
  ktune::tools::TimingOptions o;
  o.iters = 10;
  o.repeats = 5;
  o.warmup = 3;
  ktune::tools::Timing t;
  if (!ktune::tools::time_launches(call, s, o, t).ok()) {
    (void)ktune::tools::cuda_context_alive();  // clears an ordinary error (a sticky one shows in the next CK)
    return -1;
  }
  g_graph_failed |= !t.graph;
  return 1000.0 * t.median_ms;
}

// Stop on a CUDA or ktune error that leaves nothing to measure.
void CK(const ktune::Status& st, const char* what) {
  if (!st.ok()) {
    std::printf("%s: %s\n", what, st.to_string().c_str());
    std::exit(1);
  }
}

const char* route_of(const ktune::ConvKernelEntry& e) {
  switch (e.config.iterator) {
    case ktune::ConvIterator::gemm1x1: return "sm90_gemm1x1";
    case ktune::ConvIterator::tma_im2col: return "sm90_im2col";
    default: return "sm80_mma";
  }
}

struct Row {
  double us, err;
  std::string name, route;
};

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    const long x = std::strtol(p, &end, 10);
    if (end == p) break;
    v.push_back(static_cast<int>(x));
    p = *end == ',' ? end + 1 : end;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int N = 32;
  std::vector<int> only, splits;
  double budget_s = 1e9;
  bool all = false, tactics = false, multicast = false, sm80_only = false;
  const char* csv_path = nullptr;
  const char* only_tactic = nullptr;  // --only: time only the tactics whose name contains this (ncu runs)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--all")) all = true;
    else if (!std::strcmp(argv[i], "--n") && i + 1 < argc) N = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--layer") && i + 1 < argc) only = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--splits") && i + 1 < argc) splits = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--tactics")) tactics = true;
    else if (!std::strcmp(argv[i], "--multicast")) multicast = true;
    else if (!std::strcmp(argv[i], "--sm80")) sm80_only = true;
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
    else if (!std::strcmp(argv[i], "--budget") && i + 1 < argc) budget_s = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only_tactic = argv[++i];
    else {
      std::printf("usage: %s [--n 32] [--csv out.csv] [--all] [--layer I[,J...]] [--budget SECONDS] [--tactics] [--splits S[,S...]] [--multicast] [--sm80] [--only TEXT]\n",
                  argv[0]);
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line: a run cut short by a timeout keeps what it printed
  FILE* csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv) std::fprintf(csv, "layer,instance,route,picked,us,tflops,rel_err_vs_cudnn,cudnn_fused_us,cudnn_unfused_us,tuned\n");
  cudaStream_t s;
  CK(ktune::cuda_status(cudaStreamCreate(&s), "cudaStreamCreate"), "stream");
  ktune::tools::CudnnConvRef cudnn;
  CK(cudnn.init(), "cuDNN");
  ktune::DeviceInfo dev;
  CK(ktune::current_device(dev), "no device");
  std::printf("ktune-conv-bench commit %s: device %s cc%d, %d SMs, cuDNN %s, %zu conv instances, N=%d, f16, bias+ReLU\n",
              KTUNE_GIT_COMMIT, dev.name.c_str(), dev.cc, dev.sm_count, ktune::tools::cudnn_version_string().c_str(),
              ktune::conv_table().size(), N);
  double lg_pick = 0, lg_best = 0, lg_unf_pick = 0, lg_tuned = 0, lg_tuned_best = 0, lg_warm = 0;
  int warm_is_best = 0;
  ktune::tuner::CudaBackendOptions warm_opt;  // the "other" policy: L2 flushed (the conv default is not)
  warm_opt.flush_l2 = true;
  ktune::tuner::TunerOptions warm_topt;
  warm_topt.log_level = ktune::tuner::LogLevel::off;
  ktune::tuner::Tuner warm_tuner(std::make_shared<ktune::tuner::CudaBackend>(warm_opt), &ktune::gemm_table(), warm_topt,
                                 std::make_shared<ktune::tuner::CudaConvBackend>(warm_opt), &ktune::conv_table());
  int tuned_is_best = 0;
  bool overhead_done = false;
  // --sm80: the heuristic pick among the mma.sync instances alone (their tile policy, conv_tile_mismatch),
  // as a device without the Hopper routes would choose.
  ktune::ConvTable sm80_table;
  for (const auto& e : ktune::conv_table().entries())
    if (!ktune::is_sm90_iterator(e.config.iterator)) sm80_table.add(e);
  std::map<std::string, double> lg_route;
  std::map<std::string, int> n_route;
  int nl = 0;
  double worst_err = 0;
  std::string worst_name;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> table;
  // The 15 layers of shared/ANCHORS.md, then the C = 3 stem.
  std::vector<ktune::tools::ConvLayer> layers = ktune::tools::resnet50_layers();
  layers.push_back(ktune::tools::resnet50_stem_c3);
  for (int li = 0; li < int(layers.size()); ++li) {
    if (!only.empty() && std::find(only.begin(), only.end(), li) == only.end()) continue;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > budget_s) {
      std::printf("budget of %.0f s spent: layers from L%d on not run\n", budget_s, li);
      break;
    }
    const ktune::tools::ConvLayer& L = layers[li];
    const ktune::Conv2dDesc d = ktune::tools::conv_problem(N, L, ktune::DType::f16);
    const std::string label_text = ktune::tools::conv_label(d);  // "56 64->64 3x3 s1"
    const char* label = label_text.c_str();
    // One buffer set: x and w stay in L2 between the timed calls (see the header).
    ktune::tools::ConvData data;
    CK(data.create(d, dev, 1 + li, s, /*max_sets=*/1), "conv data");
    const ktune::Conv2dOperands o = data.ops(0);
    void* const y = o.y;
    const double flops = ktune::tools::conv_flops(d);

    // ---- cuDNN: the reference output (data.ref(), written by the plan's first fused call) and its time
    std::unique_ptr<ktune::tools::CudnnConvRef::Plan> plan;
    CK(cudnn.make_plan(d, data.ref_ops(), s, plan), "cuDNN plan");
    CK(ktune::cuda_status(cudaStreamSynchronize(s), "cuDNN reference"), "cuDNN reference");
    const bool fused_ok = plan->fused_status.ok();
    double t_fused = -1;
    if (fused_ok)
      t_fused = time_us(s, [&](int, cudaStream_t st) { return cudnn.run_fused(*plan, data.ref_ops(), st); });
    else
      std::printf("  cuDNN fused failed: %s\n", plan->fused_status.to_string().c_str());
    // data.ref() holds cuDNN's fused output now (every timed call wrote the same values)
    // Relative Frobenius error of y against it (1 when an element is not finite).
    auto error_vs_cudnn = [&](const void* out) {
      ktune::tools::ErrorStats es;
      CK(data.error_vs_ref(out, s, es), "error norm");
      return es.nonfinite > 0 || !std::isfinite(es.rel) ? 1.0 : es.rel;
    };

    // ---- ktune: every instance that accepts the layer, and the one conv2d() picks
    const ktune::ConvKernelEntry* pick = nullptr;
    CK(ktune::select_conv(d, o, sm80_only ? sm80_table : ktune::conv_table(), dev, {}, pick), "select_conv");
    pick = ktune::conv_table().find(pick->name);  // sm80_table holds copies: the rows below compare table addresses
    // ---- the tuner's pick: ktune::conv2d() with default options tunes this key on its first call (here,
    // explicitly, to report the tuning time); timed below after every instance
    ktune::tuner::TuningReport tune_report;
    double tuning_ms = 0;
    const ktune::ConvTactic* tac = nullptr;
    // (--sm80: the tuners would rank the Hopper routes; their time goes to the mma.sync rows. --only: no tuning,
    // so that the first launches of the kernel a profiler waits for are the named tactic's.)
    if (!sm80_only && only_tactic == nullptr) {
      const auto c0 = std::chrono::steady_clock::now();
      const ktune::Status ts = ktune::default_tuner().tune_conv(d, ktune::alignment_of(d, o), &tune_report);
      tuning_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
      tac = ktune::default_tuner().lookup_conv(d, o);
      if (!ts.ok() || tac == nullptr) std::printf("  tuning failed: %s\n", ts.to_string().c_str());
    }
    std::vector<Row> rows;
    double t_pick = -1, t_best = 1e30;
    std::string best_name;
    std::map<std::string, double> best_route;
    int best_sm80_rank = 1 << 30;
    for (const auto& e : ktune::conv_table().entries())
      if (!ktune::is_sm90_iterator(e.config.iterator) && ktune::can_implement(e, d, ktune::alignment_of(d, o), &dev).ok())
        best_sm80_rank = std::min(best_sm80_rank, ktune::gather_rank(e.config));
    for (const auto& e : ktune::conv_table().entries()) {
      if (!ktune::can_implement(e, d, ktune::alignment_of(d, o), &dev).ok()) continue;
      if (!ktune::is_sm90_iterator(e.config.iterator) && ktune::gather_rank(e.config) > best_sm80_rank && &e != pick) continue;
      if (sm80_only && ktune::is_sm90_iterator(e.config.iterator) && &e != pick) continue;
      // The instance's default launch, then (--tactics, --splits) other launch options by tactic name.
      std::vector<ktune::ConvLaunchOptions> launches{ktune::ConvLaunchOptions{}};
      auto add_launch = [&](const ktune::ConvLaunchOptions& lo) {
        for (const auto& x : launches)
          if (ktune::same_launch(x, lo)) return;
        launches.push_back(lo);
      };
      if (tactics)
        for (const auto& lo : ktune::conv_launch_variants(e, d, dev)) add_launch(lo);
      if (ktune::conv_supports_split_k(e.config))
        for (int sk : splits)
          for (ktune::SplitKMode mode : {ktune::SplitKMode::parallel, ktune::SplitKMode::serial}) {
            if (sk < 2 || (mode == ktune::SplitKMode::serial && !ktune::supports_serial_split_k(e.config.gemm))) continue;
            ktune::ConvLaunchOptions lo;
            lo.split_k = sk;
            lo.split_mode = mode;
            add_launch(lo);
          }
      if (!splits.empty())  // and every cluster split-K size the instance takes
        for (int ck = 2; ck <= ktune::conv_cluster_k_limit(e.config); ++ck) {
          ktune::ConvLaunchOptions lo;
          lo.cluster_k = ck;
          add_launch(lo);
        }
      if (multicast)  // every multicast cluster size the instance takes
        for (int mc = 2; mc <= ktune::conv_multicast_limit(e.config); mc *= 2) {
          ktune::ConvLaunchOptions lo;
          lo.multicast = mc;
          add_launch(lo);
        }
      if (multicast && !splits.empty())  // and both: clusters of mc x ck CTAs (multicast groups that split K)
        for (int ck = 2; ck <= ktune::conv_cluster_k_limit(e.config); ++ck)
          for (int mc = 2; mc <= ktune::conv_multicast_limit(e.config) && mc * ck <= ktune::conv_max_cluster; mc *= 2) {
            ktune::ConvLaunchOptions lo;
            lo.cluster_k = ck;
            lo.multicast = mc;
            add_launch(lo);
          }
      // The CSV's "tuned" mark: the tuned tactic's row, or its instance's default row when it has none.
      bool tuned_row = false;
      for (const auto& lo : launches) tuned_row |= tac != nullptr && tac->entry == &e && ktune::same_launch(tac->launch, lo);
     for (const ktune::ConvLaunchOptions& launch : launches) {
      const bool variant = !ktune::is_default_launch(launch);
      ktune::ConvOptions opt;
      const std::string name = ktune::conv_tactic_name(e.name, launch);
      if (only_tactic != nullptr && name.find(only_tactic) == std::string::npos) continue;
      const std::string instance_name(e.name);
      opt.instance = instance_name.c_str();
      opt.launch = launch;
      CK(data.poison(y, s), "poison y");  // NaN: an element not written shows up
      const double t = time_us(s, [&](int, cudaStream_t st) { return ktune::conv2d(d, o, st, opt); });
      double err = -1;
      if (t > 0 && fused_ok) {
        err = error_vs_cudnn(y);
        if (err > worst_err) {
          worst_err = err;
          worst_name = name + " on " + label;
        }
      }
      rows.push_back({t, err, name, route_of(e)});
      if (csv)
        std::fprintf(csv, "%s,%s,%s,%d,%.2f,%.1f,%.2e,%.2f,", label, name.c_str(), route_of(e), &e == pick && !variant ? 1 : 0, t,
                     t > 0 ? flops / t * 1e-6 : 0.0, err, t_fused);
      if (t > 0 && t < t_best) {
        t_best = t;
        best_name = name;
      }
      if (t > 0 && (!best_route.count(route_of(e)) || t < best_route[route_of(e)])) best_route[route_of(e)] = t;
      if (&e == pick && !variant) t_pick = t;
      if (csv)
        std::fprintf(csv, ",%d\n", tac != nullptr && tac->entry == &e && (ktune::same_launch(tac->launch, launch) || (!variant && !tuned_row)) ? 1 : 0);
     }
    }
    // ---- the tuned pick, timed as ktune::conv2d() runs it by default
    double t_tuned = -1, tuned_err = -1;
    std::string tuned_name = "(none)";
    {
      if (tac != nullptr) {
        tuned_name = tac->name + " [" + std::string(ktune::tuner::to_string(tune_report.source)) + "]";
        CK(data.poison(y, s), "poison y");
        t_tuned = time_us(s, [&](int, cudaStream_t st) { return ktune::conv2d(d, o, st); });
        if (t_tuned > 0 && fused_ok) {
          tuned_err = error_vs_cudnn(y);
          if (tuned_err > worst_err) {
            worst_err = tuned_err;
            worst_name = tuned_name + " on " + label;
          }
        }
        if (!overhead_done && t_tuned > 0) {  // host time per call: the tuned lookup + launch vs the raw launch
          overhead_done = true;
          auto host_us = [&](const std::function<bool()>& call) {
            std::vector<double> v;
            for (int rep = 0; rep < 7; ++rep) {
              CK(ktune::cuda_status(cudaStreamSynchronize(s), "sync"), "sync");
              const auto h0 = std::chrono::steady_clock::now();
              for (int i = 0; i < 50; ++i) call();
              v.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() / 50);
            }
            CK(ktune::cuda_status(cudaStreamSynchronize(s), "sync"), "sync");
            return median(v);
          };
          const double raw = host_us([&] { return tac->entry->launch(d, o, tac->launch, s).ok(); });
          const double tuned_call = host_us([&] { return ktune::conv2d(d, o, s).ok(); });
          const double raw2 = host_us([&] { return tac->entry->launch(d, o, tac->launch, s).ok(); });
          std::printf("host overhead (%s, %s): ktune::conv2d %.2f us/call, raw launch %.2f / %.2f us/call, conv2d - raw %.2f us\n",
                      label, tac->name.c_str(), tuned_call, raw, raw2, tuned_call - std::min(raw, raw2));
        }
      }
    }
    // ---- the other tuner's pick (L2 flushed before each of its repeats)
    double t_warm = -1;
    std::string warm_name = "(none)";
    {
      const ktune::ConvTactic* wt = nullptr;
      if (!sm80_only && only_tactic == nullptr && warm_tuner.select_conv(d, o, s, wt).ok() && wt != nullptr) {
        warm_name = wt->name;
        t_warm = time_us(s, [&](int, cudaStream_t st) { return wt->entry->launch(d, o, wt->launch, st); });
      }
    }
    const double t_unf = time_us(s, [&](int, cudaStream_t st) { return cudnn.run_unfused(*plan, o, st); });
    // the pick with no epilogue (D = conv): how much of its time the bias+ReLU epilogue costs
    double t_pick_plain = -1;
    {
      ktune::Conv2dDesc plain = d;
      plain.epilogue = ktune::EpilogueSpec{};
      ktune::ConvOptions opt;
      const std::string name(pick->name);
      opt.instance = name.c_str();
      t_pick_plain = time_us(s, [&](int, cudaStream_t st) { return ktune::conv2d(plain, o, st, opt); });
    }
    double pick_err = -1;
    for (const Row& r : rows)
      if (r.name == pick->name) pick_err = r.err;
    std::printf("L%-2d %-20s | pick %7.1f us %5.0f TF/s (no epilogue %7.1f) %s | best %7.1f %s | cudnn fused %7.1f (anchor %5.1f) "
                "unfused %7.1f [algo %d] | fused/pick %.2fx fused/best %.2fx unfused/pick %.2fx | pick rel.err %.1e\n",
                li, label, t_pick, flops / t_pick * 1e-6, t_pick_plain, pick->name.data(), t_best, best_name.c_str(),
                t_fused, L.anchor_fused_us, t_unf, (int)plan->unfused_algo, t_fused / t_pick, t_fused / t_best, t_unf / t_pick, pick_err);
    std::printf("     tuned %7.1f us %s | fused/tuned %.2fx | tuned/best %.3f | tuning %.0f ms | rel.err %.1e\n", t_tuned,
                tuned_name.c_str(), t_fused / t_tuned, t_tuned / t_best, tuning_ms, tuned_err);
    std::printf("     tuned-flushed %7.1f us %s | fused/tuned-flushed %.2fx | tuned-flushed/best %.3f\n", t_warm, warm_name.c_str(),
                t_fused / t_warm, t_warm / t_best);
    for (auto& [route, t] : best_route) std::printf("     best %-13s %7.1f us (fused/this %.2fx)\n", route.c_str(), t, t_fused / t);
    {
      char row[512];
      std::snprintf(row, sizeof row, "| %s | %.1f | %.1f | %.1f | %s | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f |", label, t_pick,
                    t_tuned, t_best, best_name.c_str(), t_fused, t_unf, t_fused / t_pick, t_fused / t_tuned, t_fused / t_best,
                    t_unf / t_pick);
      table.push_back(row);
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.us < b.us; });
    std::map<std::string, int> shown;
    for (const Row& r : rows)
      if (all || shown[r.route]++ < 3) std::printf("       %8.1f us  err %.1e  %s\n", r.us, r.err, r.name.c_str());
    if (L.anchor_fused_us > 0 && t_fused > 0 && t_unf > 0 && t_pick > 0) {
      lg_pick += std::log(t_fused / t_pick);
      lg_best += std::log(t_fused / t_best);
      lg_unf_pick += std::log(t_unf / t_pick);
      const double tt = t_tuned > 0 ? t_tuned : t_pick;  // a failed tuning counts as the heuristic's time
      lg_tuned += std::log(t_fused / tt);
      lg_tuned_best += std::log(tt / t_best);
      tuned_is_best += tt <= 1.03 * t_best ? 1 : 0;
      const double tw = t_warm > 0 ? t_warm : t_pick;
      lg_warm += std::log(t_fused / tw);
      warm_is_best += tw <= 1.03 * t_best ? 1 : 0;
      // per route: the route's best, or the overall best where the route does not apply
      for (const char* route : {"sm90_gemm1x1", "sm90_im2col", "sm80_mma"}) {
        const double t = best_route.count(route) ? best_route[route] : t_best;
        lg_route[route] += std::log(t_fused / t);
      }
      ++nl;
    }
    if (csv) std::fflush(csv);
  }
  std::printf("\n| layer | ktune heuristic pick us | ktune tuned us | best us | best instance | cuDNN fused us | cuDNN unfused us | fused/pick | fused/tuned | fused/best | unfused/pick |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& r : table) std::printf("%s\n", r.c_str());
  std::printf("timing: %s\n", g_graph_failed ? "SOME CALLS NOT CAPTURABLE: direct launches used for them" : "CUDA graph replay for all");
  std::printf("max rel.err vs cuDNN fused over every instance and layer: %.2e (%s)\n", worst_err, worst_name.c_str());
  if (nl) {
    std::printf("GEOMEAN over %d layers: cudnn_fused/ktune_pick %.3fx, cudnn_fused/ktune_best %.3fx, cudnn_unfused/ktune_pick %.2fx\n",
                nl, std::exp(lg_pick / nl), std::exp(lg_best / nl), std::exp(lg_unf_pick / nl));
    std::printf("GEOMEAN over %d layers: cudnn_fused/ktune_tuned %.3fx; ktune_tuned/ktune_best %.3f; tuned within 3%% of the best instance on %d of %d layers\n",
                nl, std::exp(lg_tuned / nl), std::exp(lg_tuned_best / nl), tuned_is_best, nl);
    std::printf("GEOMEAN over %d layers: cudnn_fused/ktune_tuned_flushed (L2 flushed while tuning) %.3fx; within 3%% of the best instance on %d of %d layers\n",
                nl, std::exp(lg_warm / nl), warm_is_best, nl);
    for (auto& [route, lg] : lg_route)
      std::printf("GEOMEAN cudnn_fused / best %s (overall best where it does not apply): %.3fx\n", route.c_str(), std::exp(lg / nl));
  }
  if (csv) std::fclose(csv);
  return 0;
}
