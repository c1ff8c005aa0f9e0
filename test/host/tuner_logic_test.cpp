// The tuner's decisions, driven through a scripted backend: candidates, pinning, policies, budgets,
// near-tie determinism, failure exclusion, graph capture, the persistent cache, logs and reports.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "tuner_fake.hpp"

using namespace ktune_test;
using M = MathOp;

namespace {

const GemmConfig k128x256 = cfg(M::mma_f16, {128, 256, 32}, {64, 64}, 4, 8);
const GemmConfig k256x128 = cfg(M::mma_f16, {256, 128, 32}, {64, 64}, 4, 8);
const GemmConfig k128x128 = cfg(M::mma_f16, {128, 128, 32}, {64, 64}, 4, 8);
const GemmConfig k64x128 = cfg(M::mma_f16, {64, 128, 32}, {32, 64}, 4, 8);
const GemmConfig kA2 = cfg(M::mma_f16, {128, 128, 32}, {64, 64}, 3, 2);
const GemmConfig kA1 = cfg(M::mma_f16, {128, 128, 32}, {64, 64}, 3, 1);

struct Fixture {
  GemmTable table;
  std::shared_ptr<FakeBackend> backend = std::make_shared<FakeBackend>();
  Capture cap;
  std::unique_ptr<Tuner> tuner;
  explicit Fixture(TunerOptions o = {}, bool quiet = true, const std::vector<GemmConfig>& cs = default_configs()) {
    fill_table(table, cs);
    if (quiet) {
      TunerOptions q = quiet_options(&cap);
      q.policy = o.policy;
      q.max_candidates = o.max_candidates;
      q.max_ms_per_key = o.max_ms_per_key;
      q.tie_band = o.tie_band;
      q.final_band = o.final_band;
      q.final_max = o.final_max;
      q.final_rounds = o.final_rounds;
      q.final_repeats = o.final_repeats;
      q.cache_path = o.cache_path;
      q.m_bucketing = o.m_bucketing;
      if (o.cost_model) q.cost_model = o.cost_model;
      o = q;
    }
    // Instance-level logic: one tactic per instance (unless a test turns launch variants back on). The
    // fake backend's device is sm90, where every instance would also offer its PDL twin on problems up
    // to 2^35; launch variants are tuner_tactics_test.cpp's.
    o.launch_variants = false;
    tuner = std::make_unique<Tuner>(backend, &table, std::move(o));
  }
  const GemmKernelEntry* select(const Problem& p, Status* st = nullptr, cudaStream_t s = nullptr) {
    const GemmKernelEntry* e = nullptr;
    Status x = tuner->select(p.desc, p.ops, s, e);
    if (st) *st = x;
    return e;
  }
  void set(const GemmConfig& c, double ms) { backend->results[name_of(c)].ms = ms; }
  TuningReport last_report() {
    std::lock_guard lock(cap.mu);
    REQUIRE(!cap.reports.empty());
    return cap.reports.back();
  }
};

std::string name(const GemmKernelEntry* e) { return e ? std::string(e->name) : std::string("(null)"); }

}  // namespace

TEST_CASE("tuner: candidates are the entries can_implement accepts; the rest are logged as such") {
  Fixture f;
  const Problem p = f16_problem();
  const GemmKernelEntry* e = f.select(p);
  REQUIRE(e != nullptr);
  CHECK(name(e) == name_of(k64x128));  // fastest under the default fake timings
  const TuningReport r = f.last_report();
  CHECK(r.source == Source::tuned);
  CHECK(r.count(TacticStatus::selected) == 1);
  CHECK(r.count(TacticStatus::measured) == 5);           // 6 f16 tn instances accept aligned f16
  CHECK(r.count(TacticStatus::cannot_implement) == 2);   // bf16 and SIMT f32
  CHECK(f.backend->measures.load() == 6);
  for (const auto& t : r.records)
    if (t.status == TacticStatus::cannot_implement) CHECK(t.detail.find("problem needs mma_f16") != std::string::npos);
  // Misaligned A (2-byte): only the align-1 instance remains.
  Fixture g;
  const GemmKernelEntry* u = g.select(f16_problem(1024, 1024, 1024, 1));
  CHECK(name(u) == name_of(kA1));
  CHECK(g.last_report().count(TacticStatus::cannot_implement) == 7);
}

TEST_CASE("tuner: the winner is pinned; later calls are lookups that never tune again") {
  Fixture f;
  const Problem p = f16_problem(2048, 2048, 2048);
  const GemmKernelEntry* first = f.select(p);
  REQUIRE(first != nullptr);
  CHECK(f.backend->begins.load() == 1);
  for (int i = 0; i < 100; ++i) CHECK(f.select(p) == first);
  CHECK(f.backend->begins.load() == 1);
  CHECK(f.tuner->counters().tunings == 1);
  CHECK(f.tuner->lookup(p.desc, p.ops) == first);
  // A different key tunes separately.
  CHECK(f.select(f16_problem(2048, 2048, 1024)) != nullptr);
  CHECK(f.backend->begins.load() == 2);
  // reset() forgets pins; the in-memory cache still knows the key, so it is not re-measured.
  f.tuner->reset();
  CHECK(f.tuner->lookup(p.desc, p.ops) == nullptr);
  CHECK(f.select(p) == first);
  CHECK(f.backend->begins.load() == 2);
  CHECK(f.last_report().source == Source::cache);
}

