// test/fuzz/fuzz_cache.cpp — libFuzzer target: the tuning-cache reader, merge and writer, and the
// tuner's use of what it read.
//
// The input is cache file text; a NUL byte, when present, splits it into two files A and B (think: two
// processes' caches). Then:
//   1. parse A and B (parse_cache_text); every entry either reader accepted must be well-formed on its
//      own terms (checked here independently of parse_entry) and survive its own line round trip
//   2. merge: A∪B and B∪A hold the same entries, each the better of the candidates for its key
//   3. the merged store's file text reads back as a clean ktune cache holding exactly the same entries,
//      and writing it again gives the same bytes
//   4. apply: a tuner (Policy::cache_only, never measuring) on a fake H200 with every default family's
//      configurations loads A from a file and resolves the problem of every entry for its identity;
//      an instance the tuner takes from the cache is the entry's instance, exists in the table and
//      can run the problem; anything else falls back to the cost model's pick, which can run it too.
// Nothing may crash, throw, leak or hit undefined behaviour.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "ktune/tuner/cache.hpp"
#include "ktune/tuner/key.hpp"
#include "ktune/tuner/report.hpp"
#include "ktune/tuner/tuner.hpp"

using namespace ktune;
using namespace ktune::tuner;

namespace {

bool pow2(std::int64_t v) { return v >= 1 && (v & (v - 1)) == 0; }

bool printable(const std::string& s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

// The readable key, the common tail and the line round trip of any accepted entry.
void check_common(const CacheEntry& e, const std::string& line) {
  KTUNE_FUZZ_CHECK(!e.instance.empty() && e.instance.size() <= 200, line);
  for (char c : e.instance)  // the cache's own name alphabet ('+': repack routes, route_repack+<instance>)
    KTUNE_FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                         c == '-' || c == '+',
                     line);
  KTUNE_FUZZ_CHECK(std::isfinite(e.ms) && e.ms > 0 && e.ms <= 1e7, line);
  KTUNE_FUZZ_CHECK(std::isfinite(e.tflops) && e.tflops >= 0, line);
  KTUNE_FUZZ_CHECK(printable(e.id.device, 512) && printable(e.id.version, 64) && printable(e.id.families, 64), line);
  CacheEntry back;
  std::string why;
  KTUNE_FUZZ_CHECK(parse_entry_line(line, back, why), line + ": " + why);
  KTUNE_FUZZ_CHECK(back.key == e.key && back.conv == e.conv && back.id == e.id && back.instance == e.instance &&
                       back.launch == e.launch && back.ms == e.ms && back.tflops == e.tflops,
                   line);
}

// An accepted conv2d entry: sizes a validated call can have, f16/bf16 operands with their mma math,
// power-of-two alignments within 16 bytes dividing C, R·S·C and K; the GEMM key part left default.
void check_conv_entry(const CacheEntry& e) {
  const ConvKey& k = e.conv;
  const std::string line = to_line(e);
  ProblemKey gemm_part;
  gemm_part.op = OpKind::conv2d;
  KTUNE_FUZZ_CHECK(e.key == gemm_part, line);
  constexpr std::int32_t lim = std::int32_t{1} << 30;
  for (std::int32_t v : {k.n, k.h, k.w, k.c, k.k, k.r, k.s, k.stride_h, k.stride_w, k.dil_h, k.dil_w})
    KTUNE_FUZZ_CHECK(v >= 1 && v < lim, line);
  KTUNE_FUZZ_CHECK(k.pad_h >= 0 && k.pad_h < lim && k.pad_w >= 0 && k.pad_w < lim, line);
  KTUNE_FUZZ_CHECK((k.x_type == DType::f16 || k.x_type == DType::bf16) && static_cast<unsigned>(k.y_type) <= 2, line);
  KTUNE_FUZZ_CHECK((k.math == MathOp::mma_f16 || k.math == MathOp::mma_bf16) && operand_type(k.math) == k.x_type, line);
  KTUNE_FUZZ_CHECK(static_cast<unsigned>(k.activation) <= 4 && k.epi_flags < 32 &&
                       !((k.epi_flags & epi::alpha) && (k.epi_flags & epi::beta)), line);
  KTUNE_FUZZ_CHECK(pow2(k.align_x) && pow2(k.align_w) && pow2(k.align_y), line);
  KTUNE_FUZZ_CHECK(k.align_x * size_of(k.x_type) <= 16 && k.align_w * size_of(k.x_type) <= 16 && k.align_y * size_of(k.y_type) <= 16, line);
  KTUNE_FUZZ_CHECK(k.c % k.align_x == 0 && (std::int64_t{k.r} * k.s * k.c) % k.align_w == 0 && k.k % k.align_y == 0, line);
  const ConvShape sh = conv_shape(conv_desc_of(k));
  KTUNE_FUZZ_CHECK(sh.p >= 1 && sh.q >= 1, line);
  if (!e.launch.empty()) {
    ConvLaunchOptions lo;
    std::string why;
    KTUNE_FUZZ_CHECK(parse_conv_launch_suffix(e.launch, lo, why) && launch_suffix(lo) == e.launch, line);
  }
  check_common(e, line);
}

// An accepted entry, judged without parse_entry's code.
void check_entry(const CacheEntry& e) {
  if (e.is_conv()) return check_conv_entry(e);
  const ProblemKey& k = e.key;
  const std::string line = to_line(e);
  constexpr std::int64_t lim = (std::int64_t{1} << 31) - 1;
  KTUNE_FUZZ_CHECK(k.op == OpKind::gemm && e.conv == ConvKey{}, line);
  KTUNE_FUZZ_CHECK(k.m >= 1 && k.n >= 1 && k.k >= 1 && k.batch >= 1, line);
  KTUNE_FUZZ_CHECK(k.n <= lim && k.k <= lim && k.batch <= lim, line);
  KTUNE_FUZZ_CHECK(k.m <= lim || (k.m == lim + 1 && k.m_bucketing == MBucketing::pow2), line);  // pow2 bucket of M > 2^30
  KTUNE_FUZZ_CHECK(static_cast<unsigned>(k.ab_type) <= 2 && static_cast<unsigned>(k.d_type) <= 2, line);
  KTUNE_FUZZ_CHECK(static_cast<unsigned>(k.a_layout) <= 1 && static_cast<unsigned>(k.b_layout) <= 1, line);
  KTUNE_FUZZ_CHECK(!is_wgmma(k.math) && static_cast<unsigned>(k.math) <= 3 && operand_type(k.math) == k.ab_type, line);
  KTUNE_FUZZ_CHECK(static_cast<unsigned>(k.activation) <= 4 && k.epi_flags < 32 &&
                       !((k.epi_flags & epi::alpha) && (k.epi_flags & epi::beta)), line);
  KTUNE_FUZZ_CHECK(k.m_bucketing == MBucketing::exact || k.m_bucketing == MBucketing::pow2, line);
  KTUNE_FUZZ_CHECK(k.m_bucketing == MBucketing::exact || pow2(k.m), line);
  KTUNE_FUZZ_CHECK(pow2(k.align_a) && pow2(k.align_b) && pow2(k.align_d), line);
  KTUNE_FUZZ_CHECK(k.align_a * size_of(k.ab_type) <= 16 && k.align_b * size_of(k.ab_type) <= 16 &&
                       k.align_d * size_of(k.d_type) <= 16, line);
  check_common(e, line);
}

void check_parse(const CacheParseResult& r) {
  KTUNE_FUZZ_CHECK(r.rejected <= r.lines);
  KTUNE_FUZZ_CHECK(r.store.size() <= r.lines - r.rejected);
  if (r.kind != CacheFileKind::cache) KTUNE_FUZZ_CHECK(r.store.empty() && r.lines == 0);
  if (r.kind == CacheFileKind::foreign || r.kind == CacheFileKind::newer_format) KTUNE_FUZZ_CHECK(!r.warnings.empty());
  for (const CacheEntry* e : r.store.entries()) check_entry(*e);
}

// Entry text → entry, for comparing stores.
std::map<std::string, std::string> by_key(const CacheStore& s) {
  std::map<std::string, std::string> m;
  for (const CacheEntry* e : s.entries()) {
    const std::string k = e->key_text() + "|" + e->id.device + "|" + e->id.version + "|" + e->id.families;
    KTUNE_FUZZ_CHECK(m.emplace(k, to_line(*e)).second, "two entries for " + k);
  }
  return m;
}

void check_merge(const CacheParseResult& a, const CacheParseResult& b) {
  CacheStore ab = a.store, ba = b.store;
  ab.merge(b.store);
  ba.merge(a.store);
  const auto m_ab = by_key(ab), m_ba = by_key(ba);
  KTUNE_FUZZ_CHECK(m_ab == m_ba, "merge depends on the order");
  // Each merged entry is at least as good as both inputs' entries for its key.
  for (const CacheStore* src : {&a.store, &b.store})
    for (const CacheEntry* e : src->entries()) {
      const CacheEntry* m = ab.find(*e);
      KTUNE_FUZZ_CHECK(m != nullptr, "merge lost " + to_line(*e));
      KTUNE_FUZZ_CHECK(!e->better_than(*m), "merge kept a worse entry than " + to_line(*e));
    }
  // The file text of the merge is a clean cache with the same entries, and a fixed point.
  const std::string text = ab.serialize();
  const CacheParseResult again = parse_cache_text(text, "merged");
  KTUNE_FUZZ_CHECK(again.kind == CacheFileKind::cache && again.rejected == 0 && again.warnings.empty(), text);
  KTUNE_FUZZ_CHECK(by_key(again.store) == m_ab, "serialize/parse changed the entries");
  KTUNE_FUZZ_CHECK(again.store.serialize() == text, "serialize is not a fixed point");
}

// A fake device pointer at `base` whose alignment class is exactly `align` elements of `es` bytes
// (when the leading dimension and extent allow that much).
const void* ptr_with(std::uintptr_t base, int align, int es) {
  const int max = 16 / es;
  return reinterpret_cast<const void*>(base + (align >= max ? 0 : static_cast<std::uintptr_t>(align * es)));
}

// What the apply step saw, printed at exit when KTUNE_FUZZ_STATS is set (to check that the corpus
// reaches the interesting paths: entries applied, entries refused).
struct Stats {
  std::size_t inputs = 0, entries = 0, calls = 0, applied = 0, refused = 0;
  ~Stats() {
    if (std::getenv("KTUNE_FUZZ_STATS"))
      std::fprintf(stderr, "fuzz_cache: %zu inputs, %zu accepted entries, %zu tuner calls: %zu applied from the cache, %zu refused\n",
                   inputs, entries, calls, applied, refused);
  }
};
Stats g_stats;

std::string temp_path() {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/ktune_fuzz_cache_" + std::to_string(::getpid()) + ".ktune";
}

void check_apply(std::string_view text, const CacheStore& parsed) {
  // The tuner's identity on the fake H200; only entries carrying it can be applied.
  static const CacheIdentity fuzz_id{ktune_fuzz::fake_devices()[0].fingerprint(), std::string(ktune_version),
                                     family_hash(ktune_fuzz::fake_table())};
  bool bucket_used[2] = {false, false};
  for (const CacheEntry* e : parsed.entries())
    if (e->id == fuzz_id && !e->is_conv()) bucket_used[static_cast<int>(e->key.m_bucketing)] = true;
  if (!bucket_used[0] && !bucket_used[1]) return;  // nothing to apply: keep the fuzzer fast
  static const std::string path = temp_path();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    if (!text.empty()) std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  } else {
    return;
  }
  const GemmTable& table = ktune_fuzz::fake_table();
  const DeviceInfo& dev = ktune_fuzz::fake_devices()[0];
  std::vector<TuningReport> reports;
  TunerOptions o;
  o.policy = Policy::cache_only;
  o.log_level = LogLevel::verbose;
  o.log_sink = [](LogLevel, std::string_view) {};
  o.on_report = [&](const TuningReport& r) { reports.push_back(r); };
  for (MBucketing b : {MBucketing::exact, MBucketing::pow2}) {
    if (!bucket_used[static_cast<int>(b)]) continue;
    o.m_bucketing = b;
    auto backend = std::make_shared<ktune_fuzz::NoMeasureBackend>();
    Tuner t(backend, &table, o);
    (void)t.load_cache(path);
    CacheIdentity id;
    KTUNE_FUZZ_CHECK(t.identity(dev.ordinal, id).ok());
    KTUNE_FUZZ_CHECK(id == fuzz_id);
    const CacheStore store = t.cache_snapshot();
    for (const CacheEntry* e : store.entries()) {
      check_entry(*e);
      if (e->is_conv() || !(e->id == id) || e->key.m_bucketing != b) continue;  // conv keys: tuner_conv_test.cpp
      // A call whose key is this entry's key: its problem, with pointers of the entry's alignment class.
      const GemmDesc d = desc_of(e->key);
      GemmOperands ops;
      const int eb = size_of(d.ab_type), ed = size_of(d.d_type);
      ops.a = ptr_with(std::uintptr_t{1} << 40, e->key.align_a, eb);
      ops.b = ptr_with(std::uintptr_t{2} << 40, e->key.align_b, eb);
      ops.c = ptr_with(std::uintptr_t{3} << 40, e->key.align_d, ed);
      ops.d = const_cast<void*>(ptr_with(std::uintptr_t{4} << 40, e->key.align_d, ed));
      ops.bias = ptr_with(std::uintptr_t{5} << 40, e->key.align_d, ed);
      ops.residual = ptr_with(std::uintptr_t{6} << 40, e->key.align_d, ed);
      if (!validate(d, ops).ok()) continue;  // no call can have this key (e.g. M above the dimension limit)
      const GemmAlignment al = alignment_of(d, ops);
      if (!(make_key(d, al, b) == e->key)) continue;  // the dimensions allow another alignment class only
      reports.clear();
      const GemmKernelEntry* w = nullptr;
      ++g_stats.calls;
      const Status s = t.select(d, ops, nullptr, w);
      const bool any = !table.candidates(d, al, &dev).empty();
      KTUNE_FUZZ_CHECK(s.ok() == any, s.to_string() + " for " + to_line(*e));
      if (!s.ok()) continue;
      KTUNE_FUZZ_CHECK(w != nullptr && can_implement(*w, d, al, &dev).ok(), to_line(*e));
      KTUNE_FUZZ_CHECK(table.find(w->name) == w);
      if (reports.empty()) continue;  // decided by an earlier entry's call (same key)
      KTUNE_FUZZ_CHECK(reports.size() == 1);
      const TuningReport& r = reports.front();
      KTUNE_FUZZ_CHECK(r.source == Source::cache || r.source == Source::heuristic, to_line(*e));
      if (r.source == Source::cache) {
        ++g_stats.applied;
        KTUNE_FUZZ_CHECK(w->name == e->instance, std::string(w->name) + " applied for " + to_line(*e));
      } else {
        // Not applied: the entry names an instance that does not exist or cannot run the problem, or
        // launch options (a tactic, see gemm/tactics.hpp) this build does not offer for the problem.
        ++g_stats.refused;
        const GemmKernelEntry* named = table.find(e->instance);
        GemmLaunchOptions lo;
        std::string why_launch;
        const bool offered = e->launch.empty() || (named != nullptr && parse_launch_suffix(e->launch, lo, why_launch) &&
                                                   is_launch_variant(*named, lo, d, dev));
        KTUNE_FUZZ_CHECK(named == nullptr || !can_implement(*named, d, al, &dev).ok() || !offered,
                         "usable entry ignored: " + to_line(*e));
      }
    }
  }
  ::unlink(path.c_str());  // leave no file behind (a crash keeps it, next to the crash input)
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = all.find('\0');
  const std::string_view a = all.substr(0, nul);
  const std::string_view b = nul == std::string_view::npos ? std::string_view() : all.substr(nul + 1);

  // The JSON layer alone, on the whole input (never throws, bounded).
  json::Value v;
  std::string why;
  if (!json::parse(all, v, why)) KTUNE_FUZZ_CHECK(!why.empty());

  const CacheParseResult ra = parse_cache_text(a, "A", 4);
  const CacheParseResult rb = parse_cache_text(b, "B", 4);
  check_parse(ra);
  check_parse(rb);
  ++g_stats.inputs;
  g_stats.entries += ra.store.size() + rb.store.size();
  check_merge(ra, rb);
  check_apply(a, ra.store);
  return 0;
}
