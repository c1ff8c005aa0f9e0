// ktune/tuner/tuner.hpp — the runtime tuner: benchmark once per problem key, validate, pin the
// fastest, persist; constant-time lookup afterwards.
//
// What it picks is a tactic (ktune/gemm/tactics.hpp): an instance plus the launch options it runs
// with (split-K, sm90 cluster size, raster group), named "<instance>[@knob...]" in logs and the cache.
//
// select(desc, ops, stream) for a key seen before (the hot path): cudaGetDevice-equivalent, alignment
// classes, a POD key and its hash, one shared-lock hash-map lookup, one atomic load. No allocation,
// no string building. Pinned tactics live in a per-tuner arena for the tuner's lifetime, so the
// pointer select() returns stays valid after reset().
//
// For a new key (policy Tune):
//   1. the persistent cache is consulted (entry for this device fingerprint, ktune version and
//      instance table, naming an instance that exists and accepts the problem, with launch options
//      that launch_variants() offers for it);
//   2. otherwise candidates = every launch variant of every table entry whose can_implement accepts;
//      ranked by the cost model (default: heuristic_cost × tactic_cost_factor), each instance's best
//      tactic first (see ranked_tactics), top-k kept (k distinct tactics: the PDL twin of a kept tactic,
//      same instance and options but the pdl choice, is kept without taking a slot), the rest logged as
//      pruned by model;
//   3. each is run once on scratch buffers (never the caller's: the backend owns synthetic inputs, its
//      own output and its own workspace for tactics that need one) and compared with a reference;
//      failures are excluded and logged;
//   4. the valid ones are timed (median of adaptive repeats) within the key's time budget;
//   5. final round: the few fastest (within final_band of the fastest, at most final_max, when ≥ 2)
//      are timed again interleaved, A B C A B C ..., one measurement (final_repeats repeats) each per round, so that drift
//      between the first pass's separate measurements cannot decide a near-tie; their medians replace
//      the first pass's (skipped or cut short when the key's budget is spent);
//   6. the fastest wins, near-ties (within tie_band) going to fewer resources, then the name (so the
//      default options of an instance win a near-tie with its variants);
//   7. the winner is pinned in memory and added to the cache (saved at once when a path is set).
// Many threads asking for the same new key: one tunes, the others wait on that key's mutex and then
// read its winner. Different keys are independent; measurements on one device are serialised so
// they do not disturb each other's timings.
//
// While the caller's stream is capturing a CUDA graph nothing is benchmarked or synchronised: the
// call gets the cached or heuristic instance (default launch options: no workspace is needed) and the
// key is remembered; tune_pending() tunes those.
//
// Conv2d keys (select_conv and friends) go through the same steps, policies, cache, logs and locks,
// with conv tactics (ktune/conv/tactics.hpp): candidates are the conv table's entries that accept the
// problem on the device, ranked in the heuristic conv choice's order (rank 1 = what the Heuristic
// policy runs), with raster-group variants; measured by a ConvTuningBackend (tuner/conv_backend.hpp)
// on its own scratch tensors against a conservative reference instance. Their slots live in a map
// of their own, so the GEMM hot path is unchanged.
#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ktune/arch.hpp"
#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/tactics.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/gemm/heuristic.hpp"
#include "ktune/gemm/tactics.hpp"
#include "ktune/problem.hpp"
#include "ktune/status.hpp"
#include "ktune/tuner/backend.hpp"
#include "ktune/tuner/cache.hpp"
#include "ktune/tuner/conv_backend.hpp"
#include "ktune/tuner/key.hpp"
#include "ktune/tuner/report.hpp"
#include "ktune/tuner/timing.hpp"

namespace ktune::tuner {

enum class Policy : std::uint8_t {
  tune,        // benchmark new keys (default)
  heuristic,   // never benchmark: cost-model rank 1 (cache entries are ignored)
  cache_only,  // never benchmark: the cache entry when there is one, else cost-model rank 1
};

constexpr std::string_view to_string(Policy p) {
  switch (p) {
    case Policy::tune: return "tune";
    case Policy::heuristic: return "heuristic";
    case Policy::cache_only: return "cache_only";
  }
  return "?";
}

// Lower is better. Must not throw; NaN counts as +∞. A launch variant's cost is the instance's cost
// times tactic_cost_factor().
using CostModel = std::function<double(const GemmKernelEntry&, const GemmDesc&, const DeviceInfo&)>;
using LogSink = std::function<void(LogLevel, std::string_view)>;
using ReportCallback = std::function<void(const TuningReport&)>;

struct TunerOptions {
  Policy policy = Policy::tune;
  // top-k tactics by cost model that are measured; ≤ 0: all. 48, not 32: with the sm90 split-K variants
  // (cf751e5) the top 32 left out the best tactic on 16x11008x4096 and 64x64x65536 (H200 tune-quality at
  // b45d257: 1.116 and 1.106 of the exhaustive best). Counts distinct tactics: the PDL twin of a kept
  // tactic (launch_variants' @pdl / @nopdl, sm80 instances) is measured too without taking a slot, so up
  // to 2k are measured (at 7da5aff twins took slots: 64x64x65536's best tactic ranked 53rd, unmeasured).
  int max_candidates = 48;
  bool launch_variants = true;    // also rank/measure launch_variants() (split-K, cluster, raster); false: default options only
  double max_ms_per_key = 2000;   // wall-clock budget for measuring one key; ≤ 0: none (≥ 1 candidate is always measured)
  double max_launch_ms = 1000;    // a candidate whose single run takes longer is excluded
  double tie_band = 0.02;         // relative; within it, fewer resources then the name win
  // Final round: after the first pass, the contenders within final_band of the fastest (at most final_max,
  // fastest first; only when ≥ 2 qualify) are timed again interleaved: final_rounds rounds, each one
  // measurement of final_repeats repeats per contender (MeasureRequest::exact_repeats, the session's method:
  // chains, rotated inputs, L2 flush; the median of them), A B C D A B C D ...; the winner is picked from
  // the medians of the rounds (tie_band rule). Drift or noise between the first pass's separate measurements decided near-ties of 3-5% before
  // (H200 tune-quality at 7da5aff). Within max_ms_per_key: skipped when fewer than 3 rounds fit in what is
  // left (the first pass decides), cut short when the budget runs out (≥ 3 rounds done: their medians
  // decide). final_rounds ≤ 0 or final_max < 2: no final round.
  double final_band = 0.05;
  int final_max = 4;
  int final_rounds = 10;
  // Repeats per contender per round (≥ 1). Not 1: after each measurement's synchronisation the host
  // enqueues the next chain while the GPU idles, so a lone repeat times the launch submission too (H200,
  // s11-batchC: 6272x256x1024 finalists 10.0 µs in the first pass, 12.1 µs as single-repeat final rounds).
  int final_repeats = 3;
  RepeatPolicy repeats{};
  Tolerances tolerances{};
  MBucketing m_bucketing = MBucketing::exact;
  std::string cache_path;         // empty: nothing persisted. Loaded at first use.
  bool autosave = true;           // save after each newly tuned key (when cache_path is set)
  LogLevel log_level = LogLevel::warn;
  LogSink log_sink;               // default: stderr, "[ktune] " prefix
  ReportCallback on_report;       // every decision for a new key (tuned, cache, heuristic, deferred)
  CostModel cost_model;           // default: ktune::heuristic_cost
};

// KTUNE_CACHE=<path>, KTUNE_LOG=off|warn|info|verbose, KTUNE_TUNING=full|heuristic|off (off: cache
// entries only, never benchmark), KTUNE_M_BUCKETS=exact|pow2. Unknown values keep `base`'s setting
// and add a warning.
inline TunerOptions options_from_env(TunerOptions base, const std::function<const char*(const char*)>& getenv_fn,
                                     std::vector<std::string>* warnings = nullptr) {
  auto warn = [&](std::string w) {
    if (warnings) warnings->push_back(std::move(w));
  };
  if (const char* v = getenv_fn("KTUNE_CACHE"); v != nullptr) base.cache_path = v;
  if (const char* v = getenv_fn("KTUNE_LOG"); v != nullptr && *v) {
    const std::string_view s(v);
    if (s == "off" || s == "0") base.log_level = LogLevel::off;
    else if (s == "warn" || s == "warning") base.log_level = LogLevel::warn;
    else if (s == "info" || s == "1") base.log_level = LogLevel::info;
    else if (s == "verbose" || s == "2") base.log_level = LogLevel::verbose;
    else warn("KTUNE_LOG='" + std::string(s) + "' is not one of off, warn, info, verbose; ignored");
  }
  if (const char* v = getenv_fn("KTUNE_TUNING"); v != nullptr && *v) {
    const std::string_view s(v);
    if (s == "full" || s == "tune" || s == "on") base.policy = Policy::tune;
    else if (s == "heuristic") base.policy = Policy::heuristic;
    else if (s == "off" || s == "cache" || s == "cache_only") base.policy = Policy::cache_only;
    else warn("KTUNE_TUNING='" + std::string(s) + "' is not one of full, heuristic, off; ignored");
  }
  if (const char* v = getenv_fn("KTUNE_M_BUCKETS"); v != nullptr && *v) {
    const std::string_view s(v);
    if (s == "exact") base.m_bucketing = MBucketing::exact;
    else if (s == "pow2") base.m_bucketing = MBucketing::pow2;
    else warn("KTUNE_M_BUCKETS='" + std::string(s) + "' is not one of exact, pow2; ignored");
  }
  return base;
}

inline TunerOptions options_from_env(TunerOptions base = {}, std::vector<std::string>* warnings = nullptr) {
  return options_from_env(std::move(base), [](const char* n) -> const char* { return std::getenv(n); }, warnings);
}

namespace detail {
// PDL twins: the same instance with the same launch options except the programmatic-launch choice
// (launch_variants' @pdl / @nopdl twin of a variant). They share one max_candidates slot. Conv tactics
// have no PDL choice.
inline bool pdl_twins(const GemmTactic& a, const GemmTactic& b) {
  if (a.entry != b.entry || a.launch.pdl == b.launch.pdl) return false;
  GemmLaunchOptions x = a.launch, y = b.launch;
  x.pdl = y.pdl = PdlChoice::rule;
  return same_launch(x, y);
}
inline bool pdl_twins(const ConvTactic&, const ConvTactic&) { return false; }
}  // namespace detail

// The cache identity's instance-table hash for conv2d entries.
inline std::string conv_family_hash(const ConvTable& table) { return table_hash(table, "ktune-conv-families-v1"); }

class Tuner {
 public:
  static constexpr int max_devices = 64;