TEST_CASE("tuner: near-ties within the band go to fewer resources, then to the name") {
  {  // 128x128 (128 threads) is 1.5% slower than 128x256 (256 threads, more smem): tied, fewer resources wins.
    Fixture f;
    f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
    f.set(k128x256, 1.000);
    f.set(k128x128, 1.015);
    CHECK(name(f.select(f16_problem())) == name_of(k128x128));
    const TuningReport r = f.last_report();
    const auto& sel = *std::find_if(r.records.begin(), r.records.end(), [](const TacticRecord& t) { return t.status == TacticStatus::selected; });
    CHECK(sel.detail.find("near-tie") != std::string::npos);
  }
  {  // 3% slower: outside the band, the fastest wins.
    Fixture f;
    f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
    f.set(k128x256, 1.000);
    f.set(k128x128, 1.030);
    CHECK(name(f.select(f16_problem())) == name_of(k128x256));
  }
  {  // Equal resources: the name decides, even against a 0.5% faster instance.
    Fixture f;
    f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
    f.set(k256x128, 0.995);
    f.set(k128x256, 1.000);
    REQUIRE(estimate_resources(k256x128) == estimate_resources(k128x256));
    CHECK(name(f.select(f16_problem())) == name_of(k128x256));
  }
  {  // A configurable band: 0 means strictly the fastest.
    TunerOptions o;
    o.tie_band = 0.0;
    Fixture f(o);
    f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
    f.set(k128x256, 1.000);
    f.set(k128x128, 1.001);
    CHECK(name(f.select(f16_problem())) == name_of(k128x256));
  }
}

TEST_CASE("tuner: the pick is the same whatever the table order and the measurement order") {
  auto cs = default_configs();
  std::sort(cs.begin(), cs.end(), [](const GemmConfig& a, const GemmConfig& b) { return name_of(a) < name_of(b); });
  std::set<std::string> winners;
  int runs = 0;
  do {
    // Rank by position in the table, so the measurement order follows the table order.
    TunerOptions o;
    o.cost_model = [](const GemmKernelEntry& e, const GemmDesc&, const DeviceInfo&) {
      return double(reinterpret_cast<std::uintptr_t>(&e));
    };
    Fixture f(o, true, cs);
    f.backend->fallback = [](const GemmKernelEntry& e, const GemmDesc&) {
      // Several instances within 2% of each other.
      return FakeResult{1.0 + 0.004 * double(e.config.tile.m % 7 + e.config.align % 5)};
    };
    winners.insert(name(f.select(f16_problem())));
    ++runs;
  } while (std::next_permutation(cs.begin(), cs.begin() + 5, [](const GemmConfig& a, const GemmConfig& b) { return name_of(a) < name_of(b); }) &&
           runs < 120);
  CHECK(runs == 120);
  CHECK(winners.size() == 1);
  // pick_winner itself is order-independent.
  std::vector<Contender> c = {{"b", 1.00, 50, 0}, {"a", 1.01, 50, 1}, {"c", 1.015, 10, 2}, {"d", 0.99, 90, 3}, {"e", 1.5, 1, 4}};
  std::sort(c.begin(), c.end(), [](const Contender& x, const Contender& y) { return x.name < y.name; });
  std::set<std::string_view> picks;
  do {
    picks.insert(c[static_cast<std::size_t>(pick_winner(c, 0.02))].name);
  } while (std::next_permutation(c.begin(), c.end(), [](const Contender& x, const Contender& y) { return x.name < y.name; }));
  // d (0.99) is fastest; the band ends at 0.99·1.02 = 1.0098, so only b ties with it, and b has fewer resources.
  CHECK(picks == std::set<std::string_view>{"b"});
  CHECK(pick_winner({}, 0.02) == -1);
}

TEST_CASE("tuner: failing candidates are excluded, logged and do not poison later calls") {
  Fixture f;
  f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{0.95}; };  // kA1
  f.backend->results[name_of(k64x128)] = FakeResult{0.5, 0.3};                       // fast but wrong
  f.backend->results[name_of(k128x128)] = FakeResult{0.6, 0.0, /*launch_fails=*/true};
  f.backend->results[name_of(k128x256)] = FakeResult{0.7, 0.0, false, /*measure_fails=*/true};
  f.backend->results[name_of(k256x128)] = FakeResult{0.8, 0.0, false, false, /*exceeds_bound=*/true};
  f.backend->results[name_of(kA2)] = FakeResult{0.9, 0.009};                          // within f16 tolerance 1e-2
  const Problem p = f16_problem();
  CHECK(name(f.select(p)) == name_of(kA2));
  const TuningReport r = f.last_report();
  auto status_of = [&](const GemmConfig& c) {
    for (const auto& t : r.records)
      if (t.name == name_of(c)) return t.status;
    FAIL("no record");
    return TacticStatus::cannot_implement;
  };
  CHECK(status_of(k64x128) == TacticStatus::failed_validation);
  CHECK(status_of(k128x128) == TacticStatus::failed_launch);
  CHECK(status_of(k128x256) == TacticStatus::failed_launch);
  CHECK(status_of(k256x128) == TacticStatus::exceeded_time_bound);
  CHECK(status_of(kA2) == TacticStatus::selected);
  CHECK(status_of(kA1) == TacticStatus::measured);
  // Records are sorted: selected first, measured next, failures after, cannot-implement last.
  CHECK(r.records.front().status == TacticStatus::selected);
  CHECK(r.records.back().status == TacticStatus::cannot_implement);
  CHECK(std::is_sorted(r.records.begin(), r.records.end(), [](const TacticRecord& a, const TacticRecord& b) {
    auto g = [](TacticStatus s) { return s == TacticStatus::slower_than_best ? TacticStatus::measured : s; };
    return g(a.status) < g(b.status);
  }));
  // The failed validation is not measured (validated first).
  CHECK(f.backend->validates.load() == 6);
  CHECK(f.backend->measures.load() == 4);
  // A later key with different scripted results is unaffected by earlier failures.
  f.backend->results.clear();
  f.backend->fallback = [](const GemmKernelEntry& e, const GemmDesc&) { return FakeResult{e.config.tile.m == 64 ? 0.5 : 1.0}; };
  CHECK(name(f.select(f16_problem(512, 512, 512))) == name_of(k64x128));
  // The cache holds the valid winner for the first key.
  const CacheStore cs = f.tuner->cache_snapshot();
  CHECK(cs.size() == 2);
  CacheIdentity id;
  REQUIRE(f.tuner->identity(0, id).ok());
  REQUIRE(cs.find(make_key(p.desc, alignment_of(p.desc, p.ops)), id) != nullptr);
  CHECK(cs.find(make_key(p.desc, alignment_of(p.desc, p.ops)), id)->instance == name_of(kA2));
}

