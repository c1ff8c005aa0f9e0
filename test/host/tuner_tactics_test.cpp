// Tactics = (instance, launch options): names, parsing, which variants are offered, how the cost
// model ranks them, the cache round trip with launch options, and the tuner choosing, pruning,
// breaking ties and persisting per tactic (scripted backend, no GPU).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"
#include "tuner_fake.hpp"

using namespace ktune_test;
using M = MathOp;

namespace {

GemmLaunchOptions split(int s, SplitKMode m = SplitKMode::serial) {
  GemmLaunchOptions o;
  o.split_k = s;
  o.split_mode = m;
  return o;
}
GemmLaunchOptions cluster2() {
  GemmLaunchOptions o;
  o.cluster = 2;
  return o;
}

std::size_t fake_workspace(const GemmDesc& d, const GemmLaunchOptions& o) {
  return split_k_layout(d.m, d.n, 128, 128, o.split_k, o.split_mode).total_bytes;
}

// The fake table's f16 instances, with split-K support (a workspace function) on the 128x128 one.
std::vector<GemmKernelEntry> split_capable_entries() {
  std::vector<GemmKernelEntry> out;
  for (const GemmConfig& c : default_configs()) {
    GemmKernelEntry e = make_entry(c);
    if (c.math == M::mma_f16 && c.tile.m == 128 && c.tile.n == 128 && c.align == 8) e.workspace_size = &fake_workspace;
    out.push_back(e);
  }
  return out;
}

GemmKernelEntry wgmma_entry() {
  GemmConfig c = cfg(M::wgmma_f16, {128, 256, 64}, {64, 256}, 4, 8);
  c.arch_cc = 90;
  GemmKernelEntry e;
  e.name = intern("fake_wgmma_f16_tn_128x256x64");
  e.family = "test_family";
  e.config = c;
  e.resources = estimate_resources(c);
  return e;
}

DeviceInfo fake_device(int cc = 90) {
  DeviceInfo d;
  d.name = "Fake";
  d.cc = cc;
  d.sm_count = 132;
  d.l2_bytes = 60 << 20;
  d.smem_optin_bytes = 227 * 1024;
  return d;
}

struct SplitFixture {
  GemmTable table;
  std::shared_ptr<FakeBackend> backend = std::make_shared<FakeBackend>();
  Capture cap;
  std::unique_ptr<Tuner> tuner;
  explicit SplitFixture(TunerOptions o = quiet_options()) {
    for (const auto& e : split_capable_entries()) table.add(e);
    TunerOptions q = quiet_options(&cap);
    q.max_candidates = o.max_candidates;
    q.launch_variants = o.launch_variants;
    q.cache_path = o.cache_path;
    q.tie_band = o.tie_band;
    tuner = std::make_unique<Tuner>(backend, &table, q);
  }
  const GemmTactic* select(const Problem& p) {
    const GemmTactic* t = nullptr;
    const Status s = tuner->select(p.desc, p.ops, nullptr, t);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    return t;
  }
  TuningReport last_report() {
    std::lock_guard lock(cap.mu);
    REQUIRE(!cap.reports.empty());
    return cap.reports.back();
  }
};

const std::string k128 = name_of(cfg(M::mma_f16, {128, 128, 32}, {64, 64}, 4, 8));

bool is_nopdl(const std::string& n) { return n.size() > 6 && n.compare(n.size() - 6, 6, "@nopdl") == 0; }

// A decode-like problem: 8 output tiles of 128x128, a long K (split-K variants are offered).
Problem decode() { return f16_problem(16, 1024, 8192); }

// The split-K tactics the 128x128 instance offers on decode(), in launch_variants order (without their
// PDL twins: the PDL test cases below check those).
std::vector<std::string> decode_split_tactics() {
  std::vector<std::string> out;
  for (const auto& e : split_capable_entries())
    if (e.workspace_size != nullptr)
      for (const auto& o : launch_variants(e, resolved(decode().desc), fake_device()))
        if (o.split_k > 1 && o.pdl == PdlChoice::rule) out.push_back(tactic_name(e.name, o));
  return out;
}

}  // namespace