  explicit Tuner(std::shared_ptr<TuningBackend> backend, const GemmTable* table = &gemm_table(), TunerOptions opt = {})
      : backend_(std::move(backend)), table_(table), opt_(std::move(opt)) {
    bucketing_.store(opt_.m_bucketing, std::memory_order_relaxed);
  }
  // With conv2d tuning: `conv_backend` measures conv tactics (null: conv keys get the heuristic choice),
  // `ctable` is the conv dispatch table.
  Tuner(std::shared_ptr<TuningBackend> backend, const GemmTable* table, TunerOptions opt,
        std::shared_ptr<ConvTuningBackend> conv_backend, const ConvTable* ctable = &conv_table())
      : Tuner(std::move(backend), table, std::move(opt)) {
    conv_backend_ = std::move(conv_backend);
    conv_table_ = ctable;
  }
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  // ---- The dispatch entry point -----------------------------------------------------------------------

  // The tactic to run this (validated) problem with. Tunes the key on first use (see the header).
  // `ops` is only used for its alignment: tuning never touches the caller's buffers. The pointer stays
  // valid for the tuner's lifetime.
  Status select(const GemmDesc& desc, const GemmOperands& ops, cudaStream_t stream, const GemmTactic*& out) {
    out = nullptr;
    int ordinal = -1;
    if (Status s = backend_->current_device(ordinal); !s.ok()) return s;
    DeviceContext* ctx = context_fast(ordinal);
    const GemmAlignment al = alignment_of(desc, ops);
    const ProblemKey key = make_key(desc, al, bucketing_.load(std::memory_order_relaxed));
    if (ctx != nullptr) {
      std::shared_lock lock(ctx->mu);
      auto it = ctx->slots.find(key);
      if (it != ctx->slots.end()) {
        if (const GemmTactic* w = it->second->winner.load(std::memory_order_acquire)) {
          out = w;
          return {};
        }
      }
    }
    return guarded([&] { return select_slow(ordinal, resolved(desc), al, key, stream, out); });
  }

  // The instance only, for callers that launch with options of their own (the pinned tactic's launch
  // options are dropped; an instance is correct with any options it accepts).
  Status select(const GemmDesc& desc, const GemmOperands& ops, cudaStream_t stream, const GemmKernelEntry*& out) {
    const GemmTactic* t = nullptr;
    const Status s = select(desc, ops, stream, t);
    out = t != nullptr ? t->entry : nullptr;
    return s;
  }

  // The pinned tactic for this problem on the current device, or nullptr. Never tunes.
  const GemmTactic* lookup_tactic(const GemmDesc& desc, const GemmOperands& ops) {
    int ordinal = -1;
    if (!backend_->current_device(ordinal).ok()) return nullptr;
    DeviceContext* ctx = context_fast(ordinal);
    if (ctx == nullptr) return nullptr;
    const ProblemKey key = make_key(desc, alignment_of(desc, ops), bucketing_.load(std::memory_order_relaxed));
    std::shared_lock lock(ctx->mu);
    auto it = ctx->slots.find(key);
    return it == ctx->slots.end() ? nullptr : it->second->winner.load(std::memory_order_acquire);
  }
  // The pinned tactic's instance, or nullptr.
  const GemmKernelEntry* lookup(const GemmDesc& desc, const GemmOperands& ops) {
    const GemmTactic* t = lookup_tactic(desc, ops);
    return t != nullptr ? t->entry : nullptr;
  }

  // ---- Explicit tuning -----------------------------------------------------------------------------------

  // Tune `desc` with alignment class `al` on the current device now (offline pre-tuning, explain).
  // Already pinned keys are only re-measured with `force`. The report (optional) has every candidate.
  Status tune(const GemmDesc& desc, const GemmAlignment& al, TuningReport* report = nullptr, bool force = false) {
    return guarded([&]() -> Status {
      int ordinal = -1;
      KTUNE_RETURN_IF_ERROR(backend_->current_device(ordinal));
      const GemmDesc d = resolved(desc);
      KTUNE_RETURN_IF_ERROR(check_shape(d));
      DeviceContext* ctx = nullptr;
      KTUNE_RETURN_IF_ERROR(context(ordinal, ctx));
      const TunerOptions opt = options();
      const ProblemKey key = make_key(d, al, opt.m_bucketing);
      std::shared_ptr<Slot> slot = slot_for(*ctx, key);
      std::lock_guard lock(slot->mu);
      if (!force && slot->winner.load(std::memory_order_acquire) != nullptr) {
        if (report) {
          *report = TuningReport{};
          report->key = key;
          report->device = ordinal;
          report->device_name = ctx->info.name;
          report->source = slot->source;
          report->winner = slot->winner.load()->name;
        }
        return {};
      }
      const GemmTactic* w = nullptr;
      return tune_locked(*ctx, *slot, d, al, key, opt, w, report);
    });
  }

  // Tune the keys first met while their stream was capturing. Returns the first error (others are
  // still attempted); `tuned` (optional) counts the keys tuned now.
  Status tune_pending(std::size_t* tuned = nullptr) {
    std::vector<Pending> work;
    std::vector<ConvPending> conv_work;
    {
      std::lock_guard lock(pending_mu_);
      work.swap(pending_);
      conv_work.swap(conv_pending_);
    }
    Status first;
    std::size_t n = 0;
    for (const Pending& p : work) {
      Status s = guarded([&]() -> Status {
        DeviceContext* ctx = nullptr;
        KTUNE_RETURN_IF_ERROR(context(p.device, ctx));
        std::shared_ptr<Slot> slot = slot_for(*ctx, p.key);
        std::lock_guard lock(slot->mu);
        if (slot->winner.load(std::memory_order_acquire) != nullptr) return {};
        const GemmTactic* w = nullptr;
        Status st = tune_locked(*ctx, *slot, p.desc, p.al, p.key, options(), w, nullptr);
        if (st.ok()) ++n;
        return st;
      });
      if (!s.ok() && first.ok()) (void)(first = s);
    }
    for (const ConvPending& p : conv_work) {
      Status s = guarded([&]() -> Status {
        DeviceContext* ctx = nullptr;
        KTUNE_RETURN_IF_ERROR(context(p.device, ctx));
        std::shared_ptr<ConvSlot> slot = conv_slot_for(*ctx, p.key);
        std::lock_guard lock(slot->mu);
        if (slot->winner.load(std::memory_order_acquire) != nullptr) return {};
        const ConvTactic* w = nullptr;
        Status st = tune_conv_locked(*ctx, *slot, p.desc, p.al, p.key, options(), w, nullptr);
        if (st.ok()) ++n;
        return st;
      });
      if (!s.ok() && first.ok()) (void)(first = s);
    }
    if (tuned) *tuned = n;
    return first;
  }

  std::size_t pending_count() const {
    std::lock_guard lock(pending_mu_);
    return pending_.size() + conv_pending_.size();
  }

  // ---- Conv2d --------------------------------------------------------------------------------------------

  // The conv tactic to run this (validated) problem with. Tunes the key on first use. `ops` is only
  // used for its alignment: tuning never touches the caller's tensors. The pointer stays valid for the
  // tuner's lifetime. Hot path: as select() for GEMM (device, alignment, POD key, one shared-lock
  // lookup, one atomic load).
  Status select_conv(const Conv2dDesc& desc, const Conv2dOperands& ops, cudaStream_t stream, const ConvTactic*& out) {
    out = nullptr;
    int ordinal = -1;
    if (Status s = backend_->current_device(ordinal); !s.ok()) return s;
    DeviceContext* ctx = context_fast(ordinal);
    const ConvAlignment al = alignment_of(desc, ops);
    const ConvKey key = make_conv_key(desc, al);
    if (ctx != nullptr) {
      std::shared_lock lock(ctx->mu);
      auto it = ctx->conv_slots.find(key);
      if (it != ctx->conv_slots.end()) {
        if (const ConvTactic* w = it->second->winner.load(std::memory_order_acquire)) {
          out = w;
          return {};
        }
      }
    }
    return guarded([&] { return select_conv_slow(ordinal, desc, al, key, stream, out); });
  }

  // The pinned conv tactic for this problem on the current device, or nullptr. Never tunes.
  const ConvTactic* lookup_conv(const Conv2dDesc& desc, const Conv2dOperands& ops) {
    int ordinal = -1;
    if (!backend_->current_device(ordinal).ok()) return nullptr;
    DeviceContext* ctx = context_fast(ordinal);
    if (ctx == nullptr) return nullptr;
    const ConvKey key = make_conv_key(desc, alignment_of(desc, ops));
    std::shared_lock lock(ctx->mu);
    auto it = ctx->conv_slots.find(key);
    return it == ctx->conv_slots.end() ? nullptr : it->second->winner.load(std::memory_order_acquire);
  }

