// tools/ktune-profile/explain.cu — `ktune-profile --explain "bf16 tn 4096x4096x4096"` (or a conv line,
// "conv f16 32x56x56x64,64x3x3 bias_relu"): why each instance was pruned or lost, in the order a decision
// is made:
//   1. the constraint model (compile time): configs of the default families for the problem's math
//      and layouts that were never instantiated, with the rule that rejected each;
//   2. the dispatch table: instances that cannot implement the problem (alignment, device), with
//      can_implement's reason; instances for another math or layout are counted per family;
//   3. the rest, ranked by the cost model: on a GPU the runtime tuner measures them (scratch buffers,
//      validation against a reference) and its tactic report says, per instance, time, TF/s and
//      status (selected / slower / failed validation / pruned by model ...); without a GPU the
//      ranking is shown for an assumed H200 and the timings are left to a GPU run.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "explain_model.hpp"
#include "ktune/device.hpp"
#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/conv_cuda_backend.hpp"
#include "ktune/tuner/tuner.hpp"
#include "profile.hpp"

namespace ktune::profile {
namespace {

std::string maths_serving(MathOp req) {
  std::string s;
  for (MathOp m : {MathOp::simt_f32, MathOp::mma_f16, MathOp::mma_bf16, MathOp::mma_tf32, MathOp::wgmma_f16,
                   MathOp::wgmma_bf16, MathOp::wgmma_tf32})
    if (math_implements(m, req)) s += (s.empty() ? "" : " or ") + std::string(to_string(m));
  return s;
}

std::string device_line(const DeviceInfo& dev) {
  return dev.name + ", sm" + std::to_string(dev.cc) + ", " + std::to_string(dev.sm_count) + " SMs, " +
         std::to_string(dev.smem_optin_bytes) + " B (" + std::to_string(dev.smem_optin_bytes / 1024) +
         " KB) shared memory per block, L2 " + std::to_string(dev.l2_bytes >> 20) + " MiB";
}

// The header's device line: the GPU measured on, or the device assumed without one.
void print_device(bool gpu, const DeviceInfo& dev) {
  if (gpu)
    std::printf("   device  %s (device %d)\n", device_line(dev).c_str(), dev.ordinal);
  else
    std::printf("   device  %s\n           no CUDA device found: parts 1-3 are shown for this assumed device; timings need a GPU\n",
                device_line(dev).c_str());
}

// The tactic status as --explain words it: a measured instance that lost is "slower".
std::string status_text(const tuner::TacticRecord& t) {
  if (t.status == tuner::TacticStatus::measured) return "slower";
  return std::string(tuner::to_string(t.status));
}

// Part 1's families (Point: family_points.hpp): family names `fw` wide, pruned config names `nw`; `table`
// names the dispatch table, `serving` what the relevant configs compute.
template <class Point, class V>
void print_families(const std::vector<FamilyModelOf<V>>& families, int fw, int nw, const char* table, const char* serving) {
  std::size_t relevant = 0, valid = 0, pruned = 0;
  for (const FamilyModelOf<V>& f : families) {
    relevant += f.relevant;
    valid += f.valid;
    pruned += f.pruned.size();
    if (f.relevant == 0) {
      std::printf("   %-*s none of its %zu configs\n", fw, f.family.c_str(), f.configs);
      continue;
    }
    std::printf("   %-*s %zu of its %zu configs: %zu instantiated, %zu pruned\n", fw, f.family.c_str(), f.relevant, f.configs,
                f.valid, f.pruned.size());
    for (const PrunedConfigOf<V>& p : f.pruned) std::printf("     pruned  %-*s %s\n", nw, p.name.c_str(), Point::reason(p.verdict).c_str());
    for (const std::string& n : f.not_in_table) std::printf("     valid but not in this binary's %s: %s\n", table, n.c_str());
  }
  std::printf("   total: %zu configs for %s, %zu instantiated, %zu pruned by the model\n", relevant, serving, valid, pruned);
}

void print_model(const ModelExplanation& x, const GemmDesc& d) {
  const MathOp req = required_math(d);
  std::printf("\n1. Constraint model (compile time): configs of the default families that compute %s with layout %c%c\n",
              maths_serving(req).c_str(), layout_letter(d.a_layout), layout_letter(d.b_layout));
  print_families<GemmPoint>(x.families, 26, 58, "dispatch table", "this math and layout");
}

void print_table(const ModelExplanation& x, const DeviceInfo& dev, const GemmAlignment& al) {
  std::printf("\n2. Dispatch table: %zu instances in this binary; can_implement on %s, A/B/D vectors %d/%d/%d\n", x.table_size,
              dev.name.c_str(), al.a, al.b, al.d);
  if (x.other_math_layout_total > 0) {
    std::string per;
    for (const auto& [fam, n] : x.other_math_layout) per += (per.empty() ? "" : ", ") + fam + " " + std::to_string(n);
    std::printf("   %zu compute another math or layout (%s)\n", x.other_math_layout_total, per.c_str());
  }
  std::printf("   %zu for this math and layout cannot implement it%s\n", x.cannot.size(), x.cannot.empty() ? "" : ":");
  for (const Rejection& r : x.cannot)
    std::printf("     %-60s %s: %s\n", r.name.c_str(), std::string(to_string(r.code)).c_str(), r.reason.c_str());
  std::printf("   %zu can implement it\n", x.ranked.size());
}

void print_ranking(const ModelExplanation& x, int max_candidates) {
  std::printf("\n3. Cost model ranking of the tactics (instance @ launch options; heuristic_cost x tactic_cost_factor, each\n"
              "   instance's best tactic first): the tuner measures the top %s in this order; the heuristic choice is %s\n",
              max_candidates > 0 ? std::to_string(max_candidates).c_str() : "(all)",
              x.ranked.empty() ? "-" : std::string(x.ranked.front().entry->name).c_str());
  std::printf("   %4s  %-70s %9s  %s\n", "rank", "tactic", "rel.cost", "tuner");
  for (const RankedTactic& r : x.tactics) {
    const bool measured = max_candidates <= 0 || r.rank <= max_candidates;
    const bool heuristic = !x.ranked.empty() && r.name == x.ranked.front().entry->name;
    const std::string what = measured ? "measured" + std::string(heuristic ? " (heuristic pick)" : "")
                                      : "pruned by model (rank " + std::to_string(r.rank) + " > max_candidates " +
                                            std::to_string(max_candidates) + ")";
    std::printf("   %4d  %-70s %9s  %s\n", r.rank, r.name.c_str(), fmt("%.2f", r.relative).c_str(), what.c_str());
  }
}

// The tuner's report of the measured tactics; `rel`: each tactic's relative model cost, `pick`: the heuristic's
// choice (its instance name).
void print_report(const tuner::TuningReport& r, const std::map<std::string, double, std::less<>>& rel, const std::string& pick,
                  const DeviceInfo& dev) {
  std::printf("\n3. Tuner on %s (cost-model order; measured on scratch buffers, validated against a reference)\n",
              dev.name.c_str());
  if (!r.method.empty()) std::printf("   method: %s\n", r.method.c_str());
  std::printf("   %4s  %-70s %9s %10s %8s %8s  %s\n", "rank", "tactic", "rel.cost", "ms", "TF/s", "vs best", "status");
  std::size_t cannot = 0;
  for (const tuner::TacticRecord& t : r.records) {
    if (t.status == tuner::TacticStatus::cannot_implement) {
      ++cannot;  // listed in part 2
      continue;
    }
    const auto it = rel.find(t.name);
    const std::string rc = it != rel.end() ? fmt("%.2f", it->second) : "-";
    const std::string ms = std::isnan(t.ms) ? "-" : fmt("%.4f", t.ms);
    const std::string tf = std::isnan(t.tflops) ? "-" : fmt("%.1f", t.tflops);
    const std::string vs = !std::isnan(t.ms) && r.winner_ms > 0 && t.status != tuner::TacticStatus::selected
                               ? fmt("%+.1f%%", 100.0 * (t.ms / r.winner_ms - 1.0))
                               : "";
    std::string status = status_text(t);
    if (t.name == pick) status += " [heuristic pick]";
    if (!std::isnan(t.rel_error)) status += fmt(" (err %.1e)", t.rel_error);
    if (t.repeats > 0) status += " x" + std::to_string(t.repeats);
    if (!t.detail.empty()) status += ": " + t.detail;
    std::printf("   %4s  %-70s %9s %10s %8s %8s  %s\n", t.rank > 0 ? std::to_string(t.rank).c_str() : "-", t.name.c_str(),
                rc.c_str(), ms.c_str(), tf.c_str(), vs.c_str(), status.c_str());
  }
  if (cannot > 0) std::printf("   (%zu instances that cannot implement the problem: see part 2)\n", cannot);
  std::printf("   %s\n", tuner::summary_line(r).c_str());
  if (r.source == tuner::Source::tuned && !pick.empty()) {
    for (const tuner::TacticRecord& t : r.records)
      if (t.name == pick && !std::isnan(t.ms) && t.ms > 0 && r.winner_ms > 0)
        std::printf("   the heuristic pick (%s) reaches %.0f%% of the winner's speed\n", pick.c_str(), 100.0 * r.winner_ms / t.ms);
  }
}

// ---- conv2d --------------------------------------------------------------------------------------

void print_conv_model(const ConvModelExplanation& x, const Conv2dDesc& d) {
  std::printf("\n1. Constraint model (compile time): configs of the default conv families that compute %s\n",
              maths_serving(required_math(d)).c_str());
  print_families<ConvPoint>(x.families, 30, 72, "conv table", "this math");
}

void print_conv_table(const ConvModelExplanation& x, const DeviceInfo& dev, const ConvAlignment& al) {
  std::printf("\n2. Conv dispatch table: %zu instances in this binary; can_implement on %s, x/w/y vectors %d/%d/%d\n",
              x.table_size, dev.name.c_str(), al.x, al.w, al.y);
  if (x.other_math_total > 0) {
    std::string per;
    for (const auto& [fam, n] : x.other_math) per += (per.empty() ? "" : ", ") + fam + " " + std::to_string(n);
    std::printf("   %zu compute another math (%s)\n", x.other_math_total, per.c_str());
  }
  std::printf("   %zu for this math cannot implement it%s\n", x.cannot.size(), x.cannot.empty() ? "" : ":");
  for (const Rejection& r : x.cannot)
    std::printf("     %-76s %s: %s\n", r.name.c_str(), std::string(to_string(r.code)).c_str(), r.reason.c_str());
  std::printf("   %zu can implement it\n", x.ranked.size());
}

void print_conv_ranking(const ConvModelExplanation& x, int max_candidates) {
  std::printf("\n3. Heuristic order of the tactics (instance @ launch options; by the gather's rank, then the mma.sync tile\n"
              "   policy's mismatch, then the cost model: sm90_conv_cost for the Hopper routes, the GEMM model for mma.sync;\n"
              "   rel.cost against the best of the same gather rank): the tuner measures the top %s in this order; the\n"
              "   heuristic choice is %s\n",
              max_candidates > 0 ? std::to_string(max_candidates).c_str() : "(all)",
              x.ranked.empty() ? "-" : std::string(x.ranked.front()->name).c_str());
  std::printf("   %4s  %-84s %6s %8s %9s  %s\n", "rank", "tactic", "gather", "mismatch", "rel.cost", "tuner");
  for (const ConvRankedTactic& r : x.tactics) {
    const bool measured = max_candidates <= 0 || r.rank <= max_candidates;
    const bool heuristic = !x.ranked.empty() && r.name == x.ranked.front()->name;
    const std::string what = measured ? "measured" + std::string(heuristic ? " (heuristic pick)" : "")
                                      : "pruned by model (rank " + std::to_string(r.rank) + " > max_candidates " +
                                            std::to_string(max_candidates) + ")";
    std::printf("   %4d  %-84s %6d %8d %9s  %s\n", r.rank, r.name.c_str(), r.key.gather, r.key.mismatch,
                fmt("%.2f", r.relative).c_str(), what.c_str());
  }
}

int explain_conv(const ExplainOptions& opt, const tuner::TunerOptions& topt, bool gpu, const DeviceInfo& dev) {
  const Conv2dDesc& d = opt.conv->desc;
  const ConvAlignment al = opt.conv->alignment();
  std::printf("ktune-profile --explain: %s\n", opt.conv->name().c_str());
  std::printf("   key     %s\n", tuner::to_string(opt.conv->key()).c_str());
  const ConvShape cs = conv_shape(d);
  std::printf("   conv2d  y[%lldx%lldx%lldx%lld] %s = %s(x[%lldx%lldx%lldx%lld] NHWC * w[%lldx%lldx%lldx%lld] KRSC), math %s;"
              " implicit GEMM %lldx%lldx%lld\n",
              (long long)d.n, (long long)cs.p, (long long)cs.q, (long long)d.k, std::string(to_string(d.out_type)).c_str(),
              tuner::epilogue_tag(tuner::epilogue_flags(d.epilogue), d.epilogue.activation).c_str(), (long long)d.n,
              (long long)d.h, (long long)d.w, (long long)d.c, (long long)d.k, (long long)d.r, (long long)d.s, (long long)d.c,
              std::string(to_string(required_math(d))).c_str(), (long long)cs.m, (long long)d.k, (long long)cs.kgemm);
  std::printf("   vectors x/w/y %d/%d/%d elements (packed tensors, 256-byte aligned pointers)\n", al.x, al.w, al.y);
  print_device(gpu, dev);

  const ConvModelExplanation x = explain_conv_model(d, al, dev);
  print_conv_model(x, d);
  print_conv_table(x, dev, al);
  if (x.ranked.empty()) {
    std::printf("\nno conv instance can implement this problem on %s\n", dev.name.c_str());
    return 1;
  }
  if (!gpu) {
    print_conv_ranking(x, topt.max_candidates);
    std::printf("\nTimings need a GPU: no CUDA device found, nothing was measured. On a GPU, --explain runs the conv tuner on\n"
                "this problem and reports each candidate's time, TF/s and status.\n");
    return 0;
  }
  // Measured as ktune::conv2d's default tuner measures (CudaConvBackend's defaults).
  tuner::Tuner t(std::make_shared<tuner::CudaBackend>(), &gemm_table(), topt, std::make_shared<tuner::CudaConvBackend>(),
                 &conv_table());
  tuner::TuningReport report;
  const Status st = t.tune_conv(d, al, &report, /*force=*/true);
  t.release_scratch();
  if (!st.ok()) {
    std::fprintf(stderr, "ktune-profile: tuning failed: %s\n", st.to_string().c_str());
    print_conv_ranking(x, topt.max_candidates);
    return 1;
  }
  std::map<std::string, double, std::less<>> rel;
  for (const ConvRankedTactic& c : x.tactics) rel[c.name] = c.relative;
  print_report(report, rel, std::string(x.ranked.front()->name), dev);
  return report.source == tuner::Source::tuned ? 0 : 1;
}

}  // namespace

int explain_problem(const ExplainOptions& opt) {

  std::vector<std::string> env_warnings;
  tuner::TunerOptions topt = tuner::options_from_env({}, &env_warnings);
  for (const auto& w : env_warnings) std::fprintf(stderr, "ktune-profile: warning: %s\n", w.c_str());
  topt.cache_path.clear();  // explain measures; it neither reads nor writes a cache
  topt.autosave = false;
  topt.policy = tuner::Policy::tune;
  if (opt.max_candidates >= 0) topt.max_candidates = opt.max_candidates;

  const bool gpu = cuda_device_count() > 0;
  DeviceInfo dev;
  if (gpu) {
    if (!open_device(opt.device, dev, "no CUDA device found")) return 1;
  } else {
    dev = assumed_h200();
  }

  if (opt.conv) return explain_conv(opt, topt, gpu, dev);
  const tools::ShapeProblem& p = opt.problem;
  const GemmDesc d = p.desc();
  const GemmAlignment al = p.alignment();
  const tuner::ProblemKey key = tuner::make_key(d, al, topt.m_bucketing);
  std::printf("ktune-profile --explain: %s\n", p.name().c_str());
  std::printf("   key     %s\n", tuner::to_string(key).c_str());
  std::printf("   GEMM    D[%lldx%lld] %s = %s(A[%lldx%lld] %s %s-major · B[%lldx%lld] %s %s-major), math %s, lda %lld ldb %lld ldd %lld\n",
              (long long)d.m, (long long)d.n, std::string(to_string(d.d_type)).c_str(), p.epilogue_name().c_str(),
              (long long)d.m, (long long)d.k, std::string(to_string(d.ab_type)).c_str(), std::string(to_string(d.a_layout)).c_str(),
              (long long)d.k, (long long)d.n, std::string(to_string(d.ab_type)).c_str(), std::string(to_string(d.b_layout)).c_str(),
              std::string(to_string(required_math(d))).c_str(), (long long)d.lda, (long long)d.ldb, (long long)d.ldd);
  std::printf("   vectors A/B/D %d/%d/%d elements (%s)\n", al.a, al.b, al.d,
              p.align ? "align= given" : "packed leading dimensions, 256-byte aligned pointers");
  print_device(gpu, dev);

  const ModelExplanation x = explain_model(d, al, dev);
  print_model(x, d);
  print_table(x, dev, al);

  if (x.ranked.empty()) {
    std::printf("\nno instance can implement this problem on %s\n", dev.name.c_str());
    return 1;
  }
  if (!gpu) {
    print_ranking(x, topt.max_candidates);
    std::printf("\nTimings need a GPU: no CUDA device found, nothing was measured. On a GPU, --explain runs the tuner on this\n"
                "problem and reports each candidate's time, TF/s and status (selected / slower / failed validation /\n"
                "pruned by model).\n");
    return 0;
  }

  tuner::Tuner t(std::make_shared<tuner::CudaBackend>(), &gemm_table(), topt);
  tuner::TuningReport report;
  const Status st = t.tune(d, al, &report, /*force=*/true);
  t.release_scratch();
  if (!st.ok()) {
    std::fprintf(stderr, "ktune-profile: tuning failed: %s\n", st.to_string().c_str());
    print_ranking(x, topt.max_candidates);
    return 1;
  }
  std::map<std::string, double, std::less<>> rel;
  for (const RankedTactic& c : x.tactics) rel[c.name] = c.relative;
  print_report(report, rel, std::string(x.ranked.front().entry->name), dev);
  return report.source == tuner::Source::tuned ? 0 : 1;
}

}  // namespace ktune::profile