TEST_CASE("tactics: names are the instance name plus one @knob per non-default option, in a fixed order") {
  CHECK(tactic_name("inst", GemmLaunchOptions{}) == "inst");
  CHECK(tactic_name("inst", split(4)) == "inst@split4s");
  CHECK(tactic_name("inst", split(8, SplitKMode::parallel)) == "inst@split8p");
  CHECK(tactic_name("inst", cluster2()) == "inst@cl2");
  GemmLaunchOptions all = split(16, SplitKMode::parallel);
  all.cluster = 2;
  all.raster_group = 16;
  all.max_ctas = 66;
  CHECK(tactic_name("inst", all) == "inst@split16p@cl2@rg16@ctas66");
  // The split mode does not matter (nor appear) without a split.
  GemmLaunchOptions par1;
  par1.split_mode = SplitKMode::parallel;
  CHECK(tactic_name("inst", par1) == "inst");
  CHECK(same_launch(par1, GemmLaunchOptions{}));
  CHECK(is_default_launch(par1));
  CHECK_FALSE(same_launch(split(4), split(4, SplitKMode::parallel)));

  std::string_view inst, suffix;
  split_tactic_name("a_b@split4s@cl2", inst, suffix);
  CHECK(inst == "a_b");
  CHECK(suffix == "split4s@cl2");
  split_tactic_name("a_b", inst, suffix);
  CHECK(inst == "a_b");
  CHECK(suffix.empty());
}

TEST_CASE("tactics: launch options parse back from their names, and only from the canonical spelling") {
  GemmLaunchOptions all = split(16, SplitKMode::parallel);
  all.cluster = 2;
  all.raster_group = 16;
  all.max_ctas = 66;
  for (const GemmLaunchOptions& o : {GemmLaunchOptions{}, split(2), split(64, SplitKMode::parallel), cluster2(), all}) {
    const std::string s = launch_suffix(o);
    CAPTURE(s);
    GemmLaunchOptions back;
    back.split_k = 7;  // overwritten
    std::string why;
    REQUIRE_MESSAGE(parse_launch_suffix(s, back, why), why);
    CHECK(same_launch(back, o));
    CHECK(launch_suffix(back) == s);
  }
  for (const char* bad : {"split1s", "split257s", "split4", "split4x", "split04s", "cl3", "cl0", "rg0", "ctas0", "cl2@split4s",
                          "split4s@", "@cl2", "turbo", "split-4s", "rg8", "cl2@cl2", "split4s@split8s"}) {
    CAPTURE(bad);
    GemmLaunchOptions o;
    std::string why;
    CHECK_FALSE(parse_launch_suffix(bad, o, why));
    CHECK_FALSE(why.empty());
    CHECK(is_default_launch(o));  // untouched on failure
  }
}

TEST_CASE("tactics: launch_variants offers default options first, split-K only where tiles are few, clusters only on sm90") {
  const auto entries = split_capable_entries();
  const GemmKernelEntry* split_ok = nullptr;
  const GemmKernelEntry* no_split = nullptr;
  for (const auto& e : entries) {
    if (e.workspace_size != nullptr) split_ok = &e;
    else if (e.config.math == M::mma_f16 && no_split == nullptr) no_split = &e;
  }
  REQUIRE(split_ok != nullptr);
  REQUIRE(no_split != nullptr);
  const DeviceInfo dev = fake_device();
  const GemmDesc small = resolved(decode().desc);
  const GemmDesc big = resolved(f16_problem(8192, 8192, 8192).desc);

  const auto v = launch_variants(*split_ok, small, dev);
  REQUIRE(v.size() >= 3);
  CHECK(is_default_launch(v.front()));
  std::set<std::string> names;
  for (const auto& o : v) {
    CHECK(names.insert(launch_suffix(o)).second);  // no duplicates
    CHECK(check_launch_options(*split_ok, o).ok());
    CHECK(is_launch_variant(*split_ok, o, small, dev));
  }
  CHECK(std::any_of(v.begin(), v.end(), [](const GemmLaunchOptions& o) { return o.split_k > 1 && o.split_mode == SplitKMode::serial; }));
  CHECK(std::any_of(v.begin(), v.end(), [](const GemmLaunchOptions& o) { return o.split_k > 1 && o.split_mode == SplitKMode::parallel; }));
  // An instance without a workspace function gets no split; a problem with many tiles gets no split.
  for (const auto& o : launch_variants(*no_split, small, dev)) CHECK(o.split_k == 1);
  for (const auto& o : launch_variants(*split_ok, big, dev)) CHECK(o.split_k == 1);
  CHECK_FALSE(is_launch_variant(*split_ok, split(4), big, dev));

  // sm90 instances: cluster 2 on an sm90 device when there are two tiles to pair.
  const GemmKernelEntry wg = wgmma_entry();
  const auto w = launch_variants(wg, big, dev);
  CHECK(std::any_of(w.begin(), w.end(), [](const GemmLaunchOptions& o) { return o.cluster == 2; }));
  for (const auto& o : launch_variants(wg, big, fake_device(80))) CHECK(o.cluster != 2);
  for (const auto& o : launch_variants(wg, resolved(f16_problem(64, 64, 64).desc), dev)) CHECK(o.cluster != 2);
  for (const auto& o : launch_variants(*split_ok, big, dev)) CHECK(o.cluster != 2);  // sm80 kernels ignore it
  // Raster groups only for grids of many waves of many tile rows.
  CHECK(std::any_of(w.begin(), w.end(), [](const GemmLaunchOptions& o) { return o.raster_group != 8; }));
  for (const auto& o : launch_variants(*split_ok, small, dev)) CHECK(o.raster_group == 8);
}

