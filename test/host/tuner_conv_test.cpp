// Conv2d keys in the runtime tuner, driven through a scripted conv backend: key equality and hashing,
// cache lines (round trip, malformed lines rejected), policies, failure exclusion, near-ties, graph
// capture, the persistent cache between tuners, concurrency. The conv table is the default conv
// families' real configurations (f16 and bf16, mma.sync and Hopper), on a fake H200.
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "conv_problem.hpp"
#include "ktune/conv.hpp"
#include "ktune/conv/families.hpp"
#include "ktune/conv/family.hpp"
#include "tuner_fake.hpp"

using namespace ktune_test;
using ktune::test::conv_problem;

namespace {

template <class F>
void add_family(ConvTable& t) {
  for (const ConvConfig& c : valid_conv_configs<F>()) {
    ConvKernelEntry e;
    e.name = intern(std::string(conv_instance_name(c).view()));
    e.family = F::name;
    e.config = c;
    e.resources = conv_resources(c);
    t.add(e);
  }
}

void fill_conv_table(ConvTable& t) {
  add_family<families::Sm80ConvOptimized>(t);
  add_family<families::Sm80ConvOptimizedWide>(t);
  add_family<families::Sm80ConvAnalytic>(t);
  add_family<families::Sm80ConvFewChannels>(t);
  add_family<families::Sm90ConvGemm1x1>(t);
  add_family<families::Sm90ConvIm2col>(t);
}

struct FakeConvResult {
  double ms = 1.0;
  double rel_error = 0.0;
  bool launch_fails = false;
  bool measure_fails = false;
};

class FakeConvBackend : public ConvTuningBackend {
 public:
  std::map<std::string, FakeConvResult> results;  // by tactic name; others: 1 ms + tile size / 1000
  std::atomic<int> begins{0}, validates{0}, measures{0};
  std::mutex mu;
  std::vector<std::string> measured;
  std::atomic<int> final_measures{0};  // the tuner's final round (exact_repeats requests), apart from the first pass
  std::vector<std::string> final_measured;
  std::map<std::string, double> final_factor;  // final-round time = the scripted time × this (by tactic name; default 1)
  int begin_sleep_ms = 0;

  class Session : public ConvTuningSession {
   public:
    explicit Session(FakeConvBackend& b) : b_(b) {}
    Validation validate(const ConvTactic& t) override {
      b_.validates.fetch_add(1);
      const FakeConvResult r = b_.result(t);
      Validation v;
      if (r.launch_fails) v.status = error(StatusCode::cuda_error, "fake conv launch failure");
      v.rel_error = r.rel_error;
      return v;
    }
    Measurement measure(const ConvTactic& t, const MeasureRequest& req) override {
      // Final-round requests (exact_repeats > 0) are counted apart from the first pass's.
      const bool final_round = req.exact_repeats > 0;
      (final_round ? b_.final_measures : b_.measures).fetch_add(1);
      {
        std::lock_guard lock(b_.mu);
        (final_round ? b_.final_measured : b_.measured).push_back(t.name);
      }
      const FakeConvResult r = b_.result(t);
      Measurement m;
      if (r.measure_fails) {
        m.status = error(StatusCode::cuda_error, "fake conv run failure");
        return m;
      }
      m.ms = r.ms;
      m.repeats = req.repeats.min_repeats;
      if (final_round) {
        std::lock_guard lock(b_.mu);
        auto it = b_.final_factor.find(t.name);
        m.ms *= it != b_.final_factor.end() ? it->second : 1.0;
        m.repeats = req.exact_repeats;
        m.stop = RepeatDecision::max_repeats;
      }
      return m;
    }
    std::size_t scratch_bytes() const override { return 4321; }
    std::string describe() const override { return "fake conv timings"; }

   private:
    FakeConvBackend& b_;
  };

  Status begin(int, const Conv2dDesc&, const ConvAlignment&, std::span<const ConvKernelEntry* const> c,
               std::unique_ptr<ConvTuningSession>& out) override {
    begins.fetch_add(1);
    if (c.empty()) return error(StatusCode::no_instance, "no candidates");
    if (begin_sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(begin_sleep_ms));
    out = std::make_unique<Session>(*this);
    return {};
  }

