// ktune/tuner/report.hpp — the tactic log: per key, every candidate with its name, time, TF/s and
// what happened to it (selected / measured / failed validation / pruned / cannot implement ...), in
// the spirit of TensorRT's verbose tactic log. The same records go to the log and to a user callback.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/tuner/key.hpp"

namespace ktune::tuner {

enum class LogLevel : std::uint8_t { off = 0, warn = 1, info = 2, verbose = 3 };

constexpr std::string_view to_string(LogLevel l) {
  switch (l) {
    case LogLevel::off: return "off";
    case LogLevel::warn: return "warn";
    case LogLevel::info: return "info";
    case LogLevel::verbose: return "verbose";
  }
  return "?";
}

enum class TacticStatus : std::uint8_t {
  selected,             // the winner
  measured,             // measured and valid, but slower (or lost a near-tie)
  slower_than_best,     // stopped early: clearly slower than the best so far
  failed_validation,    // output differs from the reference beyond the tolerance
  failed_launch,        // the launch or the run failed
  exceeded_time_bound,  // one run took longer than the per-launch bound
  pruned_by_budget,     // not measured: the key's time budget was spent
  pruned_by_model,      // not measured: ranked below the top-k by the cost model
  cannot_implement,     // can_implement rejected the problem
};

constexpr std::string_view to_string(TacticStatus s) {
  switch (s) {
    case TacticStatus::selected: return "selected";
    case TacticStatus::measured: return "measured";
    case TacticStatus::slower_than_best: return "slower (stopped early)";
    case TacticStatus::failed_validation: return "failed validation";
    case TacticStatus::failed_launch: return "failed to run";
    case TacticStatus::exceeded_time_bound: return "exceeded time bound";
    case TacticStatus::pruned_by_budget: return "pruned by budget";
    case TacticStatus::pruned_by_model: return "pruned by model";
    case TacticStatus::cannot_implement: return "cannot implement";
  }
  return "?";
}

struct TacticRecord {
  std::string name;
  TacticStatus status = TacticStatus::cannot_implement;
  double ms = std::numeric_limits<double>::quiet_NaN();      // median time (the final round's when it was in one); NaN when not measured
  double tflops = std::numeric_limits<double>::quiet_NaN();
  double rel_error = std::numeric_limits<double>::quiet_NaN();
  int repeats = 0;
  int chain = 1;         // launches per timed repeat (back to back; ms is per launch)
  int rank = 0;          // cost-model rank, 1 = best; 0 when not ranked
  std::string detail;    // why (reason of the rejection, tie-break, error message)
  // The interleaved final round (TunerOptions::final_rounds): the rounds whose median `ms` is (0: not in
  // one, or its result was not used), and the first pass's median, which `ms` held before.
  int final_rounds = 0;
  double first_pass_ms = std::numeric_limits<double>::quiet_NaN();
};

// Where the chosen instance came from.
enum class Source : std::uint8_t {
  tuned,      // measured now
  cache,      // the persistent cache
  heuristic,  // cost-model rank 1 (policy Heuristic / CacheOnly without an entry)
  deferred,   // heuristic for now, the stream was capturing; tuned by tune_pending()
  fallback,   // tuning could not decide (all failed / no scratch): heuristic, not persisted
  pinned,     // Tuner::pin
};

constexpr std::string_view to_string(Source s) {
  switch (s) {
    case Source::tuned: return "tuned";
    case Source::cache: return "cache";
    case Source::heuristic: return "heuristic";
    case Source::deferred: return "deferred";
    case Source::fallback: return "fallback";
    case Source::pinned: return "pinned";
  }
  return "?";
}

struct TuningReport {
  ProblemKey key;  // key.op == conv2d: the problem is `conv`
  ConvKey conv;
  int device = -1;
  std::string device_name;
  Source source = Source::tuned;
  std::string winner;
  double winner_ms = std::numeric_limits<double>::quiet_NaN();
  double winner_tflops = std::numeric_limits<double>::quiet_NaN();
  double tuning_ms = 0;          // wall time of the decision
  std::size_t scratch_bytes = 0; // device memory the measurement used
  std::string method;            // how it was measured
  std::string note;              // extra explanation (fallback reason ...)
  std::string final_round;       // what the final round did (contenders, rounds, time) or why it was skipped; empty: none
  std::vector<TacticRecord> records;

  bool is_conv() const { return key.op == OpKind::conv2d; }
  std::string key_text() const { return is_conv() ? to_string(conv) : to_string(key); }