TEST_CASE("tuner: per-dtype validation tolerances") {
  Tolerances t;
  CHECK(t.for_problem(MathOp::simt_f32, DType::f32) == 1e-5);
  CHECK(t.for_problem(MathOp::mma_tf32, DType::f32) == 2e-3);
  CHECK(t.for_problem(MathOp::mma_f16, DType::f16) == 1e-2);
  CHECK(t.for_problem(MathOp::mma_bf16, DType::f32) == 1e-2);
  CHECK(t.for_problem(MathOp::simt_f32, DType::bf16) == 1e-2);  // 16-bit output widens the bar
  // NaN error is a failure; a tolerance edge passes.
  Fixture f;
  f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{1.0, std::nan("")}; };
  f.backend->results[name_of(kA1)] = FakeResult{5.0, 1e-2};
  CHECK(name(f.select(f16_problem())) == name_of(kA1));
  CHECK(f.last_report().count(TacticStatus::failed_validation) == 5);
}

TEST_CASE("tuner: when every candidate fails, the cost model's choice runs and nothing is persisted") {
  TempDir dir;
  TunerOptions o;
  o.cache_path = dir.file("c.ktune");
  Fixture f(o);
  f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{1.0, 1.0}; };
  const Problem p = f16_problem();
  const GemmKernelEntry* e = f.select(p);
  REQUIRE(e != nullptr);
  const TuningReport r = f.last_report();
  CHECK(r.source == Source::fallback);
  CHECK(!r.note.empty());
  CHECK(f.tuner->cache_snapshot().empty());
  CHECK_FALSE(std::filesystem::exists(o.cache_path));
  CHECK(f.select(p) == e);  // pinned for this process: failing calls do not re-tune every time
  CHECK(f.backend->begins.load() == 1);
  // Scratch allocation failure: same fallback, and the call still gets an instance.
  Fixture g;
  g.backend->begin_fails = true;
  CHECK(g.select(p) != nullptr);
  CHECK(g.last_report().source == Source::fallback);
  CHECK(g.last_report().note.find("out of memory") != std::string::npos);
}

TEST_CASE("tuner: policy Heuristic never benchmarks and picks cost-model rank 1") {
  TunerOptions o;
  o.policy = Policy::heuristic;
  o.cost_model = [](const GemmKernelEntry& e, const GemmDesc&, const DeviceInfo&) {
    return e.config.tile.m == 256 ? 0.5 : 1.0;  // prefers 256x128
  };
  Fixture f(o);
  CHECK(name(f.select(f16_problem())) == name_of(k256x128));
  CHECK(f.backend->begins.load() == 0);
  CHECK(f.last_report().source == Source::heuristic);
  // Without a cost model: the built-in heuristic_cost; still no benchmarking.
  TunerOptions h;
  h.policy = Policy::heuristic;
  Fixture g(h);
  CHECK(g.select(f16_problem()) != nullptr);
  CHECK(g.backend->begins.load() == 0);
}

TEST_CASE("tuner: policy CacheOnly uses cache entries, else the heuristic, and never benchmarks") {
  TempDir dir;
  const std::string path = dir.file("c.ktune");
  const Problem cached = f16_problem(4096, 4096, 4096);
  {  // Produce a cache file by tuning.
    TunerOptions o;
    o.cache_path = path;
    Fixture f(o);
    f.set(k128x256, 0.1);
    CHECK(name(f.select(cached)) == name_of(k128x256));
  }
  TunerOptions o;
  o.policy = Policy::cache_only;
  o.cache_path = path;
  o.cost_model = [](const GemmKernelEntry& e, const GemmDesc&, const DeviceInfo&) { return e.config.align == 1 ? 0.0 : 1.0; };
  Fixture f(o);
  CHECK(name(f.select(cached)) == name_of(k128x256));
  CHECK(f.last_report().source == Source::cache);
  CHECK(name(f.select(f16_problem(8, 4096, 4096))) == name_of(kA1));
  CHECK(f.last_report().source == Source::heuristic);
  CHECK(f.backend->begins.load() == 0);
}

TEST_CASE("tuner: top-k pruning by the cost model") {
  TunerOptions o;
  o.max_candidates = 2;
  // Rank: a1 best, a2 second; everything else pruned even if faster.
  o.cost_model = [](const GemmKernelEntry& e, const GemmDesc&, const DeviceInfo&) { return double(e.config.align); };
  Fixture f(o);
  f.set(k64x128, 0.1);
  f.set(kA1, 1.0);
  f.set(kA2, 0.9);
  CHECK(name(f.select(f16_problem())) == name_of(kA2));
  const TuningReport r = f.last_report();
  CHECK(f.backend->measures.load() == 2);
  CHECK(r.count(TacticStatus::pruned_by_model) == 4);
  for (const auto& t : r.records)
    if (t.status == TacticStatus::pruned_by_model) {
      CHECK(t.rank > 2);
      CHECK(t.detail.find("max_candidates 2") != std::string::npos);
    }
}

TEST_CASE("tuner: the per-key time budget stops measuring, keeping at least one result") {
  TunerOptions o;
  o.max_ms_per_key = 50;
  Fixture f(o);
  f.backend->measure_sleep_ms = 30;
  CHECK(f.select(f16_problem()) != nullptr);
  const TuningReport r = f.last_report();
  const std::size_t measured = r.count(TacticStatus::selected) + r.count(TacticStatus::measured);
  CHECK(measured >= 1);
  CHECK(measured <= 2);
  CHECK(r.count(TacticStatus::pruned_by_budget) == 6 - measured);
  // A tiny budget still measures one candidate.
  TunerOptions t;
  t.max_ms_per_key = 0.001;
  Fixture g(t);
  g.backend->measure_sleep_ms = 5;
  CHECK(g.select(f16_problem()) != nullptr);
  CHECK(g.last_report().count(TacticStatus::selected) == 1);
  CHECK(g.last_report().count(TacticStatus::pruned_by_budget) == 5);
}