  // Tune a conv problem with alignment class `al` on the current device now (offline pre-tuning,
  // benchmarks). Already pinned keys are only re-measured with `force`.
  Status tune_conv(const Conv2dDesc& desc, const ConvAlignment& al, TuningReport* report = nullptr, bool force = false) {
    return guarded([&]() -> Status {
      int ordinal = -1;
      KTUNE_RETURN_IF_ERROR(backend_->current_device(ordinal));
      DeviceContext* ctx = nullptr;
      KTUNE_RETURN_IF_ERROR(context(ordinal, ctx));
      const ConvKey key = make_conv_key(desc, al);
      std::shared_ptr<ConvSlot> slot = conv_slot_for(*ctx, key);
      std::lock_guard lock(slot->mu);
      if (!force && slot->winner.load(std::memory_order_acquire) != nullptr) {
        if (report) {
          *report = base_conv_report(*ctx, key, slot->source);
          report->winner = slot->winner.load()->name;
        }
        return {};
      }
      const ConvTactic* w = nullptr;
      return tune_conv_locked(*ctx, *slot, desc, al, key, options(), w, report);
    });
  }

  // Force a conv tactic ("<instance>" or "<instance>@rg16") for a problem on the current device.
  Status pin_conv(const Conv2dDesc& desc, const ConvAlignment& al, std::string_view tactic) {
    return guarded([&]() -> Status {
      int ordinal = -1;
      KTUNE_RETURN_IF_ERROR(backend_->current_device(ordinal));
      DeviceContext* ctx = nullptr;
      KTUNE_RETURN_IF_ERROR(context(ordinal, ctx));
      std::string_view instance, suffix;
      split_tactic_name(tactic, instance, suffix);
      const ConvKernelEntry* e = conv_table_->find(instance);
      if (e == nullptr) return error(StatusCode::no_instance, "no conv instance named " + std::string(instance));
      KTUNE_RETURN_IF_ERROR(can_implement(*e, desc, al, &ctx->info));
      ConvLaunchOptions lo;
      std::string why;
      if (!suffix.empty() && !parse_conv_launch_suffix(suffix, lo, why)) return error(StatusCode::invalid_argument, why);
      if (lo.split_k > 1 && !conv_supports_split_k(e->config))
        return error(StatusCode::unsupported, "conv instance " + std::string(instance) + " does not split K");
      if (lo.persistent > 0 && !conv_supports_persistent(e->config))
        return error(StatusCode::unsupported, "conv instance " + std::string(instance) + " does not run a persistent grid");
      const ConvKey key = make_conv_key(desc, al);
      std::shared_ptr<ConvSlot> slot = conv_slot_for(*ctx, key);
      std::lock_guard lock(slot->mu);
      slot->source = Source::pinned;
      slot->winner.store(intern_conv(e, lo), std::memory_order_release);
      return {};
    });
  }

  // Conv tactics ranked best first: every instance that accepts the problem on `dev` in the heuristic
  // conv order with its default options, each followed by its split-K variants (offered only where the
  // tiles fill less than a wave, so a top-k cut keeps them), then the other launch variants in order.
  std::vector<ConvTactic> ranked_conv_tactics(const Conv2dDesc& d, const ConvAlignment& al, const DeviceInfo& dev, bool variants = true,
                                              std::vector<std::string>* why_not = nullptr) const {
    std::vector<const ConvKernelEntry*> c = ranked_conv_candidates(d, al, dev, why_not);
    std::vector<ConvTactic> out, rest;
    out.reserve(c.size());
    for (const ConvKernelEntry* e : c) {
      out.push_back(ConvTactic{e, ConvLaunchOptions{}, conv_tactic_name(e->name, ConvLaunchOptions{})});
      if (!variants) continue;
      for (const ConvLaunchOptions& o : conv_launch_variants(*e, d, dev))
        if (!is_default_launch(o))
          (o.split_k > 1 || o.cluster_k > 1 ? out : rest).push_back(ConvTactic{e, o, conv_tactic_name(e->name, o)});
    }
    for (auto& t : rest) out.push_back(std::move(t));
    return out;
  }

  // Conv instances that accept the problem on `dev`, in the heuristic conv order (best first).
  std::vector<const ConvKernelEntry*> ranked_conv_candidates(const Conv2dDesc& d, const ConvAlignment& al, const DeviceInfo& dev,
                                                             std::vector<std::string>* why_not = nullptr) const {
    if (conv_table_ == nullptr) return {};
    std::vector<const ConvKernelEntry*> c = conv_table_->candidates(d, al, &dev, why_not);
    sort_conv_candidates(c, d, dev);
    return c;
  }

  const ConvTable* conv_table_ptr() const { return conv_table_; }
  bool tunes_conv() const { return conv_backend_ != nullptr; }

  // Force a tactic for a problem on the current device: an instance name, optionally with launch
  // options ("<instance>@split4s@cl2", see tactics.hpp). The instance must accept the problem and the
  // options; unlike tuned tactics, any options the instance accepts may be pinned.
  Status pin(const GemmDesc& desc, const GemmAlignment& al, std::string_view tactic) {
    return guarded([&]() -> Status {
      int ordinal = -1;
      KTUNE_RETURN_IF_ERROR(backend_->current_device(ordinal));
      DeviceContext* ctx = nullptr;
      KTUNE_RETURN_IF_ERROR(context(ordinal, ctx));
      const GemmDesc d = resolved(desc);
      std::string_view instance, suffix;
      split_tactic_name(tactic, instance, suffix);
      const GemmKernelEntry* e = table_->find(instance);
      if (e == nullptr) return error(StatusCode::no_instance, "no instance named " + std::string(instance));
      KTUNE_RETURN_IF_ERROR(can_implement(*e, d, al, &ctx->info));
      GemmLaunchOptions lo;
      std::string why;
      if (!suffix.empty() && !parse_launch_suffix(suffix, lo, why)) return error(StatusCode::invalid_argument, why);
      KTUNE_RETURN_IF_ERROR(check_launch_options(*e, lo));
      const ProblemKey key = make_key(d, al, bucketing_.load(std::memory_order_relaxed));
      std::shared_ptr<Slot> slot = slot_for(*ctx, key);
      std::lock_guard lock(slot->mu);
      slot->source = Source::pinned;
      slot->winner.store(intern(e, lo), std::memory_order_release);
      return {};
    });
  }

  // ---- Cache ----------------------------------------------------------------------------------------------

  // Merge a cache file into the in-memory cache (entries for other devices/builds are kept, not applied).
  Status load_cache(const std::string& path) {
    std::vector<std::string> warnings;
    Status s;
    {
      std::lock_guard lock(store_mu_);
      (void)(s = load_cache_file(path, store_, warnings));
    }
    for (const auto& w : warnings) log(LogLevel::warn, w);
    return s;
  }

  // Merge with the file on disk and replace it atomically. Empty path: the configured cache_path.
  Status save_cache(const std::string& path = {}) {
    const std::string p = path.empty() ? options().cache_path : path;
    if (p.empty()) return error(StatusCode::invalid_argument, "no cache path (set KTUNE_CACHE or TunerOptions::cache_path)");
    std::vector<std::string> warnings;
    Status s;
    {
      std::lock_guard lock(store_mu_);
      (void)(s = save_cache_file(p, store_, warnings));
    }
    for (const auto& w : warnings) log(LogLevel::warn, w);
    return s;
  }

  // A copy of the in-memory cache (every entry, for every device and build).
  CacheStore cache_snapshot() const {
    std::lock_guard lock(store_mu_);
    return store_;
  }

  // ---- Management -----------------------------------------------------------------------------------------

  TunerOptions options() const {
    std::lock_guard lock(opt_mu_);
    return opt_;
  }
  // New options apply to keys decided from now on; pinned keys stay pinned (see reset()).
  void set_options(TunerOptions o) {
    std::lock_guard lock(opt_mu_);
    bucketing_.store(o.m_bucketing, std::memory_order_relaxed);
    opt_ = std::move(o);
  }

  // Forget every pinned key (the in-memory cache and the pending list stay).
  void reset() {
    for (auto& d : devices_) {
      DeviceContext* ctx = d.load(std::memory_order_acquire);
      if (ctx == nullptr) continue;
      std::unique_lock lock(ctx->mu);
      ctx->slots.clear();
      ctx->conv_slots.clear();
    }
  }

  void release_scratch() {
    backend_->release_scratch();
    if (conv_backend_) conv_backend_->release_scratch();
  }

  struct Counters {
    std::uint64_t misses = 0;      // calls that took the slow path
    std::uint64_t tunings = 0;     // keys measured
    std::uint64_t from_cache = 0;  // keys pinned from the persistent cache
    std::uint64_t heuristic = 0;   // keys decided by the cost model (incl. deferred, fallback)
    std::uint64_t deferred = 0;    // calls made while capturing that found no pinned instance
  };
  Counters counters() const {
    Counters c;
    c.misses = misses_.load(std::memory_order_relaxed);
    c.tunings = tunings_.load(std::memory_order_relaxed);
    c.from_cache = from_cache_.load(std::memory_order_relaxed);
    c.heuristic = heuristic_.load(std::memory_order_relaxed);
    c.deferred = deferred_.load(std::memory_order_relaxed);
    return c;
  }

  const GemmTable& table() const { return *table_; }
  TuningBackend& backend() { return *backend_; }

  // Send a line to the configured log (filtered by the log level).
  void log_message(LogLevel level, std::string_view msg) { log(level, msg); }

  // The cache identity of a device (fingerprint, version, instance-table hash).
  Status identity(int ordinal, CacheIdentity& out) {
    DeviceContext* ctx = nullptr;
    KTUNE_RETURN_IF_ERROR(context(ordinal, ctx));
    out = ctx->id;
    return {};
  }

