// tools/ktune-profile/quality_model.hpp — the part of `ktune-profile --tune-quality` that needs no
// GPU: the built-in shape sweep, and the comparison of the tuner's pick with an exhaustive tactic
// report (which times count, the ratio, the fraction of shapes within the band). Host-only,
// header-only (host-tested).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "ktune/tuner/report.hpp"

namespace ktune::profile {

// The built-in sweep, as shapes-file lines: squares, LLM prefill and decode (shared/ANCHORS.md),
// unaligned, small and long K, other precisions/layouts. `quick` drops the slowest ones.
inline std::vector<std::string> default_quality_shapes(bool quick) {
  std::vector<std::string> v = {
      // squares
      "bf16 tn 256x256x256", "bf16 tn 1024x1024x1024", "bf16 tn 2048x2048x2048", "bf16 tn 4096x4096x4096",
      "bf16 tn 8192x8192x8192",
      // LLM prefill
      "bf16 tn 4096x11008x4096", "bf16 tn 1024x4096x4096", "bf16 tn 128x4096x4096", "bf16 tn 128x28672x8192",
      // decode
      "bf16 tn 16x4096x4096", "bf16 tn 16x11008x4096", "bf16 tn 1x4096x4096", "bf16 tn 32x28672x8192",
      // unaligned, small K, long K
      "bf16 tn 4095x4097x4093", "bf16 tn 3000x5000x700", "bf16 tn 8192x8192x64", "bf16 tn 64x64x65536",
      // other precisions, layouts, epilogues
      "f16 nn 2048x2048x2048", "f16 tn 512x512x512", "tf32 tn 2048x2048x2048", "bf16 tn 4096x4096x4096 bias_relu"};
  if (quick) {
    const std::vector<std::string> slow = {"bf16 tn 8192x8192x8192", "bf16 tn 32x28672x8192", "f16 nn 2048x2048x2048",
                                           "bf16 tn 4096x4096x4096 bias_relu"};
    v.erase(std::remove_if(v.begin(), v.end(), [&](const std::string& s) { return std::find(slow.begin(), slow.end(), s) != slow.end(); }),
            v.end());
  }
  return v;
}

// A record with a usable median time (measured and valid; stopped early still has a median).
inline bool has_valid_time(const tuner::TacticRecord& r) {
  return (r.status == tuner::TacticStatus::selected || r.status == tuner::TacticStatus::measured ||
          r.status == tuner::TacticStatus::slower_than_best) &&
         std::isfinite(r.ms) && r.ms > 0;
}

struct QualityComparison {
  std::string pick, best;  // tactic names
  double pick_ms = std::numeric_limits<double>::quiet_NaN(), best_ms = std::numeric_limits<double>::quiet_NaN();
  double ratio = std::numeric_limits<double>::quiet_NaN();  // pick_ms / best_ms, both from the exhaustive report
  // The best tactic with default launch options (what instance-only tuning could reach at best).
  std::string best_default;
  double best_default_ms = std::numeric_limits<double>::quiet_NaN();
  std::size_t tactics = 0;  // candidate tactics in the exhaustive report (not counting cannot-implement)
  bool ok = false;          // compared; else `note` says why not
  std::string note;
};

// The tuner's pick (its report's winner) against the exhaustive report of the same key. Ties for the
// best time go to the smaller name, so the comparison is deterministic.
inline QualityComparison compare_with_exhaustive(const tuner::TuningReport& pick, const tuner::TuningReport& all) {
  QualityComparison q;
  q.pick = pick.winner;
  double best = std::numeric_limits<double>::infinity(), best_default = best;
  for (const auto& r : all.records) {
    if (r.status == tuner::TacticStatus::cannot_implement) continue;
    ++q.tactics;
    if (!has_valid_time(r)) continue;
    if (r.ms < best || (r.ms == best && r.name < q.best)) {
      best = r.ms;
      q.best = r.name;
    }
    if (r.name.find('@') == std::string::npos && (r.ms < best_default || (r.ms == best_default && r.name < q.best_default))) {
      best_default = r.ms;
      q.best_default = r.name;
    }
    if (r.name == q.pick) q.pick_ms = r.ms;
  }
  if (q.pick.empty()) q.note = "the tuner picked nothing";
  else if (!std::isfinite(best)) q.note = "no tactic has a valid exhaustive time";
  else if (std::isnan(q.pick_ms)) q.note = "the tuner's pick " + q.pick + " has no valid exhaustive time";
  if (std::isfinite(best_default)) q.best_default_ms = best_default;
  if (!q.note.empty()) return q;
  q.best_ms = best;
  q.ratio = q.pick_ms / best;
  q.ok = true;
  return q;
}

struct QualitySummary {
  std::size_t within = 0, compared = 0, total = 0;
  double fraction = 0;  // within / total (a shape that could not be compared counts as a miss)
  bool met = false;     // fraction >= target
};

inline QualitySummary summarize_quality(const std::vector<QualityComparison>& rows, double band = 0.03, double target = 0.9) {
  QualitySummary s;
  s.total = rows.size();
  for (const auto& r : rows) {
    if (!r.ok) continue;
    ++s.compared;
    s.within += r.ratio <= 1.0 + band ? 1 : 0;
  }
  s.fraction = s.total > 0 ? double(s.within) / double(s.total) : 0.0;
  s.met = s.total > 0 && s.fraction >= target;
  return s;
}

}  // namespace ktune::profile