  FakeConvResult result(const ConvTactic& t) {
    std::lock_guard lock(mu);
    auto it = results.find(t.name);
    if (it != results.end()) return it->second;
    FakeConvResult r;
    r.ms = 1.0 + double(t.entry->config.gemm.tile.m + t.entry->config.gemm.tile.n) / 1000.0 + (is_default_launch(t.launch) ? 0 : 0.5);
    return r;
  }
};

// A validated-looking f16 problem with 16-byte aligned fake pointers (never dereferenced).
struct ConvCall {
  Conv2dDesc desc;
  Conv2dOperands ops;
};
ConvCall conv_call(Conv2dDesc d, bool bias_relu = true, std::uintptr_t x_off = 0) {
  ConvCall c;
  c.desc = d;
  if (bias_relu) c.desc.epilogue = bias_activation(Activation::relu);
  const std::uintptr_t gap = std::uintptr_t{1} << 36;
  c.ops.x = reinterpret_cast<const void*>(gap + x_off);
  c.ops.w = reinterpret_cast<const void*>(2 * gap);
  c.ops.y = reinterpret_cast<void*>(3 * gap);
  c.ops.bias = reinterpret_cast<const void*>(4 * gap);
  c.ops.residual = reinterpret_cast<const void*>(5 * gap);
  return c;
}

struct ConvFixture {
  GemmTable gemm;
  ConvTable table;
  std::shared_ptr<FakeBackend> backend = std::make_shared<FakeBackend>();
  std::shared_ptr<FakeConvBackend> conv = std::make_shared<FakeConvBackend>();
  Capture cap;
  std::unique_ptr<Tuner> tuner;
  explicit ConvFixture(Policy policy = Policy::tune, std::string cache_path = {}, int max_candidates = 32) {
    fill_table(gemm);
    fill_conv_table(table);
    TunerOptions o = quiet_options(&cap);
    o.policy = policy;
    o.cache_path = std::move(cache_path);
    o.max_candidates = max_candidates;
    tuner = std::make_unique<Tuner>(backend, &gemm, std::move(o), conv, &table);
  }
  const ConvTactic* select(const ConvCall& c, Status* st = nullptr, cudaStream_t s = nullptr) {
    const ConvTactic* t = nullptr;
    const Status x = tuner->select_conv(c.desc, c.ops, s, t);
    if (st) *st = x;
    return t;
  }
  DeviceInfo device() {
    DeviceInfo d;
    REQUIRE(backend->device_info(0, d).ok());
    return d;
  }
  // What the heuristic (ktune::select_conv) runs for this call on the fake device.
  std::string heuristic_pick(const ConvCall& c) {
    const ConvKernelEntry* e = nullptr;
    const DeviceInfo dev = device();
    REQUIRE(ktune::select_conv(c.desc, c.ops, table, dev, {}, e).ok());
    return std::string(e->name);
  }
  TuningReport last_report() {
    std::lock_guard lock(cap.mu);
    REQUIRE(!cap.reports.empty());
    return cap.reports.back();
  }
};

std::string tname(const ConvTactic* t) { return t ? t->name : std::string("(null)"); }

const Conv2dDesc k3x3 = conv_problem(32, 56, 56, 64, 64, 3, 3, 1, 1);
const Conv2dDesc k1x1 = conv_problem(32, 56, 56, 64, 256, 1, 1, 0, 0);

CacheEntry conv_entry(const ConvKey& k, std::string instance, double ms, std::string launch = {}) {
  CacheEntry e;
  e.key.op = OpKind::conv2d;
  e.conv = k;
  e.id = CacheIdentity{"Fake H200 #0|cc90|sm132|l2:62914560|drv13000|rt13000", std::string(ktune_version), "0123456789abcdef"};
  e.instance = std::move(instance);
  e.launch = std::move(launch);
  e.ms = ms;
  e.tflops = 1.0;
  return e;
}

}  // namespace