  std::size_t count(TacticStatus s) const {
    return static_cast<std::size_t>(std::count_if(records.begin(), records.end(), [&](const TacticRecord& r) { return r.status == s; }));
  }
};

// Selected first, then by time, then failures, then pruned by rank, then cannot-implement by name.
inline void sort_records(std::vector<TacticRecord>& v) {
  auto time_or_inf = [](double x) { return std::isnan(x) ? std::numeric_limits<double>::infinity() : x; };
  std::stable_sort(v.begin(), v.end(), [&](const TacticRecord& a, const TacticRecord& b) {
    if (a.status != b.status) {
      // measured and stopped-early interleave by time
      const bool am = a.status == TacticStatus::measured || a.status == TacticStatus::slower_than_best;
      const bool bm = b.status == TacticStatus::measured || b.status == TacticStatus::slower_than_best;
      if (!(am && bm)) return a.status < b.status;
    }
    if (time_or_inf(a.ms) != time_or_inf(b.ms)) return time_or_inf(a.ms) < time_or_inf(b.ms);
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.name < b.name;
  });
}

namespace detail {
inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
inline std::string bytes_text(std::size_t b) {
  if (b >= (1u << 20)) return fmt("%.1f MiB", double(b) / double(1u << 20));
  if (b >= 1024) return fmt("%.1f KiB", double(b) / 1024.0);
  return std::to_string(b) + " B";
}
}  // namespace detail

// One summary line (info level).
inline std::string summary_line(const TuningReport& r) {
  std::string s = "dev" + std::to_string(r.device) + " " + r.key_text() + ": " + std::string(to_string(r.source)) + " -> " +
                  (r.winner.empty() ? std::string("(none)") : r.winner);
  if (!std::isnan(r.winner_ms)) s += detail::fmt(" %.4f ms", r.winner_ms) + detail::fmt(" %.1f TF/s", r.winner_tflops);
  if (r.source == Source::tuned || r.source == Source::fallback) {
    const std::size_t measured = r.count(TacticStatus::selected) + r.count(TacticStatus::measured) + r.count(TacticStatus::slower_than_best);
    const std::size_t failed = r.count(TacticStatus::failed_validation) + r.count(TacticStatus::failed_launch) +
                               r.count(TacticStatus::exceeded_time_bound);
    const std::size_t pruned = r.count(TacticStatus::pruned_by_model) + r.count(TacticStatus::pruned_by_budget);
    s += " (" + std::to_string(measured) + " measured, " + std::to_string(failed) + " failed, " + std::to_string(pruned) +
         " pruned; " + detail::fmt("%.1f ms", r.tuning_ms) + ", scratch " + detail::bytes_text(r.scratch_bytes);
    if (!r.method.empty()) s += "; " + r.method;
    if (!r.final_round.empty()) s += "; final round: " + r.final_round;
    s += ")";
  }
  if (!r.note.empty()) s += " [" + r.note + "]";
  return s;
}

// The full tactic table (verbose level), one string per line.
inline std::vector<std::string> tactic_lines(const TuningReport& r) {
  std::vector<std::string> out;
  std::size_t w = 8;
  for (const auto& t : r.records) w = std::max(w, t.name.size());
  auto pad = [](std::string s, std::size_t n) {
    if (s.size() < n) s.append(n - s.size(), ' ');
    return s;
  };
  out.push_back(pad("  rank", 7) + pad("instance", w + 2) + pad("time(ms)", 11) + pad("TF/s", 9) + "status");
  for (const auto& t : r.records) {
    std::string line = pad("  " + (t.rank > 0 ? std::to_string(t.rank) : std::string("-")), 7) + pad(t.name, w + 2);
    line += pad(std::isnan(t.ms) ? std::string("-") : detail::fmt("%.4f", t.ms), 11);
    line += pad(std::isnan(t.tflops) ? std::string("-") : detail::fmt("%.1f", t.tflops), 9);
    line += to_string(t.status);
    if (!std::isnan(t.rel_error) && t.status != TacticStatus::cannot_implement) line += detail::fmt(" (err %.1e)", t.rel_error);
    if (t.repeats > 0) line += " x" + std::to_string(t.repeats) + (t.chain > 1 ? " chains of " + std::to_string(t.chain) : std::string());
    if (!t.detail.empty()) line += ": " + t.detail;
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace ktune::tuner