TEST_CASE("tactics: the cost model prefers split-K where tiles are few and K is long, and never elsewhere") {
  const auto entries = split_capable_entries();
  const GemmKernelEntry* e = nullptr;
  for (const auto& x : entries)
    if (x.workspace_size != nullptr) e = &x;
  REQUIRE(e != nullptr);
  const DeviceInfo dev = fake_device();
  CHECK(tactic_cost_factor(*e, GemmLaunchOptions{}, resolved(decode().desc), dev) == 1.0);
  CHECK(tactic_cost_factor(*e, split(4), resolved(decode().desc), dev) < 0.5);
  CHECK(tactic_cost_factor(*e, split(4, SplitKMode::parallel), resolved(decode().desc), dev) >
        tactic_cost_factor(*e, split(4), resolved(decode().desc), dev));
  CHECK(tactic_cost_factor(*e, split(4), resolved(f16_problem(8192, 8192, 8192).desc), dev) > 1.0);
  // Knobs the model cannot see rank just behind the default.
  const double c2 = tactic_cost_factor(wgmma_entry(), cluster2(), resolved(f16_problem(4096, 4096, 4096).desc), dev);
  CHECK(c2 > 1.0);
  CHECK(c2 < 1.01);
}

TEST_CASE("tactics: a cache entry keeps its launch options through the line and file round trip") {
  CacheEntry e;
  const Problem p = decode();
  e.key = make_key(p.desc, alignment_of(p.desc, p.ops));
  e.id = CacheIdentity{"dev", std::string(ktune_version), "0123456789abcdef"};
  e.instance = k128;
  e.launch = "split4s";
  e.ms = 0.01;
  e.tflops = 1.0;
  CHECK(e.tactic() == k128 + "@split4s");
  const std::string line = to_line(e);
  CHECK(line.find("\"launch\":\"split4s\"") != std::string::npos);
  CacheEntry back;
  std::string why;
  REQUIRE_MESSAGE(parse_entry_line(line, back, why), why);
  CHECK(back.launch == "split4s");
  CHECK(to_line(back) == line);
  // Default options: no "launch" member at all (a version 1 reader would read the same line).
  e.launch.clear();
  CHECK(to_line(e).find("launch") == std::string::npos);
  REQUIRE(parse_entry_line(to_line(e), back, why));
  CHECK(back.launch.empty());
  // Same time: the merge order is total, also over launch options.
  CacheEntry a = e, b = e;
  b.launch = "split2s";
  CHECK(a.better_than(b) != b.better_than(a));
  CHECK(header_line().find("\"version\":3") != std::string::npos);  // 3: conv2d lines (tuner_conv_test.cpp)

  TempDir dir;
  CacheStore s;
  e.launch = "split8p";
  s.insert(e);
  std::vector<std::string> w;
  REQUIRE(save_cache_file(dir.file("c.ktune"), s, w).ok());
  CacheStore loaded;
  REQUIRE(load_cache_file(dir.file("c.ktune"), loaded, w).ok());
  REQUIRE(loaded.size() == 1);
  CHECK(loaded.entries().front()->launch == "split8p");
}