TEST_CASE("tuner: clearly slower candidates stop early and cannot win") {
  Fixture f;
  f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{10.0}; };
  f.set(k64x128, 1.0);  // rank order decides who is measured first; make the fast one known early
  TunerOptions o = f.tuner->options();
  o.cost_model = [](const GemmKernelEntry& e, const GemmDesc&, const DeviceInfo&) { return e.config.tile.m == 64 ? 0.0 : 1.0; };
  f.tuner->set_options(o);
  CHECK(name(f.select(f16_problem())) == name_of(k64x128));
  CHECK(f.last_report().count(TacticStatus::slower_than_best) == 5);
}

TEST_CASE("tuner: while the stream captures a graph nothing is benchmarked; tune_pending() tunes later") {
  Fixture f;
  f.set(k128x256, 0.1);
  const Problem p = f16_problem();
  f.backend->capturing = true;
  const GemmKernelEntry* during = f.select(p);
  REQUIRE(during != nullptr);
  CHECK(f.backend->begins.load() == 0);
  CHECK(f.tuner->pending_count() == 1);
  CHECK(f.last_report().source == Source::deferred);
  CHECK(f.tuner->lookup(p.desc, p.ops) == nullptr);  // not pinned
  for (int i = 0; i < 5; ++i) CHECK(f.select(p) == during);
  CHECK(f.tuner->pending_count() == 1);               // remembered once
  CHECK(f.tuner->counters().deferred == 6);
  // Tune the pending keys (e.g. after capture ended).
  f.backend->capturing = false;
  std::size_t n = 0;
  REQUIRE(f.tuner->tune_pending(&n).ok());
  CHECK(n == 1);
  CHECK(f.tuner->pending_count() == 0);
  CHECK(f.backend->begins.load() == 1);
  // The next capture uses the tuned, pinned winner.
  f.backend->capturing = true;
  CHECK(name(f.select(p)) == name_of(k128x256));
  CHECK(f.backend->begins.load() == 1);
  // A non-capturing call for a pending key tunes it right away; tune_pending() then skips it.
  const Problem q = f16_problem(333, 1024, 1024);
  CHECK(f.select(q) != nullptr);
  CHECK(f.tuner->pending_count() == 1);
  f.backend->capturing = false;
  CHECK(name(f.select(q)) == name_of(k128x256));
  CHECK(f.backend->begins.load() == 2);
  REQUIRE(f.tuner->tune_pending(&n).ok());
  CHECK(n == 0);
  CHECK(f.backend->begins.load() == 2);
}

TEST_CASE("tuner: capture is checked per stream, through the injected predicate") {
  Fixture f;
  cudaStream_t capturing_stream = reinterpret_cast<cudaStream_t>(0x1234);
  f.backend->capture_predicate = [&](cudaStream_t s) { return s == capturing_stream; };
  const Problem p = f16_problem();
  const GemmKernelEntry* e = nullptr;
  CHECK(f.tuner->select(p.desc, p.ops, capturing_stream, e).ok());
  CHECK(f.backend->begins.load() == 0);
  CHECK(f.tuner->select(p.desc, p.ops, nullptr, e).ok());
  CHECK(f.backend->begins.load() == 1);
  // Policies that never benchmark pin even during capture.
  TunerOptions o;
  o.policy = Policy::heuristic;
  Fixture g(o);
  g.backend->capturing = true;
  CHECK(g.select(p) != nullptr);
  CHECK(g.tuner->lookup(p.desc, p.ops) != nullptr);
  CHECK(g.tuner->pending_count() == 0);
}

TEST_CASE("tuner: cache written by one tuner is used by the next without tuning") {
  TempDir dir;
  TunerOptions o;
  o.cache_path = dir.file("c.ktune");
  const Problem p = f16_problem(3000, 5000, 704);
  {
    Fixture f(o);
    f.set(k256x128, 0.2);
    CHECK(name(f.select(p)) == name_of(k256x128));
    CHECK(std::filesystem::exists(o.cache_path));  // autosaved
  }
  const std::string text = read_text(o.cache_path);
  CHECK(text.find(name_of(k256x128)) != std::string::npos);
  CHECK(text.find("\"m\":3000") != std::string::npos);
  Fixture g(o);
  g.set(k64x128, 0.01);  // would win if re-tuned
  CHECK(name(g.select(p)) == name_of(k256x128));
  CHECK(g.backend->begins.load() == 0);
  CHECK(g.last_report().source == Source::cache);
  CHECK(g.last_report().winner_ms == 0.2);
  CHECK(g.tuner->counters().from_cache == 1);
}