  // Candidate tactics ranked by the cost model (best first): every launch variant of every instance
  // that can implement the problem (only default options when `variants` is false). Each instance's
  // best-scored tactic comes first (instances in score order), then the other variants in score order:
  // a top-k cut then measures as many different instances as instance-only tuning did, before the
  // model's favourite instances' further variants (the model ranks split-K of mma.sync instances
  // above every wgmma instance on small outputs, which is not always so). Ties go to the smaller name,
  // so an instance's default options come before its variants of equal cost.
  std::vector<GemmTactic> ranked_tactics(const GemmDesc& d, const GemmAlignment& al, const DeviceInfo& dev, const CostModel& cost,
                                         bool variants = true, std::vector<std::string>* why_not = nullptr) const {
    std::vector<const GemmKernelEntry*> c = table_->candidates(d, al, &dev, why_not);
    std::vector<std::pair<double, GemmTactic>> scored;
    scored.reserve(c.size() * 2);
    for (const GemmKernelEntry* e : c) {
      double base = cost ? cost(*e, d, dev) : heuristic_cost(*e, d, dev);
      if (std::isnan(base)) base = std::numeric_limits<double>::infinity();
      const std::vector<GemmLaunchOptions> opts = variants ? launch_variants(*e, d, dev) : std::vector<GemmLaunchOptions>{GemmLaunchOptions{}};
      for (const GemmLaunchOptions& o : opts) {
        if (!check_launch_options(*e, o).ok()) continue;
        double x = base * tactic_cost_factor(*e, o, d, dev);
        if (std::isnan(x)) x = std::numeric_limits<double>::infinity();
        scored.emplace_back(x, GemmTactic{e, o, tactic_name(e->name, o)});
      }
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second.name < b.second.name;
    });
    std::vector<GemmTactic> out, rest;
    out.reserve(scored.size());
    std::vector<const GemmKernelEntry*> seen;
    for (auto& [x, t] : scored) {
      if (std::find(seen.begin(), seen.end(), t.entry) == seen.end()) {
        seen.push_back(t.entry);
        out.push_back(std::move(t));
      } else {
        rest.push_back(std::move(t));
      }
    }
    for (auto& t : rest) out.push_back(std::move(t));
    return out;
  }