TEST_CASE("tuner tactics: a faster split-K variant wins, is launched with its options, and is cached and reapplied") {
  TempDir dir;
  TunerOptions o = quiet_options();
  o.cache_path = dir.file("t.ktune");
  SplitFixture f(o);
  // Default timings: ~1.2 ms; the second split-K variant (serial) of the 128x128 instance is the fastest.
  const std::vector<std::string> splits = decode_split_tactics();
  REQUIRE(splits.size() >= 3);
  const std::string want = splits[1];
  GemmLaunchOptions want_lo;
  std::string why;
  REQUIRE(parse_launch_suffix(want.substr(want.find('@') + 1), want_lo, why));
  f.backend->results[want].ms = 0.3;
  const Problem p = decode();
  const GemmTactic* t = f.select(p);
  REQUIRE(t != nullptr);
  CHECK(t->name == want);
  CHECK(t->entry->name == k128);
  CHECK(t->launch.split_k == want_lo.split_k);
  CHECK(t->launch.split_k > 1);
  CHECK(t->launch.split_mode == SplitKMode::serial);
  const TuningReport r = f.last_report();
  CHECK(r.winner == want);
  CHECK(r.winner_ms == 0.3);
  // Every tactic has a record, variants included; the measured ones are tactics, not just instances.
  std::set<std::string> recorded;
  for (const auto& rec : r.records) recorded.insert(rec.name);
  CHECK(recorded.count(k128) == 1);
  for (const auto& s : splits) CHECK(recorded.count(s) == 1);
  CHECK(std::any_of(recorded.begin(), recorded.end(), [](const std::string& n) { return n.find("p") != std::string::npos && n.find("@split") != std::string::npos; }));
  // The instance-only overload and lookup agree; the pointer is stable.
  const GemmKernelEntry* e = nullptr;
  REQUIRE(f.tuner->select(p.desc, p.ops, nullptr, e).ok());
  CHECK(e == t->entry);
  CHECK(f.tuner->lookup_tactic(p.desc, p.ops) == t);
  CHECK(f.tuner->lookup(p.desc, p.ops) == t->entry);
  CHECK(f.select(p) == t);
  // Persisted with its launch options...
  const std::string text = read_text(o.cache_path);
  CHECK(text.find("\"launch\":\"" + launch_suffix(want_lo) + "\"") != std::string::npos);
  // ... and another tuner reads it back without measuring.
  SplitFixture g(o);
  const GemmTactic* again = g.select(p);
  CHECK(again->name == want);
  CHECK(g.last_report().source == Source::cache);
  CHECK(g.backend->measures.load() == 0);
  // reset() forgets the key, not the tactic the caller holds.
  f.tuner->reset();
  CHECK(t->name == want);
}

TEST_CASE("tuner tactics: a cached tactic whose launch options this build does not offer is ignored and re-tuned") {
  TempDir dir;
  TunerOptions o = quiet_options();
  o.cache_path = dir.file("t.ktune");
  const Problem big = f16_problem(4096, 4096, 4096);
  {
    SplitFixture f(o);
    // Pin (any accepted options) and persist by hand: split-K on a problem with many tiles is no variant.
    REQUIRE(f.tuner->pin(big.desc, alignment_of(big.desc, big.ops), k128 + "@split4s").ok());
    CacheIdentity id;
    REQUIRE(f.tuner->identity(0, id).ok());
    CacheStore s;
    CacheEntry e;
    e.key = make_key(resolved(big.desc), alignment_of(big.desc, big.ops));
    e.id = id;
    e.instance = k128;
    e.launch = "split4s";
    e.ms = 0.001;
    s.insert(e);
    std::vector<std::string> w;
    REQUIRE(save_cache_file(o.cache_path, s, w).ok());
    CHECK(f.tuner->lookup_tactic(big.desc, big.ops)->name == k128 + "@split4s");  // pinned as asked
  }
  SplitFixture g(o);
  const GemmTactic* t = g.select(big);
  CHECK(t->launch.split_k == 1);
  CHECK(g.last_report().source == Source::tuned);
  bool warned = false;
  for (const auto& l : g.cap.logs) warned |= l.find("does not offer") != std::string::npos;
  CHECK(warned);
  // Pinning options the instance does not accept is an error.
  CHECK_FALSE(g.tuner->pin(big.desc, alignment_of(big.desc, big.ops), name_of(cfg(M::mma_f16, {64, 128, 32}, {32, 64}, 4, 8)) + "@split4s").ok());
  CHECK_FALSE(g.tuner->pin(big.desc, alignment_of(big.desc, big.ops), k128 + "@split4q").ok());
}

