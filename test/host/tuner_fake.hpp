// test/host/tuner_fake.hpp — a scripted tuning backend and a small dispatch table, so the tuner's
// logic is tested without a GPU. Included by the tuner_*.cpp tests only.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ktune/dispatch.hpp"
#include "ktune/gemm/resource_model.hpp"
#include "ktune/tuner/tuner.hpp"

namespace ktune_test {

using namespace ktune;
using namespace ktune::tuner;

// Entries need names with static lifetime.
inline std::string_view intern(std::string s) {
  static std::mutex mu;
  static std::deque<std::string> names;
  std::lock_guard lock(mu);
  for (const auto& n : names)
    if (n == s) return n;
  names.push_back(std::move(s));
  return names.back();
}

inline GemmKernelEntry make_entry(const GemmConfig& c, std::string_view family = "test_family") {
  GemmKernelEntry e;
  e.name = intern(std::string(instance_name(c).view()));
  e.family = family;
  e.config = c;
  e.resources = estimate_resources(c);
  return e;
}

inline GemmConfig cfg(MathOp math, TileShape t, WarpShape w, int stages, int align, Layout a = Layout::row, Layout b = Layout::col) {
  GemmConfig c;
  c.arch_cc = 80;
  c.math = math;
  c.a_layout = a;
  c.b_layout = b;
  c.tile = t;
  c.warp = w;
  c.stages = stages;
  c.align = align;
  return c;
}

// Six f16 "tn" instances (four aligned, two unaligned), one bf16, one f32 SIMT.
inline std::vector<GemmConfig> default_configs() {
  using M = MathOp;
  return {
      cfg(M::mma_f16, {128, 256, 32}, {64, 64}, 4, 8),  // 256 threads, big smem
      cfg(M::mma_f16, {256, 128, 32}, {64, 64}, 4, 8),
      cfg(M::mma_f16, {128, 128, 32}, {64, 64}, 4, 8),  // 128 threads
      cfg(M::mma_f16, {64, 128, 32}, {32, 64}, 4, 8),
      cfg(M::mma_f16, {128, 128, 32}, {64, 64}, 3, 2),
      cfg(M::mma_f16, {128, 128, 32}, {64, 64}, 3, 1),
      cfg(M::mma_bf16, {128, 128, 32}, {64, 64}, 4, 8),
      cfg(M::simt_f32, {128, 128, 8}, {32, 64}, 3, 4, Layout::row, Layout::row),
  };
}

inline void fill_table(GemmTable& t, const std::vector<GemmConfig>& cs = default_configs()) {
  for (const auto& c : cs) t.add(make_entry(c));
}

inline std::string name_of(const GemmConfig& c) { return std::string(instance_name(c).view()); }

// A problem that the f16 "tn" instances accept, with pointers of the requested alignment (elements).
struct Problem {
  GemmDesc desc;
  GemmOperands ops;
};
inline Problem f16_problem(std::int64_t m = 1024, std::int64_t n = 1024, std::int64_t k = 1024, int align = 8) {
  Problem p;
  p.desc.m = m;
  p.desc.n = n;
  p.desc.k = k;
  p.desc.ab_type = DType::f16;
  p.desc.d_type = DType::f16;
  p.desc.a_layout = Layout::row;
  p.desc.b_layout = Layout::col;
  // Fake device addresses: never dereferenced by the tuner.
  const std::uintptr_t base = 0x10000000;
  const std::uintptr_t off = static_cast<std::uintptr_t>(align) * 2 % 16;
  p.ops.a = reinterpret_cast<const void*>(base + off);
  p.ops.b = reinterpret_cast<const void*>(base + 0x4000000 + off);
  p.ops.d = reinterpret_cast<void*>(base + 0x8000000);
  return p;
}

struct FakeResult {
  double ms = 1.0;
  double rel_error = 0.0;
  bool launch_fails = false;      // validate() reports a failed run
  bool measure_fails = false;     // measure() reports a failed run
  bool exceeds_bound = false;     // measure() reports a run over max_launch_ms
  bool final_fails = false;       // measure() reports a failed run in the final round only (exact_repeats requests)
};

class FakeBackend : public TuningBackend {
 public:
  // Result per tactic name (the instance name for default launch options); unset tactics use
  // `tactic_fallback(tactic, desc)` when set, else `fallback(entry, desc)`.
  std::map<std::string, FakeResult> results;
  std::function<FakeResult(const GemmTactic&, const GemmDesc&)> tactic_fallback;
  std::function<FakeResult(const GemmKernelEntry&, const GemmDesc&)> fallback = [](const GemmKernelEntry& e, const GemmDesc&) {
    FakeResult r;
    r.ms = 1.0 + double(e.config.tile.m + e.config.tile.n) / 1000.0;
    return r;
  };
  std::atomic<bool> capturing{false};
  std::function<bool(cudaStream_t)> capture_predicate;  // when set, wins over `capturing`
  std::atomic<int> begins{0}, validates{0}, measures{0}, ends{0};
  int begin_sleep_ms = 0;       // make races real
  int measure_sleep_ms = 0;     // make budgets bite
  bool begin_fails = false;
  std::atomic<int> active_sessions{0}, max_active_sessions{0};
  std::mutex log_mu;
  std::vector<std::string> begun_problems;  // "m,n,k" per begin
  std::vector<std::string> measured;        // tactic names, in the order measure() saw them (first pass)
  // The tuner's final round (MeasureRequest::exact_repeats > 0) is counted apart, so the first-pass
  // counts above say which candidates were measured: requests and tactic names in call order.
  std::atomic<int> final_measures{0};
  std::vector<std::string> final_measured;
  // When set, the time measure() reports: given the tactic, its scripted time and whether the request
  // is a final-round one (drift, noise, inverted near-ties).
  std::function<double(const GemmTactic&, double, bool)> timing;