TEST_CASE("conv key: equal problems give equal keys and hashes; every field tells keys apart") {
  const ConvCall c = conv_call(k3x3);
  const ConvKey a = make_conv_key(c.desc, alignment_of(c.desc, c.ops));
  const ConvKey b = make_conv_key(conv_call(k3x3).desc, alignment_of(c.desc, c.ops));
  CHECK(a == b);
  CHECK(hash_value(a) == hash_value(b));
  CHECK(a.align_x == 8);
  CHECK(a.align_w == 8);
  CHECK(a.align_y == 8);
  CHECK(a.math == MathOp::mma_f16);
  CHECK(a.epi_flags == epi::bias);
  CHECK(a.activation == Activation::relu);
  std::vector<ConvKey> variants;
  auto vary = [&](auto f) {
    ConvCall x = conv_call(k3x3);
    f(x);
    variants.push_back(make_conv_key(x.desc, alignment_of(x.desc, x.ops)));
  };
  vary([](ConvCall& x) { x.desc.n = 31; });
  vary([](ConvCall& x) { x.desc.h = 55; });
  vary([](ConvCall& x) { x.desc.w = 57; });
  vary([](ConvCall& x) { x.desc.c = 72; });
  vary([](ConvCall& x) { x.desc.k = 128; });
  vary([](ConvCall& x) { x.desc.r = 1; });
  vary([](ConvCall& x) { x.desc.s = 1; });
  vary([](ConvCall& x) { x.desc.pad_h = 0; });
  vary([](ConvCall& x) { x.desc.pad_w = 2; });
  vary([](ConvCall& x) { x.desc.stride_h = 2; });
  vary([](ConvCall& x) { x.desc.stride_w = 2; });
  vary([](ConvCall& x) { x.desc.dil_h = 2; });
  vary([](ConvCall& x) { x.desc.dil_w = 2; });
  vary([](ConvCall& x) { x.desc.type = x.desc.out_type = DType::bf16; });
  vary([](ConvCall& x) { x.desc.epilogue.activation = Activation::silu; });
  vary([](ConvCall& x) { x.desc.epilogue.residual = true; });
  vary([](ConvCall& x) { x.ops.x = static_cast<const char*>(x.ops.x) + 4; });  // x allows 2-element vectors
  vary([](ConvCall& x) { x.ops.y = static_cast<char*>(x.ops.y) + 8; });
  std::set<std::uint64_t> hashes{hash_value(a)};
  for (const ConvKey& v : variants) {
    CHECK_FALSE(v == a);
    hashes.insert(hash_value(v));
  }
  CHECK(hashes.size() == variants.size() + 1);
  // The key's problem has the key (cache entries, pending keys).
  const Conv2dDesc back = conv_desc_of(a);
  CHECK(make_conv_key(back, conv_alignment_of(a)) == a);
  CHECK(to_string(a) == "conv2d f16->f16 mma_f16 bias_relu n=32 h=56 w=56 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dil=1x1 al=8/8/8");
}

