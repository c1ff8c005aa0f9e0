// tools/ktune-profile/quality.cu — `ktune-profile --tune-quality [shapes file]`: how good is the
// tuner's pick? For every shape (the shapes file, or a built-in sweep of squares, LLM prefill and
// decode, unaligned and small-K shapes):
//   1. the tuner as an application gets it (default TunerOptions: cost-model top-k, key budget)
//      tunes the key with a fresh tuner and picks a tactic;
//   2. an exhaustive tuner times EVERY candidate tactic (every instance that can implement the shape
//      × every launch variant), no top-k, no budget, no early stop, with the same measuring backend:
//      synthetic non-zero inputs, L2 flushed before every repeat, CUDA events around each launch,
//      median of adaptive repeats (at least 5);
//   3. ratio = exhaustive time of the tuner's pick / exhaustive best time.
// The target (issue 3): ratio ≤ 1.03 on ≥ 90% of the shapes.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ktune/device.hpp"
#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/tuner.hpp"
#include "profile.hpp"
#include "quality_model.hpp"

namespace ktune::profile {

namespace {

struct Row : QualityComparison {
  std::string shape;
  double tune_ms = NAN, sweep_ms = NAN;
  std::size_t tuner_measured = 0;
};

}  // namespace

int tune_quality(const QualityOptions& opt, const std::vector<tools::ShapeProblem>& shapes) {
  DeviceInfo dev;
  if (!open_device(opt.device, dev, "no CUDA device found: --tune-quality measures on the GPU")) return 1;
  auto backend = std::make_shared<tuner::CudaBackend>();
  tuner::TunerOptions base;
  base.log_level = tuner::LogLevel::off;
  base.policy = tuner::Policy::tune;
  base.cache_path.clear();
  if (opt.max_candidates >= 0) base.max_candidates = opt.max_candidates;
  tuner::TunerOptions sweep = base;
  sweep.max_candidates = 0;     // every tactic
  sweep.max_ms_per_key = 0;     // no key budget
  sweep.max_launch_ms = 1e9;
  sweep.repeats.slow_cutoff = std::numeric_limits<double>::infinity();  // no early stop: every tactic gets a median
  sweep.repeats.min_repeats = 5;
  sweep.repeats.max_repeats = opt.quick ? 15 : 30;

  std::printf("ktune-profile --tune-quality: %zu shapes on %s (sm%d, %d SMs)\n", shapes.size(), dev.name.c_str(), dev.cc,
              dev.sm_count);
  std::printf("tuner: default options (top %s tactics by the cost model, key budget %.0f ms); exhaustive: every tactic, "
              "no budget, no early stop, %d..%d repeats; both: synthetic inputs, L2 flushed before each repeat, CUDA "
              "events, median\n",
              base.max_candidates > 0 ? std::to_string(base.max_candidates).c_str() : "(all)", base.max_ms_per_key,
              sweep.repeats.min_repeats, sweep.repeats.max_repeats);

  std::vector<Row> rows;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const tools::ShapeProblem& p = shapes[i];
    Row row;
    row.shape = p.name();
    std::printf("\n[%zu/%zu] %s\n", i + 1, shapes.size(), row.shape.c_str());
    std::fflush(stdout);
    const GemmDesc d = p.desc();
    const GemmAlignment al = p.alignment();
    // 1. The tuner's pick (a fresh tuner: nothing cached).
    tuner::TuningReport pick;
    {
      tuner::Tuner t(backend, &gemm_table(), base);
      if (const Status s = t.tune(d, al, &pick, /*force=*/true); !s.ok()) {
        row.note = "tuner: " + s.to_string();
        std::printf("  %s\n", row.note.c_str());
        rows.push_back(row);
        continue;
      }
    }
    row.pick = pick.winner;
    row.tune_ms = pick.tuning_ms;
    row.tuner_measured = pick.count(tuner::TacticStatus::selected) + pick.count(tuner::TacticStatus::measured) +
                         pick.count(tuner::TacticStatus::slower_than_best);
    // 2. Every tactic.
    tuner::TuningReport all;
    {
      tuner::Tuner t(backend, &gemm_table(), sweep);
      if (const Status s = t.tune(d, al, &all, /*force=*/true); !s.ok()) {
        row.note = "exhaustive: " + s.to_string();
        std::printf("  %s\n", row.note.c_str());
        rows.push_back(row);
        continue;
      }
    }
    static_cast<QualityComparison&>(row) = compare_with_exhaustive(pick, all);
    row.sweep_ms = all.tuning_ms;
    std::printf("  tuner: %s (%zu tactics measured, %.0f ms)   exhaustive: %zu tactics, %.0f ms\n", row.pick.c_str(),
                row.tuner_measured, row.tune_ms, row.tactics, row.sweep_ms);
    if (row.ok)
      std::printf("  pick %.4f ms, best %.4f ms (%s): ratio %.3f %s; best with default launch options %.4f ms (%s)\n",
                  row.pick_ms, row.best_ms, row.best.c_str(), row.ratio, row.ratio <= 1.03 ? "(within 3%)" : "(MORE THAN 3% SLOWER)",
                  row.best_default_ms, row.best_default.c_str());
    else
      std::printf("  %s\n", row.note.c_str());
    if (opt.verbose)
      for (const auto& l : tuner::tactic_lines(all)) std::printf("  %s\n", l.c_str());
    std::fflush(stdout);
    rows.push_back(row);
  }
  backend->release_scratch();

  std::size_t pw = 5, sw = 5, bw = 4;
  for (const auto& r : rows) {
    sw = std::max(sw, r.shape.size());
    pw = std::max(pw, r.pick.size());
    bw = std::max(bw, r.best.size());
  }
  std::printf("\nsummary: the tuner's pick vs the exhaustive best (same backend timing)\n");
  std::printf("(variants: best default-options time / pick time, what launch options gain over instance-only tuning)\n");
  std::printf("%-*s  %-*s %10s  %-*s %10s %7s %9s %8s %8s %9s\n", int(sw), "shape", int(pw), "pick", "pick ms", int(bw), "best",
              "best ms", "ratio", "variants", "tactics", "tune ms", "sweep ms");
  for (const auto& r : rows) {
    std::printf("%-*s  %-*s %10s  %-*s %10s %7s %9s %8zu %8s %9s%s%s\n", int(sw), r.shape.c_str(), int(pw), r.pick.empty() ? "-" : r.pick.c_str(),
                r.ok ? fmt("%.4f", r.pick_ms).c_str() : "-", int(bw), r.best.empty() ? "-" : r.best.c_str(),
                r.ok ? fmt("%.4f", r.best_ms).c_str() : "-", r.ok ? fmt("%.3f", r.ratio).c_str() : "-",
                r.ok && std::isfinite(r.best_default_ms) ? fmt("%.2fx", r.best_default_ms / r.pick_ms).c_str() : "-", r.tactics,
                std::isnan(r.tune_ms) ? "-" : fmt("%.0f", r.tune_ms).c_str(), std::isnan(r.sweep_ms) ? "-" : fmt("%.0f", r.sweep_ms).c_str(),
                r.note.empty() ? "" : "  ", r.note.c_str());
  }
  const QualitySummary sum = summarize_quality(std::vector<QualityComparison>(rows.begin(), rows.end()));
  std::printf("\nwithin 3%% of the exhaustive best: %zu of %zu shapes (%.0f%%; %zu compared); target >= 90%%: %s\n", sum.within,
              sum.total, 100.0 * sum.fraction, sum.compared, sum.met ? "MET" : "NOT MET");
  return sum.compared == sum.total ? 0 : 1;
}

}  // namespace ktune::profile