TEST_CASE("tuner: cache entries that do not fit are never applied") {
  TempDir dir;
  const std::string path = dir.file("c.ktune");
  const Problem p = f16_problem();
  // Find this fixture's identity.
  Fixture probe;
  CacheIdentity id;
  REQUIRE(probe.tuner->identity(0, id).ok());
  const ProblemKey key = make_key(p.desc, alignment_of(p.desc, p.ops));
  auto write_entry = [&](std::string instance, CacheIdentity eid) {
    CacheStore s;
    CacheEntry e;
    e.key = key;
    e.id = std::move(eid);
    e.instance = std::move(instance);
    e.ms = 0.001;
    s.insert(e);
    std::filesystem::remove(path);
    std::vector<std::string> w;
    REQUIRE(save_cache_file(path, s, w).ok());
  };
  struct Bad {
    const char* what;
    std::string instance;
    CacheIdentity id;
    const char* log_phrase;
  };
  CacheIdentity other_dev = id, other_ver = id, other_fam = id;
  other_dev.device = "NVIDIA A100|cc80|sm108|l2:41943040|drv13000|rt13000";
  other_ver.version = "0.0.1";
  other_fam.families = "ffffffffffffffff";
  const std::vector<Bad> bad = {
      {"another device", name_of(k128x256), other_dev, "another device"},
      {"another version", name_of(k128x256), other_ver, "another ktune version"},
      {"another instance set", name_of(k128x256), other_fam, "another instance set"},
      {"unknown instance", "ktune_gemm_sm80_f16_tn_999x999x32_w64x64_s4_a8", id, "does not have"},
      {"instance that cannot run it", name_of(cfg(M::mma_bf16, {128, 128, 32}, {64, 64}, 4, 8)), id, "cannot run it"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.what);
    write_entry(b.instance, b.id);
    TunerOptions o;
    o.cache_path = path;
    Fixture f(o);
    const GemmKernelEntry* e = f.select(p);
    REQUIRE(e != nullptr);
    CHECK(name(e) != b.instance);
    CHECK(f.backend->begins.load() == 1);  // tuned instead
    std::lock_guard lock(f.cap.mu);
    CHECK(std::any_of(f.cap.logs.begin(), f.cap.logs.end(), [&](const std::string& l) { return l.find(b.log_phrase) != std::string::npos; }));
  }
  // And the good entry is applied.
  write_entry(name_of(kA2), id);
  TunerOptions o;
  o.cache_path = path;
  Fixture f(o);
  CHECK(name(f.select(p)) == name_of(kA2));
  CHECK(f.backend->begins.load() == 0);
}

TEST_CASE("tuner: a corrupt cache file never stops tuning nor gets overwritten when foreign") {
  TempDir dir;
  const std::string path = dir.file("c.ktune");
  const std::string foreign = "this is not a cache\n\x01\x02\x03";
  write_text(path, foreign);
  TunerOptions o;
  o.cache_path = path;
  Fixture f(o);
  CHECK(f.select(f16_problem()) != nullptr);
  CHECK(f.backend->begins.load() == 1);
  CHECK(read_text(path) == foreign);
  {
    std::lock_guard lock(f.cap.mu);
    CHECK(std::any_of(f.cap.logs.begin(), f.cap.logs.end(), [](const std::string& l) { return l.find("not a ktune cache") != std::string::npos; }));
  }
  // A cache with some corrupt lines: good lines apply, the file is rewritten clean on save.
  Fixture seed;
  CacheIdentity id;
  REQUIRE(seed.tuner->identity(0, id).ok());
  const Problem p = f16_problem(640, 640, 640);
  CacheEntry e;
  e.key = make_key(p.desc, alignment_of(p.desc, p.ops));
  e.id = id;
  e.instance = name_of(kA1);
  e.ms = 0.01;
  write_text(path, header_line() + "\n{broken\n" + to_line(e) + "\n{\"op\":\"gemm\"}\n");
  Fixture g(o);
  CHECK(name(g.select(p)) == name_of(kA1));
  CHECK(g.backend->begins.load() == 0);
  CHECK(g.select(f16_problem(64, 64, 64)) != nullptr);  // tunes and saves
  const std::string text = read_text(path);
  CHECK(text.find("{broken") == std::string::npos);
  CacheParseResult r = parse_cache_text(text, "x");
  CHECK(r.rejected == 0);
  CHECK(r.store.size() == 2);
}

TEST_CASE("tuner: reports and the tactic log describe every candidate") {
  Fixture f;
  TunerOptions with_variants = f.tuner->options();
  with_variants.launch_variants = true;  // (4096^3 > 2^35: raster-group variants, no PDL twins)
  f.tuner->set_options(with_variants);
  f.set(k128x128, 0.5);
  CHECK(f.select(f16_problem(4096, 4096, 4096)) != nullptr);
  const TuningReport r = f.last_report();
  // 8 instances, plus a raster-group variant of each of the 4 with >= 32 tile rows and >= 4 waves.
  CHECK(r.records.size() == 12);
  CHECK(r.count(TacticStatus::cannot_implement) == 2);
  CHECK(r.winner == name_of(k128x128));
  CHECK(r.winner_ms == 0.5);
  CHECK(r.winner_tflops == doctest::Approx(2.0 * 4096.0 * 4096 * 4096 / 0.5e9));
  CHECK(r.scratch_bytes == 1234);
  CHECK(r.method == "fake timings");
  std::lock_guard lock(f.cap.mu);
  const std::string all = std::accumulate(f.cap.logs.begin(), f.cap.logs.end(), std::string(), [](std::string a, const std::string& b) { return a + b + "\n"; });
  CHECK(all.find("tuned -> " + name_of(k128x128)) != std::string::npos);
  CHECK(all.find("TF/s") != std::string::npos);
  CHECK(all.find("cannot implement") != std::string::npos);
  CHECK(all.find("selected") != std::string::npos);
  CHECK(all.find("scratch 1.2 KiB") != std::string::npos);
  for (const auto& t : r.records) CHECK(all.find(t.name) != std::string::npos);
}

TEST_CASE("tuner: log levels filter what reaches the sink") {
  for (LogLevel level : {LogLevel::off, LogLevel::warn, LogLevel::info, LogLevel::verbose}) {
    CAPTURE(to_string(level));
    Fixture f;
    std::vector<LogLevel> seen;
    std::mutex mu;
    TunerOptions o = f.tuner->options();
    o.log_level = level;
    o.log_sink = [&](LogLevel l, std::string_view) {
      std::lock_guard lock(mu);
      seen.push_back(l);
    };
    f.tuner->set_options(o);
    CHECK(f.select(f16_problem()) != nullptr);
    for (LogLevel l : seen) CHECK(l <= level);
    const bool has_verbose = std::count(seen.begin(), seen.end(), LogLevel::verbose) > 0;
    const bool has_info = std::count(seen.begin(), seen.end(), LogLevel::info) > 0;
    CHECK(has_verbose == (level == LogLevel::verbose));
    CHECK(has_info == (level >= LogLevel::info));
    if (level == LogLevel::off) CHECK(seen.empty());
  }
}