TEST_CASE("conv cache lines: round trip, coexistence with GEMM lines, malformed lines rejected with the reason") {
  const ConvCall c = conv_call(k3x3);
  const ConvKey key = make_conv_key(c.desc, alignment_of(c.desc, c.ops));
  const CacheEntry e = conv_entry(key, "ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w64x32_s4_a8", 0.05, "rg16");
  const std::string line = to_line(e);
  CHECK(line.find(R"("op":"conv2d")") != std::string::npos);
  CHECK(line.find(R"("launch":"rg16")") != std::string::npos);
  CacheEntry back;
  std::string why;
  REQUIRE_MESSAGE(parse_entry_line(line, back, why), why);
  CHECK(back.is_conv());
  CHECK(back.conv == key);
  CHECK(back.key.op == OpKind::conv2d);
  CHECK(back.instance == e.instance);
  CHECK(back.launch == "rg16");
  CHECK(back.ms == e.ms);
  CHECK(back.id == e.id);
  // A store with a GEMM and a conv entry: both found, serialised and read back.
  CacheStore s;
  CacheEntry g;
  g.key = make_key(f16_problem().desc, alignment_of(f16_problem().desc, f16_problem().ops));
  g.id = e.id;
  g.instance = "ktune_gemm_x";
  g.ms = 1.0;
  g.tflops = 2.0;
  s.insert(g);
  s.insert(e);
  CHECK(s.size() == 2);
  CHECK(s.find(key, e.id) != nullptr);
  CHECK(s.find(g.key, g.id) != nullptr);
  CHECK(s.find(g.key, g.id)->instance == "ktune_gemm_x");
  const std::string text = s.serialize();
  CHECK(text.rfind(R"({"format":"ktune-cache","version":3})", 0) == 0);
  const CacheParseResult r = parse_cache_text(text, "t");
  CHECK(r.kind == CacheFileKind::cache);
  CHECK(r.rejected == 0);
  CHECK(r.warnings.empty());
  CHECK(r.store.size() == 2);
  CHECK(r.store.serialize() == text);
  // Same key, faster entry wins the merge.
  CacheStore t = r.store;
  t.insert(conv_entry(key, "ktune_conv2d_fprop_sm80_f16_optimized_64x64x64_w32x32_s4_a8", 0.04));
  CHECK(t.find(key, e.id)->ms == 0.04);
  // Version-2 files (no conv lines) still load.
  const std::string v2 = R"({"format":"ktune-cache","version":2})" "\n" + to_line(g) + "\n";
  CHECK(parse_cache_text(v2, "v2").store.size() == 1);

  auto replace = [&](std::string from, std::string to) {
    std::string l = line;
    const auto at = l.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    l.replace(at, from.size(), to);
    return l;
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {replace(R"("op":"conv2d")", R"("op":"conv3d")"), "unknown op"},
      {replace(R"("x":"f16",)", ""), "\"x\""},
      {replace(R"("x":"f16")", R"("x":"f32")"), "\"x\""},
      {replace(R"("math":"mma_f16")", R"("math":"mma_bf16")"), "does not take"},
      {replace(R"("math":"mma_f16")", R"("math":"wgmma_f16")"), "math"},
      {replace(R"("epilogue":"bias_relu")", R"("epilogue":"relu_bias")"), "epilogue"},
      {replace(R"("pad_h":1)", R"("pad_h":-1)"), "pad_h"},
      {replace(R"("n":32)", R"("n":0)"), "\"n\""},
      {replace(R"("c":64)", R"("c":1073741824)"), "\"c\""},
      {replace(R"("h":56)", R"("h":"56")"), "\"h\""},
      {replace(R"("r":3)", R"("r":99)"), "not a valid conv2d problem"},  // filter larger than the padded input
      {replace(R"("stride_w":1)", R"("stride_w":0)"), "stride_w"},
      {replace(R"("align_x":8)", R"("align_x":16)"), "alignment"},
      {replace(R"("align_y":8)", R"("align_y":3)"), "alignment"},
      {replace(R"("c":64)", R"("c":60)"), "divide"},  // align_x 8 does not divide C = 60
      {replace(R"("launch":"rg16")", R"("launch":"rg8")"), "default"},
      {replace(R"("launch":"rg16")", R"("launch":"rg0")"), "raster group"},
      {replace(R"("launch":"rg16")", R"("launch":"split4x")"), "rg<N>"},
      {replace(R"("launch":"rg16")", R"("launch":"")"), "empty"},
      {replace(R"("instance":")", R"("instance":"bad )"), "instance"},
      {replace(R"("ms":0.05)", R"("ms":-1)"), "ms"},
      {replace(R"("dil_h":1,)", ""), "dil_h"},
  };
  for (const auto& [l, reason] : bad) {
    CAPTURE(l);
    CacheEntry x;
    std::string w;
    CHECK_FALSE(parse_entry_line(l, x, w));
    CHECK_MESSAGE(w.find(reason) != std::string::npos, w);
    const CacheParseResult pr = parse_cache_text(std::string(R"({"format":"ktune-cache","version":3})") + "\n" + l + "\n" + line + "\n", "f");
    CHECK(pr.rejected == 1);
    CHECK(pr.store.size() == 1);  // the good line still loads
    REQUIRE_FALSE(pr.warnings.empty());
    CHECK(pr.warnings.front().find("rejected cache line") != std::string::npos);
  }
}