TEST_CASE("tuner tactics: top-k pruning counts tactics, ranked by the cost model with variants") {
  TunerOptions o = quiet_options();
  o.max_candidates = 3;
  SplitFixture f(o);
  const Problem p = decode();
  (void)f.select(p);
  const TuningReport r = f.last_report();
  // 3 distinct tactics, each with its @nopdl twin (decode() is programmatic by the rule; the twin takes no
  // slot) unless KTUNE_SM80_PDL is set (no twins).
  const bool twins = kernel::sm80_pdl_mode() == kernel::PdlMode::small_only;
  CHECK(f.backend->measures.load() == (twins ? 6 : 3));
  CHECK(r.count(TacticStatus::pruned_by_model) >= 3);
  // The cost model puts a split-K variant of the only split-capable instance first on a decode shape;
  // then come the other instances' best tactics, before that instance's further variants.
  std::vector<std::string> measured;
  {
    std::lock_guard lock(f.backend->log_mu);
    measured = f.backend->measured;
  }
  REQUIRE(measured.size() == (twins ? 6u : 3u));
  std::vector<std::string> distinct;
  for (const auto& n : measured)
    if (!is_nopdl(n)) distinct.push_back(n);
  REQUIRE(distinct.size() == 3);
  CHECK(distinct[0].rfind(k128 + "@split", 0) == 0);
  std::set<std::string> instances;
  for (const auto& n : distinct) instances.insert(n.substr(0, n.find('@')));
  CHECK(instances.size() == 3);
  for (const auto& n : measured)
    if (is_nopdl(n)) CHECK(std::find(distinct.begin(), distinct.end(), n.substr(0, n.size() - 6)) != distinct.end());
  // With room for every tactic, all of them are measured, each exactly once.
  TunerOptions all = quiet_options();
  all.max_candidates = 0;
  SplitFixture h(all);
  (void)h.select(p);
  std::vector<std::string> every;
  {
    std::lock_guard lock(h.backend->log_mu);
    every = h.backend->measured;
  }
  CHECK(std::set<std::string>(every.begin(), every.end()).size() == every.size());
  CHECK(h.last_report().count(TacticStatus::pruned_by_model) == 0);
  for (const auto& sname : decode_split_tactics()) CHECK(std::find(every.begin(), every.end(), sname) != every.end());
  // Ranks are per tactic and unique.
  std::set<int> ranks;
  for (const auto& rec : r.records)
    if (rec.rank > 0) CHECK(ranks.insert(rec.rank).second);
  // Without variants: instances only.
  TunerOptions plain = quiet_options();
  plain.launch_variants = false;
  SplitFixture g(plain);
  const GemmTactic* t = g.select(p);
  CHECK(is_default_launch(t->launch));
  for (const auto& rec : g.last_report().records) CHECK(rec.name.find('@') == std::string::npos);
}

TEST_CASE("tuner tactics: near-ties between an instance's options go to its default options, deterministically") {
  for (int run = 0; run < 20; ++run) {
    SplitFixture f;
    // Every tactic of the split-capable instance 0.5 ms (split variants within 1% of it), others slower.
    f.backend->tactic_fallback = [run](const GemmTactic& t, const GemmDesc&) {
      FakeResult r;
      r.ms = t.entry->name == k128 ? 0.5 * (1.0 - 0.001 * ((run + t.name.size()) % 7)) : 2.0;
      return r;
    };
    const GemmTactic* t = f.select(decode());
    CHECK(t->name == k128);
  }
  // A variant outside the band wins.
  SplitFixture g;
  g.backend->tactic_fallback = [](const GemmTactic& t, const GemmDesc&) {
    FakeResult r;
    r.ms = t.name == decode_split_tactics().back() ? 0.4 : (t.entry->name == k128 ? 0.5 : 2.0);
    return r;
  };
  CHECK(g.select(decode())->name == decode_split_tactics().back());
}

TEST_CASE("tuner tactics: heuristic and capture decisions use default options (no workspace needed)") {
  SplitFixture f;
  f.backend->capturing = true;
  const GemmTactic* t = f.select(decode());
  CHECK(is_default_launch(t->launch));
  CHECK(f.last_report().source == Source::deferred);
  f.backend->capturing = false;
  f.backend->results[decode_split_tactics().front()].ms = 0.1;
  std::size_t n = 0;
  REQUIRE(f.tuner->tune_pending(&n).ok());
  CHECK(n == 1);
  CHECK(f.select(decode())->name == decode_split_tactics().front());

  TunerOptions h = quiet_options();
  SplitFixture g(h);
  TunerOptions ho = g.tuner->options();
  ho.policy = Policy::heuristic;
  g.tuner->set_options(ho);
  CHECK(is_default_launch(g.select(decode())->launch));
  CHECK(g.backend->measures.load() == 0);
}

namespace {

GemmLaunchOptions with_pdl(PdlChoice c, GemmLaunchOptions o = {}) {
  o.pdl = c;
  return o;
}

}  // namespace