TEST_CASE("tuner: environment variables set the policy, cache path, log level and bucketing") {
  std::map<std::string, std::string> env = {{"KTUNE_CACHE", "/tmp/x.ktune"}, {"KTUNE_LOG", "verbose"}, {"KTUNE_TUNING", "heuristic"}, {"KTUNE_M_BUCKETS", "pow2"}};
  auto getenv_fn = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> w;
  TunerOptions o = options_from_env({}, getenv_fn, &w);
  CHECK(w.empty());
  CHECK(o.cache_path == "/tmp/x.ktune");
  CHECK(o.log_level == LogLevel::verbose);
  CHECK(o.policy == Policy::heuristic);
  CHECK(o.m_bucketing == MBucketing::pow2);
  env = {{"KTUNE_TUNING", "off"}, {"KTUNE_LOG", "off"}};
  o = options_from_env({}, getenv_fn, &w);
  CHECK(o.policy == Policy::cache_only);
  CHECK(o.log_level == LogLevel::off);
  env = {{"KTUNE_TUNING", "full"}, {"KTUNE_LOG", "info"}};
  o = options_from_env({}, getenv_fn, &w);
  CHECK(o.policy == Policy::tune);
  CHECK(o.log_level == LogLevel::info);
  CHECK(o.cache_path.empty());
  env = {{"KTUNE_TUNING", "fastest please"}, {"KTUNE_LOG", "loud"}, {"KTUNE_M_BUCKETS", "log"}};
  TunerOptions base;
  base.policy = Policy::cache_only;
  o = options_from_env(base, getenv_fn, &w);
  CHECK(o.policy == Policy::cache_only);  // unchanged
  CHECK(o.log_level == LogLevel::warn);
  CHECK(w.size() == 3);
}

TEST_CASE("tuner: M bucketing tunes once per bucket") {
  TunerOptions o;
  o.m_bucketing = MBucketing::pow2;
  Fixture f(o);
  const GemmKernelEntry* a = f.select(f16_problem(100, 1024, 1024));
  CHECK(f.select(f16_problem(120, 1024, 1024)) == a);
  CHECK(f.select(f16_problem(128, 1024, 1024)) == a);
  CHECK(f.backend->begins.load() == 1);
  CHECK(f.backend->begun_problems.front() == "100,1024,1024");  // measured on the real M of the first call
  CHECK(f.select(f16_problem(129, 1024, 1024)) != nullptr);
  CHECK(f.backend->begins.load() == 2);
}

TEST_CASE("tuner: a problem no instance can run is an error, not a crash") {
  Fixture f;
  Problem p = f16_problem();
  p.desc.a_layout = Layout::col;  // no "nn"/"nt" instances in the test table
  Status st;
  CHECK(f.select(p, &st) == nullptr);
  CHECK(st.code() == StatusCode::unsupported);
  CHECK(f.backend->begins.load() == 0);
  // Empty table.
  GemmTable empty;
  Tuner t(std::make_shared<FakeBackend>(), &empty, quiet_options());
  const GemmKernelEntry* e = nullptr;
  CHECK_FALSE(t.select(f16_problem().desc, f16_problem().ops, nullptr, e).ok());
  CHECK(e == nullptr);
}

TEST_CASE("tuner: each device has its own pins and identity") {
  Fixture f;
  f.set(k128x256, 0.1);
  const Problem p = f16_problem();
  FakeBackend::tls_device = 0;
  const GemmKernelEntry* d0 = f.select(p);
  FakeBackend::tls_device = 1;
  f.backend->results.clear();
  f.set(kA1, 0.1);
  const GemmKernelEntry* d1 = f.select(p);
  FakeBackend::tls_device = 0;
  CHECK(name(d0) == name_of(k128x256));
  CHECK(name(d1) == name_of(kA1));
  CHECK(f.backend->begins.load() == 2);
  CHECK(f.select(p) == d0);
  CacheIdentity i0, i1;
  REQUIRE(f.tuner->identity(0, i0).ok());
  REQUIRE(f.tuner->identity(1, i1).ok());
  CHECK(i0.device != i1.device);
  CHECK(i0.families == i1.families);
  CHECK(f.tuner->cache_snapshot().size() == 2);
}

TEST_CASE("tuner: explicit tune() and pin()") {
  Fixture f;
  const Problem p = f16_problem(256, 256, 256);
  const GemmDesc d = resolved(p.desc);
  const GemmAlignment al = alignment_of(d, p.ops);
  TuningReport r;
  REQUIRE(f.tuner->tune(d, al, &r).ok());
  CHECK(r.source == Source::tuned);
  CHECK(r.records.size() == 8);
  CHECK(f.backend->begins.load() == 1);
  REQUIRE(f.tuner->tune(d, al, &r).ok());  // already pinned: no re-measure
  CHECK(f.backend->begins.load() == 1);
  REQUIRE(f.tuner->tune(d, al, &r, /*force=*/true).ok());
  CHECK(f.backend->begins.load() == 2);
  REQUIRE(f.tuner->pin(d, al, name_of(kA1)).ok());
  CHECK(name(f.select(p)) == name_of(kA1));
  CHECK_FALSE(f.tuner->pin(d, al, "no_such_instance").ok());
  CHECK(f.tuner->pin(d, al, name_of(cfg(M::mma_bf16, {128, 128, 32}, {64, 64}, 4, 8))).code() == StatusCode::unsupported);
  GemmDesc bad = d;
  bad.m = 0;
  CHECK(f.tuner->tune(bad, al).code() == StatusCode::invalid_argument);
}

// ---- The final round: near-ties timed again, interleaved ---------------------------------------------