TEST_CASE("conv tuner: tunes once, picks the fastest valid tactic, logs every candidate") {
  ConvFixture f;
  const ConvCall c = conv_call(k3x3);
  const std::string fastest = "ktune_conv2d_fprop_sm80_f16_optimized_64x64x64_w32x32_s4_a8";
  f.conv->results[fastest].ms = 0.1;
  const ConvTactic* t = f.select(c);
  CHECK(tname(t) == fastest);
  CHECK(f.conv->begins.load() == 1);
  const TuningReport r = f.last_report();
  CHECK(r.is_conv());
  CHECK(r.source == Source::tuned);
  CHECK(r.winner == fastest);
  CHECK(r.count(TacticStatus::selected) == 1);
  // f16 3x3 C=64: optimized x2, analytic x3, tma_im2col x4 measured; few-channels, gemm1x1 and bf16 not.
  CHECK(r.count(TacticStatus::measured) + r.count(TacticStatus::selected) >= 9);
  CHECK(r.count(TacticStatus::cannot_implement) > 0);
  CHECK(summary_line(r).find("conv2d f16->f16") != std::string::npos);
  for (const auto& rec : r.records) {
    const bool bf16_measured = rec.name.find("bf16") != std::string::npos && rec.status != TacticStatus::cannot_implement;
    CHECK_FALSE(bf16_measured);
  }
  // The second call is the hot path: no new session, the same tactic.
  const int measures = f.conv->measures.load();
  CHECK(f.select(c) == t);
  CHECK(f.conv->begins.load() == 1);
  CHECK(f.conv->measures.load() == measures);
  CHECK(f.tuner->lookup_conv(c.desc, c.ops) == t);
  CHECK(f.tuner->counters().tunings == 1);
  // GEMM keys are unaffected: their own backend, their own slots.
  const GemmKernelEntry* g = nullptr;
  CHECK(f.tuner->select(f16_problem().desc, f16_problem().ops, nullptr, g).ok());
  CHECK(g != nullptr);
  CHECK(f.backend->begins.load() == 1);
}

TEST_CASE("conv tuner: rank 1 is the heuristic choice; the Heuristic policy runs it without measuring") {
  for (const Conv2dDesc& d : {k3x3, k1x1, conv_problem(32, 224, 224, 4, 64, 7, 7, 3, 3, 2, 2), conv_problem(32, 7, 7, 512, 512, 3, 3, 1, 1),
                              conv_problem(3, 9, 11, 6, 5, 3, 3, 1, 1)}) {
    ConvFixture f(Policy::heuristic);
    const ConvCall c = conv_call(d);
    const ConvAlignment al = alignment_of(c.desc, c.ops);
    const auto ranked = f.tuner->ranked_conv_tactics(c.desc, al, f.device());
    REQUIRE(!ranked.empty());
    CHECK(std::string(ranked.front().entry->name) == f.heuristic_pick(c));
    const ConvTactic* t = f.select(c);
    CHECK(tname(t) == f.heuristic_pick(c));
    CHECK(f.conv->begins.load() == 0);
    CHECK(f.last_report().source == Source::heuristic);
    // Raster-group variants come after every instance's default options; split-K variants right after
    // their own instance's default (a top-k cut keeps them with it).
    bool seen_variant = false;
    const ConvKernelEntry* last_default = nullptr;
    for (const ConvTactic& x : ranked) {
      if (x.launch.split_k > 1 || x.launch.cluster_k > 1) {
        CHECK_FALSE(seen_variant);
        CHECK(x.entry == last_default);
      } else if (!is_default_launch(x.launch)) {
        seen_variant = true;
      } else {
        CHECK_FALSE(seen_variant);
        last_default = x.entry;
      }
    }
  }
}

TEST_CASE("conv tuner: raster-group variants for many-tile grids, names parse back") {
  ConvFixture f;
  const ConvCall c = conv_call(k1x1);
  const auto ranked = f.tuner->ranked_conv_tactics(c.desc, alignment_of(c.desc, c.ops), f.device());
  // (The mma.sync 128-row tiles also get a persistent-grid variant, @pk<N>: conv_split_k.cpp tests those.)
  auto raster_variant = [](const ConvTactic& t) { return !is_default_launch(t.launch) && t.launch.persistent == 0; };
  std::size_t variants = 0;
  for (const ConvTactic& t : ranked) {
    if (!raster_variant(t)) continue;
    ++variants;
    CHECK(t.launch.raster_group == 16);
    CHECK(t.name == std::string(t.entry->name) + "@rg16");
    ConvLaunchOptions lo;
    std::string why;
    CHECK(parse_conv_launch_suffix("rg16", lo, why));
    CHECK(lo.raster_group == 16);
  }
  CHECK(variants > 0);
  // A variant can win, and is cached with its launch options.
  const ConvTactic* pick = nullptr;
  for (const ConvTactic& t : ranked)
    if (raster_variant(t)) {
      f.conv->results[t.name].ms = 0.01;
      pick = &t;
      break;
    }
  REQUIRE(pick != nullptr);
  const ConvTactic* t = f.select(c);
  CHECK(tname(t) == pick->name);
  CHECK(t->launch.raster_group == 16);
  const CacheStore s = f.tuner->cache_snapshot();
  REQUIRE(s.size() == 1);
  CHECK(s.entries().front()->launch == "rg16");
  // One tile column: no variants.
  const ConvCall narrow = conv_call(conv_problem(32, 56, 56, 64, 64, 1, 1, 0, 0));
  for (const ConvTactic& x : f.tuner->ranked_conv_tactics(narrow.desc, alignment_of(narrow.desc, narrow.ops), f.device()))
    if (x.entry->config.gemm.tile.n >= 64) CHECK(x.launch.raster_group == ConvLaunchOptions{}.raster_group);
}

