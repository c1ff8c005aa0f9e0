// ktune/tuner/timing.hpp — the arithmetic of measuring: robust statistics over repeated timings, the
// adaptive-repetition rule, and the deterministic choice of a winner among near-ties. Pure host code,
// shared by the CUDA backend and the host tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

namespace ktune::tuner {

// Quantile q ∈ [0, 1] with linear interpolation; `v` is sorted in place. NaN for an empty input.
inline double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

struct SampleStats {
  int n = 0;
  double median = 0, min = 0, p25 = 0, p75 = 0;
  // Interquartile range over the median: the spread measure the stopping rule uses (robust to the
  // occasional preempted or clock-throttled repeat, unlike the standard deviation).
  double rel_spread() const { return median > 0 ? (p75 - p25) / median : std::numeric_limits<double>::infinity(); }
};

inline SampleStats stats_of(std::span<const double> samples) {
  SampleStats s;
  std::vector<double> v(samples.begin(), samples.end());
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  s.median = quantile(v, 0.5);
  s.min = v.front();
  s.p25 = quantile(v, 0.25);
  s.p75 = quantile(v, 0.75);
  return s;
}

// How many times a candidate is run. Repeats come in batches (one host synchronisation per batch).
struct RepeatPolicy {
  int min_repeats = 5;          // never fewer (the first batch)
  int max_repeats = 50;         // never more
  int batch = 5;                // repeats between synchronisations
  double target_spread = 0.02;  // stop once IQR/median ≤ this (and min_repeats are done)
  double slow_cutoff = 1.5;     // after the first batch: a median this much above the best so far stops early
};

enum class RepeatDecision { more, stable, budget, max_repeats, slower_than_best };

constexpr std::string_view to_string(RepeatDecision d) {
  switch (d) {
    case RepeatDecision::more: return "more";
    case RepeatDecision::stable: return "stable";
    case RepeatDecision::budget: return "budget";
    case RepeatDecision::max_repeats: return "max repeats";
    case RepeatDecision::slower_than_best: return "slower than best";
  }
  return "?";
}

// After each batch: go on, or stop and why. `spent_ms` is the wall time spent on this candidate,
// `budget_ms` its share of the key's budget (≤ 0: none), `best_ms` the best median so far (∞: none).
inline RepeatDecision next_step(std::span<const double> samples, const RepeatPolicy& p, double spent_ms, double budget_ms,
                                double best_ms) {
  const int n = static_cast<int>(samples.size());
  if (n == 0) return RepeatDecision::more;
  const SampleStats s = stats_of(samples);
  if (std::isfinite(best_ms) && s.median > p.slow_cutoff * best_ms) return RepeatDecision::slower_than_best;
  if (n >= p.max_repeats) return RepeatDecision::max_repeats;
  if (n < p.min_repeats) return budget_ms > 0 && spent_ms >= budget_ms ? RepeatDecision::budget : RepeatDecision::more;
  if (s.rel_spread() <= p.target_spread) return RepeatDecision::stable;
  if (budget_ms > 0 && spent_ms >= budget_ms) return RepeatDecision::budget;
  return RepeatDecision::more;
}

// ---- Winner among near-ties ----------------------------------------------------------------------------

// One measured, validated candidate as the tie-break sees it.
struct Contender {
  std::string_view name;
  double ms = 0;
  long long resources = 0;  // threads × shared-memory bytes: the cheaper instance leaves more room to others
  std::size_t index = 0;    // caller's index
};

// The fastest contender, except that every contender within `band` (relative, e.g. 0.02) of the
// fastest counts as tied, and ties go to fewer resources, then the smaller name. The result does not
// depend on the input order, so the same timings always pick the same instance.
// Returns the position in `c`, or -1 when `c` is empty.
inline int pick_winner(std::span<const Contender> c, double band) {
  if (c.empty()) return -1;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& x : c) best = std::min(best, x.ms);
  const double limit = best * (1.0 + std::max(0.0, band));
  int win = -1;
  for (int i = 0; i < static_cast<int>(c.size()); ++i) {
    const auto& x = c[static_cast<std::size_t>(i)];
    if (!(x.ms <= limit)) continue;
    if (win < 0) {
      win = i;
      continue;
    }
    const auto& w = c[static_cast<std::size_t>(win)];
    if (x.resources != w.resources ? x.resources < w.resources : x.name < w.name) win = i;
  }
  return win;
}

inline double tflops_of(double flops, double ms) { return ms > 0 ? flops / (ms * 1e9) : 0.0; }

}  // namespace ktune::tuner