namespace {

// Rank order by tile (the cost model): 64x128 first, then 128x128 a8 / a2 / a1, then 128x256 (B) and 256x128.
double rank_by_tile(const GemmKernelEntry& e, const GemmDesc&, const DeviceInfo&) {
  const auto& c = e.config;
  if (c.tile.m == 64) return 0.0;
  if (c.tile.m == 128 && c.tile.n == 128) return 1.0 + 0.1 * (8 - c.align);
  return c.tile.m == 128 ? 3.0 : 4.0;
}

// A GPU whose clock drifts down while the key is tuned: every measurement (first pass or final round)
// takes (1 + drift × calls so far) times the tactic's true time. Measured once each, in rank order, a
// truly faster tactic measured later looks slower.
struct Drift {
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  double per_call = 0.03;
  double operator()(const GemmTactic&, double ms, bool) const { return ms * (1.0 + per_call * double((*calls)++)); }
};

}  // namespace

TEST_CASE("tuner final round: drift inverts a near-tie in the first pass; interleaved re-timing picks the truly faster one") {
  // True times: A = 64x128 1.00 ms (fewest resources, rank 1), B = 128x256 0.94 ms (most resources, rank 4),
  // the other four 2.0 ms. First pass with drift 3% per call, in rank order: A at call 0 = 1.00, B at call 3
  // = 0.94 x 1.09 = 1.0246, 2.5% behind A: outside the 2% tie band (the first pass picks A), inside the 5%
  // final band. Interleaved, A then B in each round, B's drift handicap is one call: B/A <= 0.94 x 1.21/1.18.
  const GemmConfig A = k64x128, B = k128x256;
  auto cost = [](const GemmKernelEntry& e, const GemmDesc& d, const DeviceInfo& dev) {
    if (e.config.tile.m == 128 && e.config.tile.n == 256) return 1.65;  // between 128x128 a2 (1.6) and a1 (1.7)
    return rank_by_tile(e, d, dev);
  };
  auto script = [&](Fixture& f) {
    f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
    f.set(A, 1.00);
    f.set(B, 0.94);
    f.backend->timing = Drift{};
  };
  const long long res_a = 1LL * make_entry(A).resources.threads * make_entry(A).resources.smem_bytes;
  const long long res_b = 1LL * make_entry(B).resources.threads * make_entry(B).resources.smem_bytes;
  REQUIRE(res_a < res_b);  // the tie rule cannot be what picks B

  // Without a final round the first pass decides: A.
  TunerOptions off;
  off.cost_model = cost;
  off.final_rounds = 0;
  Fixture g(off);
  script(g);
  CHECK(name(g.select(f16_problem())) == name_of(A));
  CHECK(g.backend->final_measures.load() == 0);
  CHECK(g.last_report().final_round.empty());

  // With it (defaults: 5% band, at most 4, 10 rounds): B.
  TunerOptions on;
  on.cost_model = cost;
  Fixture f(on);
  script(f);
  CHECK(name(f.select(f16_problem())) == name_of(B));
  CHECK(f.backend->measures.load() == 6);         // the first pass: every candidate once
  CHECK(f.backend->final_measures.load() == 20);  // 10 rounds x 2 finalists
  std::vector<std::string> order;
  {
    std::lock_guard lock(f.backend->log_mu);
    order = f.backend->final_measured;
  }
  REQUIRE(order.size() == 20);
  for (std::size_t i = 0; i < order.size(); ++i) CHECK(order[i] == (i % 2 == 0 ? name_of(A) : name_of(B)));  // A B A B ...

  // (iv) The report: the final round's medians in ms, the first pass's kept; what the round did.
  const TuningReport r = f.last_report();
  CHECK(r.winner == name_of(B));
  CHECK(r.final_round.find("2 within 5% of the fastest, 10 interleaved rounds") != std::string::npos);
  CHECK(summary_line(r).find("final round: 2 within 5%") != std::string::npos);
  int finalists = 0;
  for (const TacticRecord& t : r.records) {
    if (t.final_rounds == 0) {
      CHECK(std::isnan(t.first_pass_ms));
      continue;
    }
    ++finalists;
    CHECK(t.final_rounds == 10);
    CHECK(t.detail.find("final round: median") != std::string::npos);
    CHECK(t.detail.find("over 10 interleaved rounds (first pass") != std::string::npos);
    if (t.name == name_of(A)) {
      CHECK(t.status == TacticStatus::measured);
      CHECK(t.first_pass_ms == doctest::Approx(1.00));
    } else {
      CHECK(t.status == TacticStatus::selected);
      CHECK(t.first_pass_ms == doctest::Approx(0.94 * 1.09));
      CHECK(t.detail.find("final round overturned the first pass's pick " + name_of(A)) != std::string::npos);
      CHECK(t.ms == doctest::Approx(r.winner_ms));
    }
  }
  CHECK(finalists == 2);
  CHECK(r.records.front().name == name_of(B));
  CHECK(r.records[1].name == name_of(A));  // sorted by the final round's medians
  CHECK(r.records[1].ms > r.records.front().ms * 1.02);
  bool line = false;
  for (const auto& l : tactic_lines(r)) line |= l.find("final round: median") != std::string::npos;
  CHECK(line);
  // The cache gets the final round's time.
  const auto snap = f.tuner->cache_snapshot();
  REQUIRE(snap.size() == 1);
  CHECK(snap.entries().front()->ms == doctest::Approx(r.winner_ms));
}