TEST_CASE("conv tuner: failing candidates are excluded and logged; all failing falls back, not persisted") {
  ConvFixture f;
  const ConvCall c = conv_call(k3x3);
  const std::string wrong = "ktune_conv2d_fprop_sm80_f16_optimized_64x64x64_w32x32_s4_a8";
  const std::string crash = "ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w64x32_s4_a8";
  const std::string slow_ok = "ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a4";
  f.conv->results[wrong] = {0.01, 0.5, false, false};
  f.conv->results[crash] = {0.02, 0.0, true, false};
  f.conv->results[slow_ok] = {0.03, 0.001, false, false};
  const ConvTactic* t = f.select(c);
  CHECK(tname(t) == slow_ok);
  const TuningReport r = f.last_report();
  bool saw_wrong = false, saw_crash = false;
  for (const auto& rec : r.records) {
    if (rec.name == wrong) {
      saw_wrong = true;
      CHECK(rec.status == TacticStatus::failed_validation);
      CHECK(rec.detail.find("relative error") != std::string::npos);
    }
    if (rec.name == crash) {
      saw_crash = true;
      CHECK(rec.status == TacticStatus::failed_launch);
    }
  }
  CHECK(saw_wrong);
  CHECK(saw_crash);
  bool logged = false;
  {
    std::lock_guard lock(f.cap.mu);
    for (const auto& l : f.cap.logs) logged |= l.find(wrong) != std::string::npos && l.find("failed validation") != std::string::npos;
  }
  CHECK(logged);  // the verbose tactic log names it

  // Every candidate fails: the heuristic choice, pinned for the process but not cached.
  ConvFixture g;
  const ConvCall d = conv_call(k3x3);
  const ConvAlignment al = alignment_of(d.desc, d.ops);
  for (const ConvTactic& x : g.tuner->ranked_conv_tactics(d.desc, al, g.device())) g.conv->results[x.name].rel_error = 1.0;
  const ConvTactic* u = g.select(d);
  CHECK(tname(u) == g.heuristic_pick(d));
  CHECK(g.last_report().source == Source::fallback);
  CHECK(g.tuner->cache_snapshot().empty());
  CHECK(g.select(d) == u);
  CHECK(g.conv->begins.load() == 1);
}

TEST_CASE("conv tuner: near-ties go to fewer resources, whatever the order") {
  ConvFixture f;
  const ConvCall c = conv_call(k3x3);
  const ConvAlignment al = alignment_of(c.desc, c.ops);
  const auto ranked = f.tuner->ranked_conv_tactics(c.desc, al, f.device());
  // Two tactics 1% apart; the slower one needs fewer resources.
  const std::string small = "ktune_conv2d_fprop_sm80_f16_optimized_64x64x64_w32x32_s4_a8";
  std::string big;
  for (const ConvTactic& t : ranked)
    if (is_sm90_iterator(t.entry->config.iterator) && t.entry->config.gemm.tile.m == 256) big = t.name;
  REQUIRE(!big.empty());
  const ConvKernelEntry* se = f.table.find(small);
  const ConvKernelEntry* be = f.table.find(big);
  REQUIRE(se != nullptr);
  REQUIRE(be != nullptr);
  const long long small_res = 1LL * se->resources.threads * se->resources.smem_bytes;
  const long long big_res = 1LL * be->resources.threads * be->resources.smem_bytes;
  REQUIRE(small_res < big_res);
  f.conv->results[big].ms = 0.100;
  f.conv->results[small].ms = 0.101;
  CHECK(tname(f.select(c)) == small);
  CHECK(f.last_report().records.front().detail.find("near-tie") != std::string::npos);
}