  // Candidates ranked by the cost model (best first); exposed for explain tools.
  std::vector<const GemmKernelEntry*> ranked_candidates(const GemmDesc& d, const GemmAlignment& al, const DeviceInfo& dev,
                                                        const CostModel& cost, std::vector<std::string>* why_not = nullptr) const {
    std::vector<const GemmKernelEntry*> c = table_->candidates(d, al, &dev, why_not);
    std::vector<std::pair<double, const GemmKernelEntry*>> scored;
    scored.reserve(c.size());
    for (const GemmKernelEntry* e : c) {
      double x = cost ? cost(*e, d, dev) : heuristic_cost(*e, d, dev);
      if (std::isnan(x)) x = std::numeric_limits<double>::infinity();
      scored.emplace_back(x, e);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->name < b.second->name;
    });
    for (std::size_t i = 0; i < scored.size(); ++i) c[i] = scored[i].second;
    return c;
  }

 private:
  template <class Tactic>
  struct BasicSlot {
    std::mutex mu;  // held while this key is decided
    std::atomic<const Tactic*> winner{nullptr};  // points into tactics_ / conv_tactics_
    Source source = Source::tuned;  // guarded by mu
  };
  using Slot = BasicSlot<GemmTactic>;
  using ConvSlot = BasicSlot<ConvTactic>;
  struct DeviceContext {
    int ordinal = -1;
    DeviceInfo info;
    CacheIdentity id;
    mutable std::shared_mutex mu;
    CacheIdentity conv_id;  // conv2d entries: the conv table's hash
    std::unordered_map<ProblemKey, std::shared_ptr<Slot>, ProblemKeyHash> slots;
    std::unordered_map<ConvKey, std::shared_ptr<ConvSlot>, ConvKeyHash> conv_slots;  // under mu too
    std::mutex bench_mu;  // one measurement at a time on this device
  };
  struct Pending {
    int device;
    ProblemKey key;
    GemmDesc desc;
    GemmAlignment al;
  };
  struct ConvPending {
    int device;
    ConvKey key;
    Conv2dDesc desc;
    ConvAlignment al;
  };

  std::shared_ptr<TuningBackend> backend_;
  const GemmTable* table_;
  mutable std::mutex opt_mu_;
  TunerOptions opt_;
  std::atomic<MBucketing> bucketing_{MBucketing::exact};

  std::array<std::atomic<DeviceContext*>, max_devices> devices_{};
  std::mutex devices_mu_;
  std::vector<std::unique_ptr<DeviceContext>> owned_;

  mutable std::mutex store_mu_;
  CacheStore store_;
  std::once_flag cache_loaded_;
  std::atomic<bool> cache_writable_{true};

  mutable std::mutex pending_mu_;
  std::vector<Pending> pending_;
  std::vector<ConvPending> conv_pending_;

  std::shared_ptr<ConvTuningBackend> conv_backend_;
  const ConvTable* conv_table_ = &conv_table();

  // Every tactic ever pinned, by name; never freed before the tuner (select() hands out pointers).
  std::mutex tactics_mu_;
  std::unordered_map<std::string, std::unique_ptr<GemmTactic>> tactics_;

  std::unordered_map<std::string, std::unique_ptr<ConvTactic>> conv_tactics_;  // under tactics_mu_

  const ConvTactic* intern_conv(const ConvKernelEntry* e, const ConvLaunchOptions& o) {
    std::string name = conv_tactic_name(e->name, o);
    std::lock_guard lock(tactics_mu_);
    auto& t = conv_tactics_[name];
    if (!t) t = std::make_unique<ConvTactic>(ConvTactic{e, o, std::move(name)});
    return t.get();
  }

  const GemmTactic* intern(const GemmKernelEntry* e, const GemmLaunchOptions& o) {
    std::string name = tactic_name(e->name, o);
    std::lock_guard lock(tactics_mu_);
    auto& t = tactics_[name];
    if (!t) t = std::make_unique<GemmTactic>(GemmTactic{e, o, std::move(name)});
    return t.get();
  }

  std::atomic<std::uint64_t> misses_{0}, tunings_{0}, from_cache_{0}, heuristic_{0}, deferred_{0};

  using Clock = std::chrono::steady_clock;
  static double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

  template <class F>
  Status guarded(F&& f) noexcept {
    try {
      return f();
    } catch (const std::exception& e) {
      return error(StatusCode::internal, std::string("ktune tuner: ") + e.what());
    } catch (...) {
      return error(StatusCode::internal, "ktune tuner: unknown exception");
    }
  }

  void log(LogLevel level, std::string_view msg) {
    LogSink sink;
    {
      std::lock_guard lock(opt_mu_);
      if (level > opt_.log_level || opt_.log_level == LogLevel::off) return;
      sink = opt_.log_sink;
    }
    if (sink) {
      sink(level, msg);
    } else {
      static std::mutex stderr_mu;
      std::lock_guard lock(stderr_mu);
      std::fprintf(stderr, "[ktune] %.*s\n", static_cast<int>(msg.size()), msg.data());
    }
  }
  bool logs(LogLevel level) const {
    std::lock_guard lock(opt_mu_);
    return opt_.log_level != LogLevel::off && level <= opt_.log_level;
  }

  static Status check_shape(const GemmDesc& d) {
    constexpr std::int64_t max_dim = (std::int64_t{1} << 31) - 1;
    if (d.m <= 0 || d.n <= 0 || d.k <= 0 || d.m > max_dim || d.n > max_dim || d.k > max_dim)
      return error(StatusCode::invalid_argument, "GEMM dimensions must be in [1, 2^31)");
    if (d.ab_type != DType::f32 && d.compute == Compute::tf32)
      return error(StatusCode::unsupported, "compute tf32 needs f32 operands");
    return {};
  }

  DeviceContext* context_fast(int ordinal) const {
    if (ordinal < 0 || ordinal >= max_devices) return nullptr;
    return devices_[static_cast<std::size_t>(ordinal)].load(std::memory_order_acquire);
  }

  // The device's context, created (device facts, cache loaded) on first use.
  Status context(int ordinal, DeviceContext*& out) {
    out = context_fast(ordinal);
    if (out != nullptr) return {};
    if (ordinal < 0 || ordinal >= max_devices)
      return error(StatusCode::no_device, "device ordinal " + std::to_string(ordinal) + " out of range");
    ensure_cache_loaded();
    std::unique_lock lock(devices_mu_);
    out = context_fast(ordinal);
    if (out != nullptr) return {};
    auto ctx = std::make_unique<DeviceContext>();
    ctx->ordinal = ordinal;
    KTUNE_RETURN_IF_ERROR(backend_->device_info(ordinal, ctx->info));
    ctx->id = CacheIdentity{ctx->info.fingerprint(), std::string(ktune_version), family_hash(*table_)};
    ctx->conv_id = CacheIdentity{ctx->info.fingerprint(), std::string(ktune_version),
                                 conv_table_ != nullptr ? conv_family_hash(*conv_table_) : std::string("none")};
    CacheStore::Applicability a;
    {
      std::lock_guard slock(store_mu_);
      a = store_.applicability(ctx->id, ctx->conv_id);
    }
    const std::string name = ctx->info.name;
    out = ctx.get();
    owned_.push_back(std::move(ctx));
    devices_[static_cast<std::size_t>(ordinal)].store(out, std::memory_order_release);
    lock.unlock();  // no user callbacks (log sink) under devices_mu_
    if (a.other_device + a.other_version + a.other_families > 0)
      log(LogLevel::warn, "tuning cache: " + std::to_string(a.applicable) + " entries apply to device " +
                              std::to_string(ordinal) + " (" + name + ") and this build; skipped (not applied): " +
                              std::to_string(a.other_device) + " for another device or driver, " +
                              std::to_string(a.other_version) + " from another ktune version, " +
                              std::to_string(a.other_families) + " for another instance set");
    else if (a.applicable > 0)
      log(LogLevel::info, "tuning cache: " + std::to_string(a.applicable) + " entries apply to device " + std::to_string(ordinal));
    return {};
  }

  void ensure_cache_loaded() {
    std::call_once(cache_loaded_, [&] {
      const std::string path = options().cache_path;
      if (path.empty()) return;
      std::vector<std::string> warnings;
      CacheFileKind kind = CacheFileKind::empty;
      {
        std::lock_guard lock(store_mu_);
        (void)load_cache_file(path, store_, warnings, &kind);
      }
      cache_writable_.store(kind == CacheFileKind::empty || kind == CacheFileKind::cache);
      for (const auto& w : warnings) log(LogLevel::warn, w);
    });
  }

  std::shared_ptr<Slot> slot_for(DeviceContext& ctx, const ProblemKey& key) { return find_or_add_slot(ctx, ctx.slots, key); }

  // The key's slot in one of the context's maps (GEMM or conv), added on first use.
  template <class Map, class Key>
  static typename Map::mapped_type find_or_add_slot(DeviceContext& ctx, Map& slots, const Key& key) {
    {
      std::shared_lock lock(ctx.mu);
      auto it = slots.find(key);
      if (it != slots.end()) return it->second;
    }
    std::unique_lock lock(ctx.mu);
    auto& s = slots[key];
    if (!s) s = std::make_shared<typename Map::mapped_type::element_type>();
    return s;
  }

  // Pin a tactic chosen without measuring (from the cache, or the heuristic's) and publish its report.
  template <class SlotT, class Tactic>
  void pin_unmeasured(SlotT& slot, const Tactic* t, TuningReport r, Clock::time_point t0, const TunerOptions& opt) {
    slot.source = r.source;
    slot.winner.store(t, std::memory_order_release);
    r.winner = t->name;
    r.tuning_ms = ms_since(t0);
    publish(r, opt);
  }

  // Remember a key met during a capture for tune_pending(); false when it is already remembered.
  template <class P>
  bool remember_pending(std::vector<P>& list, P item) {
    std::lock_guard lock(pending_mu_);
    const bool known = std::any_of(list.begin(), list.end(), [&](const P& p) { return p.device == item.device && p.key == item.key; });
    if (!known) list.push_back(std::move(item));
    return !known;
  }

  // The cache's tactic for this key on this device, if its instance is in the table and accepts the
  // problem, and its launch options are ones launch_variants() offers for it. Anything else is ignored
  // with a warning (never applied).
  const GemmTactic* from_cache(DeviceContext& ctx, const ProblemKey& key, const GemmDesc& d, const GemmAlignment& al,
                               double* ms) {
    std::string name, launch;
    {
      std::lock_guard lock(store_mu_);
      const CacheEntry* e = store_.find(key, ctx.id);
      if (e == nullptr) return nullptr;
      name = e->instance;
      launch = e->launch;
      if (ms) *ms = e->ms;
    }
    const GemmKernelEntry* inst = table_->find(name);
    if (inst == nullptr) {
      log(LogLevel::warn, "tuning cache entry for " + to_string(key) + " names instance '" + name +
                              "', which this build does not have; ignoring it");
      return nullptr;
    }
    if (Status s = can_implement(*inst, d, al, &ctx.info); !s.ok()) {
      log(LogLevel::warn, "tuning cache entry for " + to_string(key) + " names instance '" + name +
                              "', which cannot run it (" + s.message() + "); ignoring it");
      return nullptr;
    }
    GemmLaunchOptions lo;
    std::string why;
    if (!launch.empty() && !parse_launch_suffix(launch, lo, why)) {
      log(LogLevel::warn, "tuning cache entry for " + to_string(key) + ": " + why + "; ignoring it");
      return nullptr;
    }
    if (!check_launch_options(*inst, lo).ok() || !is_launch_variant(*inst, lo, d, ctx.info)) {
      log(LogLevel::warn, "tuning cache entry for " + to_string(key) + " names tactic '" + tactic_name(name, lo) +
                              "', whose launch options this build does not offer for the problem; ignoring it");
      return nullptr;
    }
    return intern(inst, lo);
  }

  Status no_candidates_error(const GemmDesc& d, const GemmAlignment& al) const {
    bool math_layout_exists = false;
    for (const auto& e : table_->entries())
      math_layout_exists |= e.config.math == required_math(d) && e.config.a_layout == d.a_layout && e.config.b_layout == d.b_layout;
    if (!math_layout_exists)
      return error(StatusCode::unsupported, "no instance computes " + std::string(to_string(required_math(d))) +
                                                " with layout " + layout_letter(d.a_layout) + layout_letter(d.b_layout));
    return error(StatusCode::no_instance, "no instance accepts this problem on this device (A allows " + std::to_string(al.a) +
                                              "-element vectors, B " + std::to_string(al.b) + ")");
  }

  void publish(const TuningReport& r, const TunerOptions& opt) {
    const LogLevel level = r.source == Source::fallback ? LogLevel::warn : LogLevel::info;
    if (logs(level)) log(level, summary_line(r));
    if (logs(LogLevel::verbose) && !r.records.empty())
      for (const auto& l : tactic_lines(r)) log(LogLevel::verbose, l);
    if (opt.on_report) opt.on_report(r);
  }

  TuningReport base_report(const DeviceContext& ctx, const ProblemKey& key, Source src) const {
    TuningReport r;
    r.key = key;
    r.device = ctx.ordinal;
    r.device_name = ctx.info.name;
    r.source = src;
    return r;
  }

  Status select_slow(int ordinal, const GemmDesc& d, const GemmAlignment& al, const ProblemKey& key, cudaStream_t stream,
                     const GemmTactic*& out) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    DeviceContext* ctx = nullptr;
    KTUNE_RETURN_IF_ERROR(context(ordinal, ctx));
    const TunerOptions opt = options();
    std::shared_ptr<Slot> slot = slot_for(*ctx, key);
    if (const GemmTactic* w = slot->winner.load(std::memory_order_acquire)) {
      out = w;
      return {};
    }
    const bool capturing = opt.policy == Policy::tune && backend_->is_capturing(stream);
    std::unique_lock lock(slot->mu, std::defer_lock);
    if (capturing) {
      if (!lock.try_lock()) return deferred(*ctx, d, al, key, opt, out, /*remember=*/false);  // being tuned right now
    } else {
      lock.lock();  // another thread may be tuning this key: wait for its result
    }
    if (const GemmTactic* w = slot->winner.load(std::memory_order_acquire)) {
      out = w;
      return {};
    }
    const auto t0 = Clock::now();
    if (opt.policy != Policy::heuristic) {
      double ms = 0;
      if (const GemmTactic* e = from_cache(*ctx, key, d, al, &ms)) {
        from_cache_.fetch_add(1, std::memory_order_relaxed);
        TuningReport r = base_report(*ctx, key, Source::cache);
        r.winner_ms = ms;
        r.winner_tflops = tflops_of(2.0 * double(d.m) * double(d.n) * double(d.k), ms);
        pin_unmeasured(*slot, e, std::move(r), t0, opt);
        out = e;
        return {};
      }
    }
    if (opt.policy != Policy::tune) {
      std::vector<const GemmKernelEntry*> ranked = ranked_candidates(d, al, ctx->info, opt.cost_model);
      if (ranked.empty()) return no_candidates_error(d, al);
      const GemmTactic* t = intern(ranked.front(), GemmLaunchOptions{});
      heuristic_.fetch_add(1, std::memory_order_relaxed);
      TuningReport r = base_report(*ctx, key, Source::heuristic);
      r.note = "policy " + std::string(to_string(opt.policy));
      pin_unmeasured(*slot, t, std::move(r), t0, opt);
      out = t;
      return {};
    }
    if (capturing) return deferred(*ctx, d, al, key, opt, out, /*remember=*/true);
    return tune_locked(*ctx, *slot, d, al, key, opt, out, nullptr);
  }

  // Capture in progress: cost-model rank 1, not pinned; the key is remembered for tune_pending().
  Status deferred(DeviceContext& ctx, const GemmDesc& d, const GemmAlignment& al, const ProblemKey& key,
                  const TunerOptions& opt, const GemmTactic*& out, bool remember) {
    deferred_.fetch_add(1, std::memory_order_relaxed);
    std::vector<const GemmKernelEntry*> ranked = ranked_candidates(d, al, ctx.info, opt.cost_model);
    if (ranked.empty()) return no_candidates_error(d, al);
    out = intern(ranked.front(), GemmLaunchOptions{});
    if (!remember) return {};
    if (remember_pending(pending_, Pending{ctx.ordinal, key, d, al})) {
      heuristic_.fetch_add(1, std::memory_order_relaxed);
      TuningReport r = base_report(ctx, key, Source::deferred);
      r.winner = out->name;
      r.note = "stream is capturing a CUDA graph: not benchmarked; call ktune::tune_pending() later";
      publish(r, opt);
    }
    return {};
  }

  // The measuring flow shared by GEMM and conv keys. Under the device's bench mutex: opens a session
  // (`begin`), validates and times the best-ranked tactics (max_candidates distinct ones, each PDL twin
  // of a kept tactic kept too without taking a slot; within the key's budget; failures and slow ones are
  // recorded and excluded), times the fastest few again interleaved (final round), records the rest
  // (pruned by the model, cannot implement), then picks the winner with the near-tie rule. Returns the
  // winner interned by `intern_tactic`, or nullptr when nothing was measured (session_status says
  // whether a session could be opened). Caller holds the slot's mutex.
  template <class Session, class Tactic, class Begin, class Intern>
  const Tactic* measure_and_pick(DeviceContext& ctx, const std::vector<Tactic>& ranked, const std::vector<std::string>& why_not,
                                 double flops, double tol, const TunerOptions& opt, TuningReport& r, Status& session_status,
                                 Begin&& begin, Intern&& intern_tactic) {
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    // Which ranked tactics are measured: the best-ranked max_candidates distinct tactics; a PDL twin of a
    // kept tactic is kept as well and takes no slot.
    const std::size_t cap = opt.max_candidates > 0 ? static_cast<std::size_t>(opt.max_candidates) : ranked.size();
    std::vector<char> kept(ranked.size(), 0);
    std::vector<std::size_t> twin_of(ranked.size(), none), kept_list;
    std::size_t slots = 0;
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      for (std::size_t j : kept_list)
        if (detail::pdl_twins(ranked[j], ranked[i])) {
          twin_of[i] = j;
          break;
        }
      if (twin_of[i] == none) {
        if (slots >= cap) continue;
        ++slots;
      }
      kept[i] = 1;
      kept_list.push_back(i);
    }
    std::vector<std::size_t> kept_from(ranked.size() + 1, 0);  // kept tactics at ranks ≥ i
    for (std::size_t i = ranked.size(); i-- > 0;) kept_from[i] = kept_from[i + 1] + (kept[i] ? 1 : 0);

    std::vector<Contender> contenders;
    std::vector<std::size_t> contender_record;
    std::vector<double> wall_per_repeat;  // per contender: the first pass's wall time per repeat (final round's estimate)
    std::vector<Contender> pick_from;     // what the winner is picked from: the contenders, or the final round's
    std::vector<std::size_t> pick_record;
    std::string overturned;               // the first pass's pick when the final round picked another
    {
      std::lock_guard bench(ctx.bench_mu);
      std::unique_ptr<Session> session;
      (void)(session_status = begin(session));
      if (session_status.ok() && !session) (void)(session_status = error(StatusCode::internal, "backend returned no session"));
      if (session_status.ok()) {
        const auto m0 = Clock::now();
        double best = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < ranked.size(); ++i) {
          if (!kept[i]) continue;
          const Tactic& tac = ranked[i];
          TacticRecord t;
          t.name = tac.name;
          t.rank = static_cast<int>(i + 1);
          const std::string twin_note = twin_of[i] != none && opt.max_candidates > 0
                                            ? "PDL twin of rank " + std::to_string(twin_of[i] + 1) + " (takes no max_candidates slot); "
                                            : std::string();
          if (opt.max_ms_per_key > 0 && ms_since(m0) >= opt.max_ms_per_key && !contenders.empty()) {
            t.status = TacticStatus::pruned_by_budget;
            t.detail = twin_note + "key budget of " + detail::fmt("%.0f ms", opt.max_ms_per_key) + " spent";
            r.records.push_back(std::move(t));
            continue;
          }
          const Validation v = session->validate(tac);
          t.rel_error = v.rel_error;
          if (!v.status.ok()) {
            t.status = TacticStatus::failed_launch;
            t.detail = twin_note + v.status.message();
            r.records.push_back(std::move(t));
            continue;
          }
          if (!(v.rel_error <= tol)) {
            t.status = TacticStatus::failed_validation;
            t.detail = twin_note + "relative error " + detail::fmt("%.2e", v.rel_error) + " > tolerance " + detail::fmt("%.0e", tol);
            r.records.push_back(std::move(t));
            continue;
          }
          MeasureRequest req;
          req.repeats = opt.repeats;
          req.best_ms = best;
          req.max_launch_ms = opt.max_launch_ms;
          if (opt.max_ms_per_key > 0) req.budget_ms = std::max(0.0, opt.max_ms_per_key - ms_since(m0)) / double(kept_from[i]);
          const auto w0 = Clock::now();
          const Measurement m = session->measure(tac, req);
          const double wall = ms_since(w0);
          t.repeats = m.repeats;
          t.chain = m.chain;
          if (!m.status.ok()) {
            t.status = TacticStatus::failed_launch;
            t.detail = twin_note + m.status.message();
            r.records.push_back(std::move(t));
            continue;
          }
          t.ms = m.ms;
          t.tflops = tflops_of(flops, m.ms);
          if (!(m.ms > 0) || !std::isfinite(m.ms)) {
            t.status = TacticStatus::failed_launch;
            t.detail = twin_note + "no valid time";
          } else if (m.exceeded_bound || m.ms > opt.max_launch_ms) {
            t.status = TacticStatus::exceeded_time_bound;
            t.detail = twin_note + detail::fmt("%.1f ms", m.ms) + " > bound " + detail::fmt("%.1f ms", opt.max_launch_ms);
          } else if (m.stop == RepeatDecision::slower_than_best) {
            t.status = TacticStatus::slower_than_best;
            t.detail = twin_note + detail::fmt("> %.2fx the best so far", opt.repeats.slow_cutoff);
          } else {
            t.status = TacticStatus::measured;
            best = std::min(best, m.ms);
            contenders.push_back(Contender{tac.name, m.ms,
                                           static_cast<long long>(tac.entry->resources.threads) * tac.entry->resources.smem_bytes, i});
            contender_record.push_back(r.records.size());
            wall_per_repeat.push_back(wall / double(std::max(1, m.repeats)));
            t.detail = twin_note + "spread " + detail::fmt("%.1f%%", m.spread * 100) + ", stop: " + std::string(to_string(m.stop));
          }
          r.records.push_back(std::move(t));
        }
        pick_from = contenders;
        pick_record = contender_record;
        final_round(*session, ranked, contenders, contender_record, wall_per_repeat, flops, opt, m0, r, pick_from, pick_record,
                    overturned);
        r.scratch_bytes = session->scratch_bytes();
        r.method = session->describe();
      }
    }
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      if (kept[i]) continue;
      TacticRecord t;
      t.name = ranked[i].name;
      t.rank = static_cast<int>(i + 1);
      t.status = TacticStatus::pruned_by_model;
      t.detail = "rank " + std::to_string(i + 1) + ": max_candidates " + std::to_string(opt.max_candidates) +
                 " distinct tactics kept before it (PDL twins of kept tactics take no slot)";
      r.records.push_back(std::move(t));
    }
    for (auto& w : why_not) {
      TacticRecord t;
      const auto colon = w.find(": ");
      t.name = w.substr(0, colon);
      t.detail = colon == std::string::npos ? std::string() : w.substr(colon + 2);
      t.status = TacticStatus::cannot_implement;
      r.records.push_back(std::move(t));
    }

    const int win = pick_winner(pick_from, opt.tie_band);
    if (win < 0) return nullptr;
    const Tactic* winner = intern_tactic(ranked[pick_from[static_cast<std::size_t>(win)].index]);
    TacticRecord& wr = r.records[pick_record[static_cast<std::size_t>(win)]];
    wr.status = TacticStatus::selected;
    const double fastest = std::min_element(pick_from.begin(), pick_from.end(),
                                            [](const Contender& a, const Contender& b) { return a.ms < b.ms; })->ms;
    if (wr.ms > fastest) wr.detail = "near-tie (within " + detail::fmt("%.1f%%", opt.tie_band * 100) +
                                     " of the fastest): fewer resources / name; " + wr.detail;
    if (!overturned.empty() && overturned != wr.name) wr.detail = "final round overturned the first pass's pick " + overturned + "; " + wr.detail;
    r.winner = wr.name;
    r.winner_ms = wr.ms;
    r.winner_tflops = wr.tflops;
    tunings_.fetch_add(1, std::memory_order_relaxed);
    return winner;
  }

  // The final round (TunerOptions::final_rounds): the contenders within final_band of the fastest (at
  // most final_max: the first pass's pick, then the fastest) are measured again round-robin, one exact_repeats = final_repeats request each per
  // round, within what is left of the key's budget. When at least min(3, final_rounds) rounds were done,
  // `pick_from` / `pick_record` become the finalists with their final-round medians (records updated: ms
  // is the final median, first_pass_ms the first pass's) and `overturned` the first pass's pick; a
  // finalist whose final-round run fails is dropped (from `contenders` too). r.final_round says what happened.
  template <class Session, class Tactic>
  void final_round(Session& session, const std::vector<Tactic>& ranked, std::vector<Contender>& contenders,
                   std::vector<std::size_t>& contender_record, const std::vector<double>& wall_per_repeat, double flops,
                   const TunerOptions& opt, Clock::time_point m0, TuningReport& r, std::vector<Contender>& pick_from,
                   std::vector<std::size_t>& pick_record, std::string& overturned) {
    if (opt.final_rounds <= 0 || opt.final_max < 2 || contenders.size() < 2) return;
    // Finalists: fastest first (ties: rank).
    std::vector<std::size_t> order(contenders.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return contenders[a].ms != contenders[b].ms ? contenders[a].ms < contenders[b].ms : contenders[a].index < contenders[b].index;
    });
    const double limit = contenders[order.front()].ms * (1.0 + std::max(0.0, opt.final_band));
    // The first pass's pick (which the near-tie rule may have taken over a slightly faster variant: fewer
    // resources, the default options) is always a finalist, so that the rule can pick it again; then the
    // fastest others. Timed in the order of their first-pass times.
    const int first_pass_win = pick_winner(contenders, opt.tie_band);
    const std::string first_pass_name =
        first_pass_win >= 0 ? std::string(contenders[static_cast<std::size_t>(first_pass_win)].name) : std::string();
    std::vector<std::size_t> fin;  // positions in contenders
    if (first_pass_win >= 0) fin.push_back(static_cast<std::size_t>(first_pass_win));
    for (std::size_t p : order)
      if (contenders[p].ms <= limit && fin.size() < static_cast<std::size_t>(opt.final_max) && std::find(fin.begin(), fin.end(), p) == fin.end())
        fin.push_back(p);
    std::stable_sort(fin.begin(), fin.end(), [&](std::size_t a, std::size_t b) {
      return std::find(order.begin(), order.end(), a) < std::find(order.begin(), order.end(), b);
    });
    const std::string band = detail::fmt("%.0f%%", std::max(0.0, opt.final_band) * 100);
    if (fin.size() < 2) return;  // a clear winner: nothing to re-time
    const std::string who = std::to_string(fin.size()) + " within " + band + " of the fastest";
    const int want = opt.final_rounds;
    const int min_rounds = std::min(want, 3);
    auto left = [&] { return opt.max_ms_per_key > 0 ? opt.max_ms_per_key - ms_since(m0) : std::numeric_limits<double>::infinity(); };
    double round_ms = 0;  // estimate: the first pass's wall time per repeat; then the last round's wall time
    for (std::size_t q : fin) round_ms += wall_per_repeat[q];
    if (left() < double(min_rounds) * round_ms) {
      r.final_round = "skipped, " + who + ": key budget spent (" + detail::fmt("%.1f ms", std::max(0.0, left())) +
                      " left of " + detail::fmt("%.0f ms", opt.max_ms_per_key) + ", " + std::to_string(min_rounds) + " rounds need ~" +
                      detail::fmt("%.1f ms", double(min_rounds) * round_ms) + "); the first pass decides";
      return;
    }
    const auto f0 = Clock::now();
    std::vector<std::vector<double>> samples(fin.size());
    std::vector<char> dropped(fin.size(), 0);
    std::size_t alive = fin.size();
    int rounds = 0;
    bool cut = false;
    for (; rounds < want && alive >= 2; ++rounds) {
      if (rounds > 0 && left() < round_ms) {
        cut = true;
        break;
      }
      const auto rt0 = Clock::now();
      for (std::size_t f = 0; f < fin.size(); ++f) {
        if (dropped[f]) continue;
        const Contender& c = contenders[fin[f]];
        MeasureRequest req;
        req.repeats = opt.repeats;
        req.max_launch_ms = opt.max_launch_ms;
        req.exact_repeats = std::max(1, opt.final_repeats);
        const Measurement m = session.measure(ranked[c.index], req);
        TacticRecord& rec = r.records[contender_record[fin[f]]];
        if (!m.status.ok() || !(m.ms > 0) || !std::isfinite(m.ms) || m.exceeded_bound || m.ms > opt.max_launch_ms) {
          dropped[f] = 1;
          --alive;
          const bool slow = m.status.ok() && (m.exceeded_bound || m.ms > opt.max_launch_ms);
          rec.status = slow ? TacticStatus::exceeded_time_bound : TacticStatus::failed_launch;
          rec.detail = "final round " + std::to_string(rounds + 1) + ": " +
                       (!m.status.ok() ? m.status.message()
                        : slow         ? detail::fmt("%.1f ms", m.ms) + " > bound " + detail::fmt("%.1f ms", opt.max_launch_ms)
                                       : std::string("no valid time")) +
                       " (first pass " + detail::fmt("%.4f ms", rec.ms) + ")";
          continue;
        }
        samples[f].push_back(m.ms);
      }
      round_ms = ms_since(rt0);
    }
    // Finalists that failed are out of the first pass's pick as well.
    std::vector<std::size_t> out;
    for (std::size_t f = 0; f < fin.size(); ++f)
      if (dropped[f]) out.push_back(fin[f]);
    const double spent = ms_since(f0);
    r.final_round = who + ", " + std::to_string(rounds) + (cut ? " of " + std::to_string(want) : std::string()) + " interleaved round" +
                    (rounds == 1 ? "" : "s") + (cut ? " (cut short by the key budget)" : "") + ", " + detail::fmt("%.1f ms", spent);
    if (!out.empty()) r.final_round += ", " + std::to_string(out.size()) + " failed";
    if (rounds < min_rounds || alive == 0) {
      r.final_round += rounds < min_rounds ? "; too few rounds: the first pass decides" : "; none left: the first pass decides";
    } else {
      pick_from.clear();
      pick_record.clear();
      for (std::size_t f = 0; f < fin.size(); ++f) {
        if (dropped[f]) continue;
        std::vector<double> v = samples[f];
        const double med = quantile(v, 0.5);
        Contender c = contenders[fin[f]];
        TacticRecord& rec = r.records[contender_record[fin[f]]];
        rec.first_pass_ms = rec.ms;
        rec.ms = med;
        rec.tflops = tflops_of(flops, med);
        rec.final_rounds = static_cast<int>(samples[f].size());
        rec.detail = "final round: median " + detail::fmt("%.4f ms", med) + " over " + std::to_string(samples[f].size()) +
                     " interleaved rounds (first pass " + detail::fmt("%.4f ms", rec.first_pass_ms) + "); " + rec.detail;
        c.ms = med;
        pick_from.push_back(c);
        pick_record.push_back(contender_record[fin[f]]);
      }
      overturned = first_pass_name;
    }
    if (!out.empty()) {
      std::vector<Contender> keep_c;
      std::vector<std::size_t> keep_r;
      for (std::size_t p = 0; p < contenders.size(); ++p)
        if (std::find(out.begin(), out.end(), p) == out.end()) {
          keep_c.push_back(contenders[p]);
          keep_r.push_back(contender_record[p]);
        }
      contenders = std::move(keep_c);
      contender_record = std::move(keep_r);
      if (rounds < min_rounds || alive == 0) {
        pick_from = contenders;
        pick_record = contender_record;
      }
    }
  }

  // Measure and pin. Caller holds slot.mu.
  Status tune_locked(DeviceContext& ctx, Slot& slot, const GemmDesc& d, const GemmAlignment& al, const ProblemKey& key,
                     const TunerOptions& opt, const GemmTactic*& out, TuningReport* report_out) {
    const auto t0 = Clock::now();
    const bool verbose = logs(LogLevel::verbose) || static_cast<bool>(opt.on_report) || report_out != nullptr;
    std::vector<std::string> why_not;
    const std::vector<GemmTactic> ranked =
        ranked_tactics(d, al, ctx.info, opt.cost_model, opt.launch_variants, verbose ? &why_not : nullptr);
    if (ranked.empty()) return no_candidates_error(d, al);
    // The instances among them, best-ranked first: the session picks its reference among these.
    std::vector<const GemmKernelEntry*> instances;
    for (const GemmTactic& t : ranked)
      if (std::find(instances.begin(), instances.end(), t.entry) == instances.end()) instances.push_back(t.entry);

    TuningReport r = base_report(ctx, key, Source::tuned);
    const double flops = 2.0 * double(d.m) * double(d.n) * double(d.k);
    const double tol = opt.tolerances.for_problem(key.math, key.d_type);
    Status session_status;
    const GemmTactic* winner = measure_and_pick<TuningSession>(
        ctx, ranked, why_not, flops, tol, opt, r, session_status,
        [&](std::unique_ptr<TuningSession>& session) {
          return backend_->begin(ctx.ordinal, d, al, std::span<const GemmKernelEntry* const>(instances), session);
        },
        [&](const GemmTactic& t) { return intern(t.entry, t.launch); });
    if (winner == nullptr) {
      // Nothing measured successfully: run the cost model's choice of instance (default options: no
      // workspace), but neither persist it nor keep failing calls slow: pin it in memory for this process.
      const GemmKernelEntry* first = nullptr;
      for (const GemmTactic& t : ranked)
        if (is_default_launch(t.launch)) {
          first = t.entry;
          break;
        }
      winner = intern(first != nullptr ? first : ranked.front().entry, GemmLaunchOptions{});
      r.source = Source::fallback;
      r.winner = winner->name;
      r.note = session_status.ok() ? "no candidate passed validation and timing; using the cost model's choice"
                                   : "could not prepare tuning (" + session_status.message() + "); using the cost model's choice";
      heuristic_.fetch_add(1, std::memory_order_relaxed);
    }
    CacheEntry ce;
    ce.key = key;
    ce.id = ctx.id;
    pin_measured(slot, winner, r, t0, opt, std::move(ce));
    out = winner;
    if (report_out) *report_out = std::move(r);
    return {};
  }

  // ---- Conv2d: the slow path ----------------------------------------------------------------------------

  std::shared_ptr<ConvSlot> conv_slot_for(DeviceContext& ctx, const ConvKey& key) { return find_or_add_slot(ctx, ctx.conv_slots, key); }

  TuningReport base_conv_report(const DeviceContext& ctx, const ConvKey& key, Source src) const {
    TuningReport r;
    r.key.op = OpKind::conv2d;
    r.conv = key;
    r.device = ctx.ordinal;
    r.device_name = ctx.info.name;
    r.source = src;
    return r;
  }

  // The cache's conv tactic for this key on this device, if its instance is in the conv table, accepts
  // the problem on the device, and its launch options are ones conv_launch_variants() offers.
  const ConvTactic* from_conv_cache(DeviceContext& ctx, const ConvKey& key, const Conv2dDesc& d, const ConvAlignment& al,
                                    double* ms) {
    std::string name, launch;
    {
      std::lock_guard lock(store_mu_);
      const CacheEntry* e = store_.find(key, ctx.conv_id);
      if (e == nullptr) return nullptr;
      name = e->instance;
      launch = e->launch;
      if (ms) *ms = e->ms;
    }
    const ConvKernelEntry* inst = conv_table_ != nullptr ? conv_table_->find(name) : nullptr;
    if (inst == nullptr) {
      log(LogLevel::warn, "tuning cache entry for " + to_string(key) + " names conv instance '" + name +
                              "', which this build does not have; ignoring it");
      return nullptr;
    }
    if (Status s = can_implement(*inst, d, al, &ctx.info); !s.ok()) {
      log(LogLevel::warn, "tuning cache entry for " + to_string(key) + " names conv instance '" + name +
                              "', which cannot run it (" + s.message() + "); ignoring it");
      return nullptr;
    }
    ConvLaunchOptions lo;
    std::string why;
    if (!launch.empty() && !parse_conv_launch_suffix(launch, lo, why)) {
      log(LogLevel::warn, "tuning cache entry for " + to_string(key) + ": " + why + "; ignoring it");
      return nullptr;
    }
    if (!is_conv_launch_variant(*inst, lo, d, ctx.info)) {
      log(LogLevel::warn, "tuning cache entry for " + to_string(key) + " names tactic '" + conv_tactic_name(name, lo) +
                              "', whose launch options this build does not offer for the problem; ignoring it");
      return nullptr;
    }
    return intern_conv(inst, lo);
  }

  Status no_conv_candidates_error(const Conv2dDesc& d, const ConvAlignment& al, const DeviceInfo& dev) const {
    if (conv_table_ == nullptr || conv_table_->size() == 0)
      return error(StatusCode::no_instance, "the conv dispatch table is empty");
    bool math_exists = false;
    for (const auto& e : conv_table_->entries()) math_exists |= e.config.gemm.math == required_math(d) || math_implements(e.config.gemm.math, required_math(d));
    if (!math_exists) return error(StatusCode::unsupported, "no conv instance computes " + std::string(to_string(required_math(d))));
    return error(StatusCode::no_instance, "no conv instance accepts this problem on " + dev.name + " (x allows " +
                                              std::to_string(al.x) + "-element vectors, w " + std::to_string(al.w) + ")");
  }

  Status select_conv_slow(int ordinal, const Conv2dDesc& d, const ConvAlignment& al, const ConvKey& key, cudaStream_t stream,
                          const ConvTactic*& out) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    DeviceContext* ctx = nullptr;
    KTUNE_RETURN_IF_ERROR(context(ordinal, ctx));
    const TunerOptions opt = options();
    std::shared_ptr<ConvSlot> slot = conv_slot_for(*ctx, key);
    if (const ConvTactic* w = slot->winner.load(std::memory_order_acquire)) {
      out = w;
      return {};
    }
    const bool measuring = opt.policy == Policy::tune && conv_backend_ != nullptr;
    const bool capturing = measuring && backend_->is_capturing(stream);
    std::unique_lock lock(slot->mu, std::defer_lock);
    if (capturing) {
      if (!lock.try_lock()) return conv_deferred(*ctx, d, al, key, opt, out, /*remember=*/false);  // being tuned now
    } else {
      lock.lock();  // another thread may be tuning this key: wait for its result
    }
    if (const ConvTactic* w = slot->winner.load(std::memory_order_acquire)) {
      out = w;
      return {};
    }
    const auto t0 = Clock::now();
    if (opt.policy != Policy::heuristic) {
      double ms = 0;
      if (const ConvTactic* e = from_conv_cache(*ctx, key, d, al, &ms)) {
        from_cache_.fetch_add(1, std::memory_order_relaxed);
        TuningReport r = base_conv_report(*ctx, key, Source::cache);
        r.winner_ms = ms;
        r.winner_tflops = tflops_of(conv_flops(key), ms);
        pin_unmeasured(*slot, e, std::move(r), t0, opt);
        out = e;
        return {};
      }
    }
    if (!measuring) {
      const std::vector<const ConvKernelEntry*> ranked = ranked_conv_candidates(d, al, ctx->info);
      if (ranked.empty()) return no_conv_candidates_error(d, al, ctx->info);
      const ConvTactic* t = intern_conv(ranked.front(), ConvLaunchOptions{});
      heuristic_.fetch_add(1, std::memory_order_relaxed);
      TuningReport r = base_conv_report(*ctx, key, Source::heuristic);
      r.note = opt.policy != Policy::tune ? "policy " + std::string(to_string(opt.policy)) : std::string("no conv measuring backend");
      pin_unmeasured(*slot, t, std::move(r), t0, opt);
      out = t;
      return {};
    }
    if (capturing) return conv_deferred(*ctx, d, al, key, opt, out, /*remember=*/true);
    return tune_conv_locked(*ctx, *slot, d, al, key, opt, out, nullptr);
  }

  // Capture in progress: the heuristic choice, not pinned; the key is remembered for tune_pending().
  Status conv_deferred(DeviceContext& ctx, const Conv2dDesc& d, const ConvAlignment& al, const ConvKey& key, const TunerOptions& opt,
                       const ConvTactic*& out, bool remember) {
    deferred_.fetch_add(1, std::memory_order_relaxed);
    const std::vector<const ConvKernelEntry*> ranked = ranked_conv_candidates(d, al, ctx.info);
    if (ranked.empty()) return no_conv_candidates_error(d, al, ctx.info);
    out = intern_conv(ranked.front(), ConvLaunchOptions{});
    if (!remember) return {};
    if (remember_pending(conv_pending_, ConvPending{ctx.ordinal, key, d, al})) {
      heuristic_.fetch_add(1, std::memory_order_relaxed);
      TuningReport r = base_conv_report(ctx, key, Source::deferred);
      r.winner = out->name;
      r.note = "stream is capturing a CUDA graph: not benchmarked; call ktune::tune_pending() later";
      publish(r, opt);
    }
    return {};
  }

  // Measure conv tactics and pin the winner. Caller holds slot.mu.
  Status tune_conv_locked(DeviceContext& ctx, ConvSlot& slot, const Conv2dDesc& d, const ConvAlignment& al, const ConvKey& key,
                          const TunerOptions& opt, const ConvTactic*& out, TuningReport* report_out) {
    const auto t0 = Clock::now();
    const bool verbose = logs(LogLevel::verbose) || static_cast<bool>(opt.on_report) || report_out != nullptr;
    std::vector<std::string> why_not;
    const std::vector<ConvTactic> ranked = ranked_conv_tactics(d, al, ctx.info, opt.launch_variants, verbose ? &why_not : nullptr);
    if (ranked.empty()) return no_conv_candidates_error(d, al, ctx.info);
    std::vector<const ConvKernelEntry*> instances;
    for (const ConvTactic& t : ranked)
      if (std::find(instances.begin(), instances.end(), t.entry) == instances.end()) instances.push_back(t.entry);

    TuningReport r = base_conv_report(ctx, key, Source::tuned);
    const double flops = conv_flops(key);
    const double tol = opt.tolerances.for_problem(key.math, key.y_type);
    Status session_status;
    const ConvTactic* winner = measure_and_pick<ConvTuningSession>(
        ctx, ranked, why_not, flops, tol, opt, r, session_status,
        [&](std::unique_ptr<ConvTuningSession>& session) -> Status {
          if (conv_backend_ == nullptr) return error(StatusCode::unsupported, "no conv measuring backend");
          return conv_backend_->begin(ctx.ordinal, d, al, std::span<const ConvKernelEntry* const>(instances), session);
        },
        [&](const ConvTactic& t) { return intern_conv(t.entry, t.launch); });
    if (winner == nullptr) {
      // Nothing measured successfully: the heuristic choice (default options), pinned in memory for this
      // process but not persisted.
      winner = intern_conv(ranked.front().entry, ConvLaunchOptions{});
      r.source = Source::fallback;
      r.winner = winner->name;
      r.note = session_status.ok() ? "no candidate passed validation and timing; using the heuristic choice"
                                   : "could not prepare tuning (" + session_status.message() + "); using the heuristic choice";
      heuristic_.fetch_add(1, std::memory_order_relaxed);
    }
    CacheEntry ce;
    ce.key.op = OpKind::conv2d;
    ce.conv = key;
    ce.id = ctx.conv_id;
    pin_measured(slot, winner, r, t0, opt, std::move(ce));
    out = winner;
    if (report_out) *report_out = std::move(r);
    return {};
  }

  // Pin the winner of a tuning (or its fallback), publish the report and, when it was tuned, cache it
  // (`ce` holds the key and the device identity).
  template <class SlotT, class Tactic>
  void pin_measured(SlotT& slot, const Tactic* winner, TuningReport& r, Clock::time_point t0, const TunerOptions& opt, CacheEntry ce) {
    sort_records(r.records);
    r.tuning_ms = ms_since(t0);
    slot.source = r.source;
    slot.winner.store(winner, std::memory_order_release);
    publish(r, opt);
    if (r.source != Source::tuned) return;
    ce.instance = std::string(winner->entry->name);
    ce.launch = launch_suffix(winner->launch);
    ce.ms = r.winner_ms;
    ce.tflops = r.winner_tflops;
    persist(ce, opt);
  }

  // Add a newly tuned entry to the in-memory cache; save when a path is set.
  void persist(const CacheEntry& ce, const TunerOptions& opt) {
    {
      std::lock_guard lock(store_mu_);
      store_.insert(ce);
    }
    if (opt.autosave && !opt.cache_path.empty() && cache_writable_.load()) {
      std::vector<std::string> warnings;
      Status s;
      {
        std::lock_guard lock(store_mu_);
        (void)(s = save_cache_file(opt.cache_path, store_, warnings));
      }
      if (!s.ok()) cache_writable_.store(false);  // warn once, not on every key
      for (const auto& w : warnings) log(LogLevel::warn, w);
    }
  }
};

}  // namespace ktune::tuner


namespace ktune {
using tuner::Policy;
using tuner::Tuner;
using tuner::TunerOptions;
}  // namespace ktune