TEST_CASE("tactics: the PDL choice is a launch option named last (@pdl / @nopdl), parsed back and compared") {
  GemmLaunchOptions all = split(16, SplitKMode::parallel);
  all.cluster = 2;
  all.raster_group = 16;
  all.max_ctas = 66;
  GemmLaunchOptions sk;
  sk.stream_k = true;
  GemmLaunchOptions c8 = split(64, SplitKMode::cluster);
  c8.split_cluster = 8;
  CHECK(tactic_name("inst", with_pdl(PdlChoice::on)) == "inst@pdl");
  CHECK(tactic_name("inst", with_pdl(PdlChoice::off)) == "inst@nopdl");
  CHECK(tactic_name("inst", with_pdl(PdlChoice::rule)) == "inst");
  CHECK(tactic_name("inst", with_pdl(PdlChoice::off, all)) == "inst@split16p@cl2@rg16@ctas66@nopdl");
  CHECK(tactic_name("inst", with_pdl(PdlChoice::on, c8)) == "inst@split64c8@pdl");
  CHECK(tactic_name("inst", with_pdl(PdlChoice::off, sk)) == "inst@sk@nopdl");
  for (const GemmLaunchOptions& o : {with_pdl(PdlChoice::on), with_pdl(PdlChoice::off), with_pdl(PdlChoice::on, split(4)),
                                     with_pdl(PdlChoice::off, split(8, SplitKMode::parallel)), with_pdl(PdlChoice::on, c8),
                                     with_pdl(PdlChoice::off, sk), with_pdl(PdlChoice::on, cluster2()), with_pdl(PdlChoice::off, all)}) {
    const std::string name = tactic_name(k128, o);
    CAPTURE(name);
    std::string_view inst, suffix;
    split_tactic_name(name, inst, suffix);
    CHECK(inst == k128);
    GemmLaunchOptions back;
    std::string why;
    REQUIRE_MESSAGE(parse_launch_suffix(suffix, back, why), why);
    CHECK(back.pdl == o.pdl);
    CHECK(same_launch(back, o));
    CHECK(tactic_name(inst, back) == name);
    CHECK_FALSE(is_default_launch(back));
  }
  // Canonical spellings only: last, once, lower case.
  for (const char* bad : {"pdl@split4s", "nopdl@cl2", "pdl@pdl", "pdl@nopdl", "nopdl@pdl", "nopdl@nopdl", "pdl1", "PDL", "no_pdl",
                          "nopdl@", "split4s@nopdl@rg16", "pdl@sk"}) {
    CAPTURE(bad);
    GemmLaunchOptions o;
    std::string why;
    CHECK_FALSE(parse_launch_suffix(bad, o, why));
    CHECK_FALSE(why.empty());
    CHECK(is_default_launch(o));
  }
  // same_launch: rule, on and off are three launches (the rule's outcome depends on the environment);
  // the split mode without a split still does not matter.
  CHECK_FALSE(same_launch(with_pdl(PdlChoice::on), GemmLaunchOptions{}));
  CHECK_FALSE(same_launch(with_pdl(PdlChoice::off), GemmLaunchOptions{}));
  CHECK_FALSE(same_launch(with_pdl(PdlChoice::on), with_pdl(PdlChoice::off)));
  CHECK_FALSE(same_launch(with_pdl(PdlChoice::on, split(4)), split(4)));
  CHECK(same_launch(with_pdl(PdlChoice::on, split(4)), with_pdl(PdlChoice::on, split(4))));
  GemmLaunchOptions par1 = with_pdl(PdlChoice::off);
  par1.split_mode = SplitKMode::parallel;
  CHECK(same_launch(par1, with_pdl(PdlChoice::off)));
  // Every entry accepts it (ignored where PDL is impossible), also together with its other options.
  const GemmKernelEntry wg = wgmma_entry();
  for (PdlChoice c : {PdlChoice::on, PdlChoice::off}) {
    for (const auto& e : split_capable_entries()) {
      CHECK(check_launch_options(e, with_pdl(c)).ok());
      if (e.workspace_size != nullptr) CHECK(check_launch_options(e, with_pdl(c, split(4))).ok());
    }
    CHECK(check_launch_options(wg, with_pdl(c, cluster2())).ok());
  }
}