  static inline thread_local int tls_device = 0;

  Status current_device(int& ordinal) override {
    ordinal = tls_device;
    return {};
  }
  Status device_info(int ordinal, DeviceInfo& out) override {
    out = DeviceInfo{};
    out.ordinal = ordinal;
    out.name = "Fake H200 #" + std::to_string(ordinal);
    out.cc = 90;
    out.sm_count = 132;
    out.l2_bytes = 60 << 20;
    out.smem_optin_bytes = 227 * 1024;
    out.driver_version = 13000;
    out.runtime_version = 13000;
    return {};
  }
  bool is_capturing(cudaStream_t s) override { return capture_predicate ? capture_predicate(s) : capturing.load(); }

  class Session : public TuningSession {
   public:
    Session(FakeBackend& b, GemmDesc d) : b_(b), d_(d) {}
    ~Session() override {
      b_.active_sessions.fetch_sub(1);
      b_.ends.fetch_add(1);
    }
    Validation validate(const GemmTactic& e) override {
      b_.validates.fetch_add(1);
      const FakeResult r = b_.result(e, d_);
      Validation v;
      if (r.launch_fails) v.status = error(StatusCode::cuda_error, "fake launch failure");
      v.rel_error = r.rel_error;
      return v;
    }
    Measurement measure(const GemmTactic& e, const MeasureRequest& req) override {
      const bool final_round = req.exact_repeats > 0;
      (final_round ? b_.final_measures : b_.measures).fetch_add(1);
      {
        std::lock_guard lock(b_.log_mu);
        (final_round ? b_.final_measured : b_.measured).push_back(e.name);
      }
      if (b_.measure_sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(b_.measure_sleep_ms));
      const FakeResult r = b_.result(e, d_);
      Measurement m;
      if (r.measure_fails || (final_round && r.final_fails)) {
        m.status = error(StatusCode::cuda_error, "fake run failure");
        return m;
      }
      const double ms = b_.timing ? b_.timing(e, r.ms, final_round) : r.ms;
      m.ms = ms;
      m.repeats = final_round ? req.exact_repeats : req.repeats.min_repeats;
      m.exceeded_bound = r.exceeds_bound || ms > req.max_launch_ms;
      // Exactly the requested repeats: no adaptive stop.
      m.stop = final_round ? RepeatDecision::max_repeats
               : std::isfinite(req.best_ms) && ms > req.repeats.slow_cutoff * req.best_ms ? RepeatDecision::slower_than_best
                                                                                           : RepeatDecision::stable;
      return m;
    }
    std::size_t scratch_bytes() const override { return 1234; }
    std::string describe() const override { return "fake timings"; }

   private:
    FakeBackend& b_;
    GemmDesc d_;
  };

  Status begin(int, const GemmDesc& desc, const GemmAlignment&, std::span<const GemmKernelEntry* const>,
               std::unique_ptr<TuningSession>& out) override {
    begins.fetch_add(1);
    {
      std::lock_guard lock(log_mu);
      begun_problems.push_back(std::to_string(desc.m) + "," + std::to_string(desc.n) + "," + std::to_string(desc.k));
    }
    if (begin_fails) return error(StatusCode::cuda_error, "fake: out of memory for scratch");
    const int a = active_sessions.fetch_add(1) + 1;
    int prev = max_active_sessions.load();
    while (a > prev && !max_active_sessions.compare_exchange_weak(prev, a)) {
    }
    if (begin_sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(begin_sleep_ms));
    out = std::make_unique<Session>(*this, desc);
    return {};
  }

  FakeResult result(const GemmTactic& t, const GemmDesc& d) const {
    auto it = results.find(t.name);
    if (it != results.end()) return it->second;
    return tactic_fallback ? tactic_fallback(t, d) : fallback(*t.entry, d);
  }
};

// Options for tests: quiet, no cache file, records captured.
struct Capture {
  std::mutex mu;
  std::vector<TuningReport> reports;
  std::vector<std::string> logs;
};

inline TunerOptions quiet_options(Capture* cap = nullptr) {
  TunerOptions o;
  o.log_level = LogLevel::verbose;
  if (cap) {
    o.log_sink = [cap](LogLevel, std::string_view m) {
      std::lock_guard lock(cap->mu);
      cap->logs.emplace_back(m);
    };
    o.on_report = [cap](const TuningReport& r) {
      std::lock_guard lock(cap->mu);
      cap->reports.push_back(r);
    };
  } else {
    o.log_sink = [](LogLevel, std::string_view) {};
  }
  return o;
}

// A fresh temporary directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> n{0};
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("ktune_tuner_test_" + std::to_string(::getpid()) + "_" + std::to_string(n.fetch_add(1)) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::string read_text(const std::string& path) {
  std::string s, t;
  bool exists = false;
  (void)ktune::tuner::detail::read_file(path, s, exists);
  return s;
}
inline void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

}  // namespace ktune_test