TEST_CASE("tuner final round: at most final_max contenders within final_band; none when only one qualifies") {
  TunerOptions o;
  o.cost_model = rank_by_tile;
  o.final_max = 3;
  o.final_rounds = 4;
  Fixture f(o);
  // Within 5% of 1.00: 64x128, 128x128 a8 / a2 / a1 (four); 128x256 at 1.06 is not. Only 64x128 within 2%.
  f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{1.06}; };
  f.set(k64x128, 1.00);
  f.set(k128x128, 1.025);
  f.set(kA2, 1.03);
  f.set(kA1, 1.04);
  CHECK(name(f.select(f16_problem())) == name_of(k64x128));
  CHECK(f.backend->final_measures.load() == 12);  // the fastest 3 x 4 rounds
  std::set<std::string> timed;
  {
    std::lock_guard lock(f.backend->log_mu);
    timed.insert(f.backend->final_measured.begin(), f.backend->final_measured.end());
  }
  CHECK(timed == std::set<std::string>{name_of(k64x128), name_of(k128x128), name_of(kA2)});
  CHECK(f.last_report().final_round.find("3 within 5% of the fastest, 4 interleaved rounds") != std::string::npos);
  // The first pass's pick is always a finalist: here the near-tie rule's (fewest resources: 128x128 s3 a1,
  // 3rd fastest), with final_max 2 it is timed against the fastest (128x128 s4 a8), and picked again.
  TunerOptions two;
  two.cost_model = rank_by_tile;
  two.final_max = 2;
  two.final_rounds = 4;
  Fixture h(two);
  h.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
  h.set(k128x128, 1.000);
  h.set(k128x256, 1.005);
  h.set(kA1, 1.015);
  REQUIRE(1LL * make_entry(kA1).resources.threads * make_entry(kA1).resources.smem_bytes <
          1LL * make_entry(k128x128).resources.threads * make_entry(k128x128).resources.smem_bytes);
  CHECK(name(h.select(f16_problem())) == name_of(kA1));
  {
    std::lock_guard lock(h.backend->log_mu);
    CHECK(std::set<std::string>(h.backend->final_measured.begin(), h.backend->final_measured.end()) ==
          std::set<std::string>{name_of(kA1), name_of(k128x128)});
    REQUIRE(h.backend->final_measured.size() == 8);
    CHECK(h.backend->final_measured[0] == name_of(k128x128));  // in first-pass time order
  }
  // A clear winner: no final round.
  TunerOptions c;
  c.cost_model = rank_by_tile;
  Fixture g(c);
  g.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
  g.set(k128x128, 1.0);
  CHECK(name(g.select(f16_problem())) == name_of(k128x128));
  CHECK(g.backend->final_measures.load() == 0);
  CHECK(g.last_report().final_round.empty());
}

TEST_CASE("tuner final round: a finalist that fails to run in it is out; the near-tie rule applies to the final medians") {
  TunerOptions o;
  o.cost_model = rank_by_tile;
  Fixture f(o);
  f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
  f.set(k64x128, 1.00);
  f.backend->results[name_of(k64x128)].final_fails = true;
  f.set(k128x128, 1.03);
  f.set(k128x256, 1.04);
  // In the final round 128x256 measures 1.02 and 128x128 1.03: a near-tie, fewer resources (128x128) win.
  f.backend->timing = [](const GemmTactic& t, double ms, bool final_round) {
    return final_round && t.entry->config.tile.n == 256 ? 1.02 : ms;
  };
  CHECK(name(f.select(f16_problem())) == name_of(k128x128));
  const TuningReport r = f.last_report();
  for (const TacticRecord& t : r.records) {
    if (t.name == name_of(k64x128)) {
      CHECK(t.status == TacticStatus::failed_launch);
      CHECK(t.detail.find("final round 1: fake run failure") != std::string::npos);
    }
    if (t.name == name_of(k128x128)) {
      CHECK(t.status == TacticStatus::selected);
      CHECK(t.detail.find("near-tie") != std::string::npos);
    }
  }
  CHECK(r.final_round.find("1 failed") != std::string::npos);
  CHECK(f.backend->final_measures.load() == 1 + 2 * 10);  // 64x128 once, then 10 rounds of the other two
}

TEST_CASE("tuner final round: respects the key budget (skipped when spent, cut short when it runs out)") {
  // Spent: six candidates of 10 ms each in a 60 ms budget leave nothing for the final round.
  {
    TunerOptions o;
    o.cost_model = rank_by_tile;
    o.max_ms_per_key = 60;
    Fixture f(o);
    f.backend->measure_sleep_ms = 10;
    f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{1.0}; };  // all tied
    CHECK(f.select(f16_problem()) != nullptr);
    const TuningReport r = f.last_report();
    CHECK(f.backend->final_measures.load() == 0);
    CHECK(r.final_round.find("skipped") != std::string::npos);
    CHECK(r.final_round.find("key budget spent") != std::string::npos);
    CHECK(r.final_round.find("the first pass decides") != std::string::npos);
    for (const TacticRecord& t : r.records) CHECK(t.final_rounds == 0);
    MESSAGE(summary_line(r));
  }
  // Cut short: rounds of 2 x 5 ms, up to 1000 of them, in a 150 ms budget.
  {
    TunerOptions o;
    o.cost_model = rank_by_tile;
    o.max_ms_per_key = 150;
    o.final_rounds = 1000;
    Fixture f(o);
    f.backend->measure_sleep_ms = 5;
    f.backend->fallback = [](const GemmKernelEntry&, const GemmDesc&) { return FakeResult{2.0}; };
    f.set(k64x128, 1.00);
    f.set(k128x256, 1.01);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(f.select(f16_problem()) != nullptr);
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const TuningReport r = f.last_report();
    const int finals = f.backend->final_measures.load();
    CHECK(finals % 2 == 0);
    CHECK(finals < 2 * 1000);
    CHECK(r.final_round.find("of 1000 interleaved rounds (cut short by the key budget)") != std::string::npos);
    // At most about one round (10 ms) past the budget (plus the scheduler's slack on a loaded machine).
    CHECK(wall < 150 + 60);
    MESSAGE(summary_line(r) << "; wall " << wall << " ms");
    for (const TacticRecord& t : r.records)
      if (t.final_rounds > 0) CHECK(t.final_rounds == finals / 2);
  }
}