TEST_CASE("conv tuner: CacheOnly uses cache entries and otherwise the heuristic; the cache file carries conv keys") {
  TempDir dir;
  const std::string path = dir.file("conv.ktune");
  const ConvCall c = conv_call(k3x3);
  const std::string fastest = "ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_128x64x64_w64x64_s6_a8";
  std::string winner;
  {
    ConvFixture a(Policy::tune, path);
    REQUIRE(a.table.find(fastest) != nullptr);
    a.conv->results[fastest].ms = 0.05;
    winner = tname(a.select(c));
    CHECK(winner == fastest);
  }
  const std::string text = read_text(path);
  CHECK(text.find(R"("op":"conv2d")") != std::string::npos);
  CHECK(text.find(fastest) != std::string::npos);
  {
    ConvFixture b(Policy::cache_only, path);
    CHECK(tname(b.select(c)) == winner);
    CHECK(b.last_report().source == Source::cache);
    CHECK(b.conv->begins.load() == 0);
    // A key not in the cache: heuristic.
    const ConvCall other = conv_call(k1x1);
    CHECK(tname(b.select(other)) == b.heuristic_pick(other));
    CHECK(b.conv->begins.load() == 0);
  }
  {
    ConvFixture t(Policy::tune, path);  // a second process: uses the file, does not re-tune
    CHECK(tname(t.select(c)) == winner);
    CHECK(t.conv->begins.load() == 0);
    CHECK(t.tuner->counters().from_cache == 1);
  }
  {
    // Another conv table (a different build): the entry is kept but not applied.
    ConvFixture t(Policy::tune, path);
    t.table.add(ConvKernelEntry{"ktune_conv2d_extra", "extra", {}, {}, nullptr, nullptr});
    CHECK(t.select(c) != nullptr);
    CHECK(t.conv->begins.load() == 1);
  }
  {
    // A cache entry naming an instance this problem cannot use is ignored with a warning and re-tuned.
    CacheStore s;
    std::vector<std::string> w;
    REQUIRE(load_cache_file(path, s, w).ok());
    REQUIRE(s.size() == 2);  // the default table's entry and the other build's
    ConvFixture t(Policy::tune, path);
    const std::string hash = conv_family_hash(t.table);
    CacheEntry e;
    for (const CacheEntry* x : s.entries())
      if (x->id.families == hash) e = *x;
    REQUIRE(e.instance == winner);
    e.instance = "ktune_conv2d_fprop_sm80_f16_few_channels_c4_128x64x32_w32x32_s4_a4";
    e.ms = 1e-6;
    s.insert(e);
    REQUIRE(save_cache_file(path, s, w).ok());
    CHECK(t.select(c) != nullptr);
    CHECK(t.conv->begins.load() == 1);
    bool warned = false;
    std::lock_guard lock(t.cap.mu);
    for (const auto& l : t.cap.logs) warned |= l.find("cannot run it") != std::string::npos;
    CHECK(warned);
  }
}

TEST_CASE("conv tuner: while capturing, the heuristic choice and a pending key; tune_pending tunes it") {
  ConvFixture f;
  const ConvCall c = conv_call(k3x3);
  f.backend->capturing = true;
  const ConvTactic* t = f.select(c);
  CHECK(tname(t) == f.heuristic_pick(c));
  CHECK(f.conv->begins.load() == 0);
  CHECK(f.tuner->pending_count() == 1);
  CHECK(f.last_report().source == Source::deferred);
  CHECK(f.select(c) == t);
  CHECK(f.tuner->pending_count() == 1);  // remembered once
  f.backend->capturing = false;
  std::size_t tuned = 0;
  CHECK(f.tuner->tune_pending(&tuned).ok());
  CHECK(tuned == 1);
  CHECK(f.conv->begins.load() == 1);
  CHECK(f.tuner->pending_count() == 0);
  CHECK(f.tuner->lookup_conv(c.desc, c.ops) != nullptr);
}