TEST_CASE("tactics: launch_variants adds each sm80 variant's PDL twin on sm90 devices, for problems up to 2^35, right behind it") {
  const auto entries = split_capable_entries();
  const GemmKernelEntry* split_ok = nullptr;
  for (const auto& e : entries)
    if (e.workspace_size != nullptr) split_ok = &e;
  REQUIRE(split_ok != nullptr);
  const GemmKernelEntry wg = wgmma_entry();
  GemmKernelEntry route = *split_ok;  // a route entry (operands prepared, then an instance): no twins
  route.implements = [](const GemmDesc&, const GemmAlignment&, const DeviceInfo*) { return Status{}; };
  const DeviceInfo dev = fake_device(), ampere = fake_device(80);
  const GemmDesc small = resolved(decode().desc);                     // 2^27: programmatic by the rule
  const GemmDesc mid = resolved(f16_problem(4096, 4096, 1024).desc);  // 2^34: plain by the rule
  const GemmDesc big = resolved(f16_problem(8192, 8192, 8192).desc);  // 2^39: PDL does not matter
  const bool rule = kernel::sm80_pdl_mode() == kernel::PdlMode::small_only && kernel::sm90_pdl_mode() == kernel::PdlMode::small_only;
  if (!rule) MESSAGE("KTUNE_SM80_PDL or KTUNE_SM90_PDL is set: no PDL twins are offered");

  // The variants without PDL choice: those launch_variants offers where PDL is impossible (sm80 device)
  // or does not matter; on sm90 each is followed by its twin.
  auto check_twins = [&](const GemmKernelEntry& e, const GemmDesc& d, PdlChoice want) {
    CAPTURE(e.name);
    const auto v = launch_variants(e, d, dev);
    std::vector<GemmLaunchOptions> plain;
    for (const GemmLaunchOptions& o : v)
      if (o.pdl == PdlChoice::rule) plain.push_back(o);
    REQUIRE(v.size() == 2 * plain.size());
    CHECK(is_default_launch(v.front()));
    for (std::size_t i = 0; i < plain.size(); ++i) {
      const GemmLaunchOptions& o = v[2 * i];
      const GemmLaunchOptions& t = v[2 * i + 1];
      CAPTURE(tactic_name(e.name, t));
      CHECK(same_launch(o, plain[i]));
      CHECK(t.pdl == want);
      CHECK(same_launch(t, with_pdl(want, o)));
      CHECK(check_launch_options(e, t).ok());
      CHECK(is_launch_variant(e, t, d, dev));
      CHECK_FALSE(is_launch_variant(e, t, d, ampere));
      CHECK_FALSE(is_launch_variant(e, with_pdl(want == PdlChoice::on ? PdlChoice::off : PdlChoice::on, o), d, dev));
      // Ranked right behind its variant, so an instance's first tactic stays first.
      const double fo = tactic_cost_factor(e, o, d, dev), ft = tactic_cost_factor(e, t, d, dev);
      CHECK(ft == doctest::Approx(fo * 1.0005).epsilon(1e-12));
      CHECK(ft > fo);
    }
    const auto a = launch_variants(e, d, ampere);
    for (const GemmLaunchOptions& o : a) CHECK(o.pdl == PdlChoice::rule);
  };
  auto check_none = [&](const GemmKernelEntry& e, const GemmDesc& d, const DeviceInfo& on) {
    CAPTURE(e.name);
    for (const GemmLaunchOptions& o : launch_variants(e, d, on)) CHECK(o.pdl == PdlChoice::rule);
  };
  if (rule) {
    check_twins(*split_ok, small, PdlChoice::off);  // split-K variants too
    check_twins(*split_ok, mid, PdlChoice::on);
    for (const auto& e : entries) check_twins(e, small, PdlChoice::off);
    bool split_twin = false;
    for (const GemmLaunchOptions& o : launch_variants(*split_ok, small, dev)) split_twin |= o.split_k > 1 && o.pdl == PdlChoice::off;
    CHECK(split_twin);
  }
  // sm90 (wgmma) instances keep the rule: no twins (tactics.hpp says why).
  for (const GemmDesc* d : {&small, &mid, &big}) {
    check_none(*split_ok, *d, ampere);
    check_none(wg, *d, ampere);
    check_none(wg, *d, dev);
    check_none(route, *d, dev);
  }
  check_none(*split_ok, big, dev);
  check_none(wg, big, dev);
}