TEST_CASE("conv tuner: many threads on one new key tune it once; different keys independently") {
  ConvFixture f;
  f.conv->begin_sleep_ms = 20;
  const ConvCall a = conv_call(k3x3), b = conv_call(k1x1);
  std::vector<std::thread> th;
  std::vector<const ConvTactic*> got(8, nullptr);
  for (int i = 0; i < 8; ++i)
    th.emplace_back([&, i] {
      Status s;
      got[static_cast<std::size_t>(i)] = f.select(i % 2 ? a : b, &s);
      CHECK(s.ok());
    });
  for (auto& t : th) t.join();
  CHECK(f.conv->begins.load() == 2);
  for (int i = 0; i < 8; ++i) CHECK(got[static_cast<std::size_t>(i)] == got[static_cast<std::size_t>(i % 2)]);
}

TEST_CASE("conv tuner: no candidates is a clear error; pin_conv forces a tactic") {
  ConvFixture f;
  ConvCall c = conv_call(k3x3);
  c.desc.c = 63;  // only the scalar analytic iterator takes it
  Status st;
  const ConvTactic* odd = f.select(c, &st);
  CHECK(st.ok());
  CHECK(tname(odd) == "ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a1");
  ConvFixture g;
  const ConvCall d = conv_call(k3x3);
  const ConvAlignment al = alignment_of(d.desc, d.ops);
  CHECK(g.tuner->pin_conv(d.desc, al, "ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a1@rg4").ok());
  const ConvTactic* t = g.select(d);
  CHECK(tname(t) == "ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a1@rg4");
  CHECK(g.conv->begins.load() == 0);
  CHECK_FALSE(g.tuner->pin_conv(d.desc, al, "no_such_instance").ok());
  CHECK_FALSE(g.tuner->pin_conv(d.desc, al, "ktune_conv2d_fprop_sm80_f16_few_channels_c4_128x64x32_w32x32_s4_a4").ok());
  CHECK_FALSE(g.tuner->pin_conv(d.desc, al, "ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a1@rg8").ok());
  // An empty conv table: a clear error, not a crash.
  GemmTable gt;
  ConvTable empty;
  auto be = std::make_shared<FakeBackend>();
  Tuner t2(be, &gt, quiet_options(), std::make_shared<FakeConvBackend>(), &empty);
  const ConvTactic* none = nullptr;
  const Status s = t2.select_conv(d.desc, d.ops, nullptr, none);
  CHECK_FALSE(s.ok());
  CHECK(none == nullptr);
  CHECK(s.message().find("conv") != std::string::npos);
}

TEST_CASE("conv tuner: the final round re-times near-ties interleaved and picks from its medians") {
  ConvFixture f;
  const ConvCall c = conv_call(k3x3);
  const std::string a = "ktune_conv2d_fprop_sm80_f16_optimized_64x64x64_w32x32_s4_a8";
  std::string b;
  for (const ConvTactic& t : f.tuner->ranked_conv_tactics(c.desc, alignment_of(c.desc, c.ops), f.device()))
    if (is_sm90_iterator(t.entry->config.iterator) && t.entry->config.gemm.tile.m == 256) b = t.name;
  REQUIRE(!b.empty());
  // First pass: a 0.100, b 0.103 (outside the 2% tie band: a would win); timed again, a runs 0.110.
  f.conv->results[a].ms = 0.100;
  f.conv->results[b].ms = 0.103;
  f.conv->final_factor[a] = 1.10;
  CHECK(tname(f.select(c)) == b);
  CHECK(f.conv->final_measures.load() == 20);
  {
    std::lock_guard lock(f.conv->mu);
    REQUIRE(f.conv->final_measured.size() == 20);
    for (std::size_t i = 0; i < 20; ++i) CHECK(f.conv->final_measured[i] == (i % 2 == 0 ? a : b));
  }
  const TuningReport r = f.last_report();
  CHECK(r.final_round.find("2 within 5% of the fastest, 10 interleaved rounds") != std::string::npos);
  REQUIRE(r.records.size() >= 2);
  CHECK(r.records[0].name == b);
  CHECK(r.records[0].ms == doctest::Approx(0.103));
  CHECK(r.records[0].first_pass_ms == doctest::Approx(0.103));
  CHECK(r.records[1].name == a);
  CHECK(r.records[1].ms == doctest::Approx(0.110));
  CHECK(r.records[1].first_pass_ms == doctest::Approx(0.100));
  CHECK(r.records[1].final_rounds == 10);
  CHECK(r.records[0].detail.find("final round overturned the first pass's pick " + a) != std::string::npos);
}