TEST_CASE("tuner tactics: a faster PDL twin wins, is cached with its suffix and reapplied; its variant is measured first") {
  if (kernel::sm80_pdl_mode() != kernel::PdlMode::small_only) {
    MESSAGE("KTUNE_SM80_PDL is set: no PDL twins are offered (skipped)");
    return;
  }
  TempDir dir;
  TunerOptions o = quiet_options();
  o.cache_path = dir.file("t.ktune");
  o.max_candidates = 0;  // every tactic
  SplitFixture f(o);
  const Problem p = decode();  // 2^27: programmatic by the rule, so the twins are @nopdl
  const std::string want = k128 + "@nopdl";
  f.backend->results[want].ms = 0.3;
  const GemmTactic* t = f.select(p);
  REQUIRE(t != nullptr);
  CHECK(t->name == want);
  CHECK(t->launch.pdl == PdlChoice::off);
  CHECK(t->launch.split_k == 1);
  // Every variant of every instance was measured with its twin, the twin after it.
  std::vector<std::string> every;
  {
    std::lock_guard lock(f.backend->log_mu);
    every = f.backend->measured;
  }
  CHECK(std::set<std::string>(every.begin(), every.end()).size() == every.size());
  for (const std::string& name : every) {
    if (name.size() > 6 && name.compare(name.size() - 6, 6, "@nopdl") == 0) {
      const std::string original = name.substr(0, name.size() - 6);
      const auto i = std::find(every.begin(), every.end(), original), j = std::find(every.begin(), every.end(), name);
      CHECK_MESSAGE(i < j, original << " measured after its twin");
    } else {
      CHECK_MESSAGE(std::find(every.begin(), every.end(), name + "@nopdl") != every.end(), name << " has no twin measured");
    }
  }
  // Persisted as "nopdl", and another tuner applies it without measuring.
  CHECK(read_text(o.cache_path).find("\"launch\":\"nopdl\"") != std::string::npos);
  SplitFixture g(o);
  const GemmTactic* again = g.select(p);
  CHECK(again->name == want);
  CHECK(again->launch.pdl == PdlChoice::off);
  CHECK(g.last_report().source == Source::cache);
  CHECK(g.backend->measures.load() == 0);
  // A pinned @pdl is accepted (an explicit choice, also where the rule already launches programmatically).
  CHECK(g.tuner->pin(p.desc, alignment_of(p.desc, p.ops), k128 + "@pdl").ok());
  CHECK(g.tuner->lookup_tactic(p.desc, p.ops)->launch.pdl == PdlChoice::on);
}

TEST_CASE("tuner tactics: max_candidates counts distinct tactics; the PDL twin of a kept tactic takes no slot") {
  if (kernel::sm80_pdl_mode() != kernel::PdlMode::small_only) {
    MESSAGE("KTUNE_SM80_PDL is set: no PDL twins are offered (skipped)");
    return;
  }
  const Problem p = decode();  // programmatic by the rule: every variant's twin is @nopdl, ranked right behind it
  for (int k : {1, 2, 4, 7}) {
    CAPTURE(k);
    TunerOptions o = quiet_options();
    o.max_candidates = k;
    SplitFixture f(o);
    (void)f.select(p);
    const TuningReport r = f.last_report();
    std::map<std::string, const TacticRecord*> by_name;
    for (const TacticRecord& t : r.records)
      if (t.rank > 0) by_name[t.name] = &t;
    auto ran = [](const TacticRecord& t) { return t.status != TacticStatus::pruned_by_model && t.status != TacticStatus::cannot_implement; };
    int distinct = 0, twins = 0, worst_kept = 0, best_pruned = 1 << 30;
    for (const auto& [n, t] : by_name) {
      if (is_nopdl(n)) {
        const auto sib = by_name.find(n.substr(0, n.size() - 6));
        REQUIRE(sib != by_name.end());
        CHECK(sib->second->rank < t->rank);  // right behind its variant
        // Kept exactly when its variant is, and then without a slot.
        CHECK(ran(*t) == ran(*sib->second));
        if (ran(*t)) {
          ++twins;
          CHECK(t->detail.find("PDL twin of rank " + std::to_string(sib->second->rank) + " (takes no max_candidates slot)") !=
                std::string::npos);
        }
        continue;
      }
      if (ran(*t)) {
        ++distinct;
        worst_kept = std::max(worst_kept, t->rank);
        CHECK(by_name.count(n + "@nopdl") == 1);  // every sm80 tactic has its twin here
      } else {
        best_pruned = std::min(best_pruned, t->rank);
        CHECK(t->detail.find("max_candidates " + std::to_string(k) + " distinct tactics kept before it") != std::string::npos);
      }
    }
    // k distinct tactics measured, the k best-ranked ones, each with its twin.
    CHECK(distinct == k);
    CHECK(twins == k);
    CHECK(worst_kept < best_pruned);
    CHECK(f.backend->measures.load() == 2 * k);
  }
}
