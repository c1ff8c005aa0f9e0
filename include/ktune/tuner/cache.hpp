// ktune/tuner/cache.hpp — the persistent tuning cache: versioned JSON lines, one tuned key per line.
//
//   {"format":"ktune-cache","version":3}
//   {"op":"gemm","ab":"bf16","d":"bf16","math":"mma_bf16","a":"row","b":"col","epilogue":"identity",
//    "m":16,"n":4096,"k":4096,"batch":1,"m_bucket":"exact","align_a":8,"align_b":8,"align_d":8,
//    "instance":"ktune_gemm_sm80_bf16_tn_128x256x32_w64x64_s4_a8","launch":"split4s","ms":0.0191,
//    "tflops":7.0,"device":"NVIDIA H200|cc90|sm132|l2:62914560|drv13000|rt13000","ktune":"0.1.0",
//    "families":"3f0c..."}
//
//   {"op":"conv2d","x":"f16","y":"f16","math":"mma_f16","epilogue":"bias_relu","n":32,"h":56,"w":56,
//    "c":64,"k":64,"r":3,"s":3,"pad_h":1,"pad_w":1,"stride_h":1,"stride_w":1,"dil_h":1,"dil_w":1,
//    "align_x":8,"align_w":8,"align_y":8,"instance":"ktune_conv2d_fprop_sm80_f16_optimized_...",
//    "launch":"rg16","ms":0.05,"tflops":95.0,"device":"...","ktune":"0.1.0","families":"..."}
//
// The winner is a tactic: "instance" plus "launch", the non-default launch options in the canonical
// spelling of ktune/gemm/tactics.hpp or, for conv2d lines, ktune/conv/tactics.hpp (absent: default
// options). Version 1 files (before tactics) are read as entries with default options; version 2
// files (before conv2d lines) as they are; saving writes version 3. A conv2d line's "families" is the
// hash of the conv instance table (conv_family_hash), a GEMM line's that of the GEMM table.
//
// Every entry carries the device fingerprint, ktune version and instance-table hash it was measured
// with; only entries whose three match the running process are applied (others are kept in the file,
// so one file can serve several GPUs). Reading never throws and never trusts the file: a line that is
// not a well-formed, self-consistent entry is rejected with a warning naming the line, and the rest
// of the file still loads. A file that is not a ktune cache at all (or a newer format) is neither
// applied nor overwritten.
//
// Saving is merge-then-replace under an exclusive flock on "<path>.lock": read what is on disk now,
// merge (same key: the faster entry wins), write "<path>.tmp.<pid>.<n>", fsync, rename over <path>.
// Readers never see a partial file, and two processes saving at once lose no entries.
#pragma once
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ktune/conv/tactics.hpp"
#include "ktune/gemm/tactics.hpp"
#include "ktune/status.hpp"
#include "ktune/tuner/json.hpp"
#include "ktune/tuner/key.hpp"

namespace ktune::tuner {

inline constexpr std::string_view cache_format_name = "ktune-cache";
inline constexpr int cache_format_version = 3;  // 3: conv2d lines ("op":"conv2d")
inline constexpr int cache_oldest_readable_version = 1;  // version 1: no "launch" field (default options)
inline constexpr std::size_t cache_max_file_bytes = 64u << 20;   // larger files are not read
inline constexpr std::size_t cache_max_line_bytes = 64u << 10;   // longer lines are rejected

// The build and device a process runs on; only entries with the same identity are applied.
struct CacheIdentity {
  std::string device;    // DeviceInfo::fingerprint()
  std::string version;   // ktune_version
  std::string families;  // family_hash(table)
  friend bool operator==(const CacheIdentity&, const CacheIdentity&) = default;
};

struct CacheEntry {
  ProblemKey key;  // key.op says which key is meaningful: GEMM entries keep `conv` default,
  ConvKey conv;    // conv2d entries keep `key` default but for key.op = conv2d
  CacheIdentity id;
  std::string instance;
  std::string launch;    // launch_suffix() of the tactic's options; empty: default options
  double ms = 0.0;       // median time of the winner when it was tuned
  double tflops = 0.0;

  // The tactic's name (instance@launch), as logs and reports spell it.
  std::string tactic() const { return launch.empty() ? instance : instance + tactic_separator + launch; }
  bool is_conv() const { return key.op == OpKind::conv2d; }
  // The readable key (GEMM or conv2d).
  std::string key_text() const { return is_conv() ? to_string(conv) : to_string(key); }

  // Deterministic "better" order used by every merge: faster, then smaller instance name and launch
  // options, then (same time and tactic, e.g. a hand-edited line) larger tflops, so a merge never
  // depends on the order of its inputs.
  bool better_than(const CacheEntry& o) const {
    if (ms != o.ms) return ms < o.ms;
    if (instance != o.instance) return instance < o.instance;
    if (launch != o.launch) return launch < o.launch;
    return tflops > o.tflops;
  }
};

// ---- One line <-> one entry --------------------------------------------------------------------------

inline std::string header_line() {
  return json::ObjectWriter().str("format", cache_format_name).integer("version", cache_format_version).finish();
}

// The fields every entry line ends with, GEMM or conv: the tactic, its time and the build it was tuned by.
inline std::string finish_line(json::ObjectWriter& w, const CacheEntry& e) {
  w.str("instance", e.instance);
  if (!e.launch.empty()) w.str("launch", e.launch);
  return w.number("ms", e.ms)
      .number("tflops", e.tflops)
      .str("device", e.id.device)
      .str("ktune", e.id.version)
      .str("families", e.id.families)
      .finish();
}

inline std::string conv_to_line(const CacheEntry& e) {
  const ConvKey& k = e.conv;
  json::ObjectWriter w;
  w
      .str("op", to_string(OpKind::conv2d))
      .str("x", to_string(k.x_type))
      .str("y", to_string(k.y_type))
      .str("math", to_string(k.math))
      .str("epilogue", epilogue_tag(k.epi_flags, k.activation))
      .integer("n", k.n)
      .integer("h", k.h)
      .integer("w", k.w)
      .integer("c", k.c)
      .integer("k", k.k)
      .integer("r", k.r)
      .integer("s", k.s)
      .integer("pad_h", k.pad_h)
      .integer("pad_w", k.pad_w)
      .integer("stride_h", k.stride_h)
      .integer("stride_w", k.stride_w)
      .integer("dil_h", k.dil_h)
      .integer("dil_w", k.dil_w)
      .integer("align_x", k.align_x)
      .integer("align_w", k.align_w)
      .integer("align_y", k.align_y);
  return finish_line(w, e);
}

inline std::string to_line(const CacheEntry& e) {
  if (e.is_conv()) return conv_to_line(e);
  const ProblemKey& k = e.key;
  json::ObjectWriter w;
  w
      .str("op", to_string(k.op))
      .str("ab", to_string(k.ab_type))
      .str("d", to_string(k.d_type))
      .str("math", to_string(k.math))
      .str("a", to_string(k.a_layout))
      .str("b", to_string(k.b_layout))
      .str("epilogue", epilogue_tag(k.epi_flags, k.activation))
      .integer("m", k.m)
      .integer("n", k.n)
      .integer("k", k.k)
      .integer("batch", k.batch)
      .str("m_bucket", to_string(k.m_bucketing))
      .integer("align_a", k.align_a)
      .integer("align_b", k.align_b)
      .integer("align_d", k.align_d);
  return finish_line(w, e);
}

namespace detail {

template <class E, std::size_t N>
bool parse_enum(std::string_view s, const E (&values)[N], E& out) {
  for (E v : values)
    if (to_string(v) == s) {
      out = v;
      return true;
    }
  return false;
}

inline bool plausible_name(std::string_view s, std::size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s) {
    // '+': repack routes are named route_repack+<instance> (ktune/gemm/route/).
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                    c == '-' || c == '+';
    if (!ok) return false;
  }
  return true;
}

inline bool printable(std::string_view s, std::size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace detail

namespace detail {

// "ms", "tflops" (default: from `flops`), "device", "ktune", "families": the tail every line shares.
inline bool parse_timing(const json::Value& v, CacheEntry& e, double flops, std::string& why) {
  if (!v.get_double("ms", e.ms) || !(e.ms > 0.0) || e.ms > 1e7) {
    why = "\"ms\" must be a positive finite number";
    return false;
  }
  if (v.get("tflops") != nullptr) {
    if (!v.get_double("tflops", e.tflops) || e.tflops < 0.0) {
      why = "\"tflops\" must be a finite number >= 0";
      return false;
    }
  } else {
    e.tflops = flops / (e.ms * 1e9);
  }
  return true;
}

inline bool parse_identity(const json::Value& v, CacheEntry& e, std::string& why) {
  auto bad = [&](std::string w) {
    why = std::move(w);
    return false;
  };
  if (!v.get_string("device", e.id.device) || !printable(e.id.device, 512)) return bad("missing or malformed \"device\"");
  if (!v.get_string("ktune", e.id.version) || !printable(e.id.version, 64)) return bad("missing or malformed \"ktune\" version");
  if (!v.get_string("families", e.id.families) || !printable(e.id.families, 64)) return bad("missing or malformed \"families\" hash");
  return true;
}

}  // namespace detail

// A conv2d line (after "op" was read) → a self-consistent entry, or false with the reason. Accepts
// only keys a validated call can have: sizes in [1, 2^30), padding in [0, 2^30), a positive output,
// f16/bf16 operands with their mma math, power-of-two alignments within 16 bytes that divide what
// they describe (C for x, R·S·C for w, K for the output group).
inline bool parse_conv_entry(const json::Value& v, CacheEntry& e, std::string& why) {
  auto bad = [&](std::string w) {
    why = std::move(w);
    return false;
  };
  e.key = ProblemKey{};
  e.key.op = OpKind::conv2d;
  ConvKey& k = e.conv;
  k = ConvKey{};
  std::string s;
  static constexpr DType in_types[] = {DType::f16, DType::bf16};
  static constexpr DType out_types[] = {DType::f32, DType::f16, DType::bf16};
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  if (!v.get_string("x", s) || !detail::parse_enum(s, in_types, k.x_type)) return bad("missing or unknown \"x\" type (f16 or bf16)");
  if (!v.get_string("y", s) || !detail::parse_enum(s, out_types, k.y_type)) return bad("missing or unknown \"y\" type");
  if (!v.get_string("math", s) || !detail::parse_enum(s, maths, k.math)) return bad("missing or unknown conv \"math\"");
  if (operand_type(k.math) != k.x_type) return bad("\"math\" " + std::string(to_string(k.math)) + " does not take " + std::string(to_string(k.x_type)) + " operands");
  if (!v.get_string("epilogue", s) || !parse_epilogue_tag(s, k.epi_flags, k.activation)) return bad("missing or unknown \"epilogue\" tag");
  constexpr std::int64_t lim = std::int64_t{1} << 30;
  struct Field {
    const char* name;
    std::int32_t* out;
    std::int64_t lo;
  };
  const Field fields[] = {{"n", &k.n, 1},           {"h", &k.h, 1},           {"w", &k.w, 1},           {"c", &k.c, 1},
                          {"k", &k.k, 1},           {"r", &k.r, 1},           {"s", &k.s, 1},           {"pad_h", &k.pad_h, 0},
                          {"pad_w", &k.pad_w, 0},   {"stride_h", &k.stride_h, 1}, {"stride_w", &k.stride_w, 1},
                          {"dil_h", &k.dil_h, 1},   {"dil_w", &k.dil_w, 1}};
  for (const Field& f : fields) {
    std::int64_t x = 0;
    if (!v.get_int(f.name, x)) return bad(std::string("\"") + f.name + "\" must be an integer");
    if (x < f.lo || x >= lim) return bad(std::string("\"") + f.name + "\" out of range [" + std::to_string(f.lo) + ", 2^30)");
    *f.out = static_cast<std::int32_t>(x);
  }
  std::int64_t al[3];
  if (!v.get_int("align_x", al[0]) || !v.get_int("align_w", al[1]) || !v.get_int("align_y", al[2])) return bad("alignments must be integers");
  const int max_x = 16 / size_of(k.x_type), max_y = 16 / size_of(k.y_type);
  for (int i = 0; i < 3; ++i) {
    const std::int64_t a = al[i], cap = i < 2 ? max_x : max_y;
    if (a < 1 || a > cap || (a & (a - 1)) != 0) return bad("alignment " + std::to_string(a) + " is not a power of two in [1, " + std::to_string(cap) + "]");
  }
  k.align_x = static_cast<std::uint8_t>(al[0]);
  k.align_w = static_cast<std::uint8_t>(al[1]);
  k.align_y = static_cast<std::uint8_t>(al[2]);
  // Self-consistency: the problem validates (with suitably aligned pointers), and the alignment
  // classes divide the extents they were computed from.
  const Conv2dDesc d = conv_desc_of(k);
  if (k.c % k.align_x != 0 || (std::int64_t{k.r} * k.s * k.c) % k.align_w != 0 || k.k % k.align_y != 0)
    return bad("alignment classes do not divide C, R*S*C and K");
  {
    // Fake, well-separated, 16-byte aligned addresses: only validate()'s size rules apply.
    Conv2dOperands ops;
    const std::uintptr_t gap = std::uintptr_t{1} << 40;
    ops.x = reinterpret_cast<const void*>(gap);
    ops.w = reinterpret_cast<const void*>(2 * gap);
    ops.y = reinterpret_cast<void*>(3 * gap);
    ops.bias = reinterpret_cast<const void*>(4 * gap);
    ops.residual = reinterpret_cast<const void*>(5 * gap);
    if (Status st = validate(d, ops); !st.ok()) return bad("not a valid conv2d problem: " + st.message());
  }
  if (!v.get_string("instance", e.instance) || !detail::plausible_name(e.instance, 200)) return bad("missing or malformed \"instance\"");
  e.launch.clear();
  if (v.get("launch") != nullptr) {
    ConvLaunchOptions lo;
    std::string why_launch;
    if (!v.get_string("launch", e.launch)) return bad("\"launch\" must be a string");
    if (e.launch.empty() || e.launch.size() > 100 || !parse_conv_launch_suffix(e.launch, lo, why_launch))
      return bad("malformed \"launch\": " + (e.launch.empty() ? std::string("empty (omit it for default options)") : why_launch));
  }
  if (!detail::parse_timing(v, e, conv_flops(k), why)) return false;
  return detail::parse_identity(v, e, why);
}

// A parsed JSON object → a self-consistent entry, or false with the reason.
inline bool parse_entry(const json::Value& v, CacheEntry& e, std::string& why) {
  auto bad = [&](std::string w) {
    why = std::move(w);
    return false;
  };
  if (!v.is_object()) return bad("not a JSON object");
  std::string s;
  ProblemKey& k = e.key;
  k = ProblemKey{};
  if (!v.get_string("op", s)) return bad("missing or non-string \"op\"");
  e.conv = ConvKey{};
  if (s == "conv2d") return parse_conv_entry(v, e, why);
  if (s != "gemm") return bad("unknown op \"" + s + "\"");
  k.op = OpKind::gemm;
  static constexpr DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  static constexpr MathOp maths[] = {MathOp::simt_f32, MathOp::mma_f16, MathOp::mma_bf16, MathOp::mma_tf32};
  static constexpr Layout layouts[] = {Layout::row, Layout::col};
  static constexpr MBucketing buckets[] = {MBucketing::exact, MBucketing::pow2};
  if (!v.get_string("ab", s) || !detail::parse_enum(s, dtypes, k.ab_type)) return bad("missing or unknown \"ab\" type");
  if (!v.get_string("d", s) || !detail::parse_enum(s, dtypes, k.d_type)) return bad("missing or unknown \"d\" type");
  if (!v.get_string("math", s) || !detail::parse_enum(s, maths, k.math)) return bad("missing or unknown \"math\"");
  if (operand_type(k.math) != k.ab_type) return bad("\"math\" " + std::string(to_string(k.math)) + " does not take " + std::string(to_string(k.ab_type)) + " operands");
  if (!v.get_string("a", s) || !detail::parse_enum(s, layouts, k.a_layout)) return bad("missing or unknown layout \"a\"");
  if (!v.get_string("b", s) || !detail::parse_enum(s, layouts, k.b_layout)) return bad("missing or unknown layout \"b\"");
  if (!v.get_string("epilogue", s) || !parse_epilogue_tag(s, k.epi_flags, k.activation)) return bad("missing or unknown \"epilogue\" tag");
  constexpr std::int64_t max_dim = (std::int64_t{1} << 31) - 1;
  if (!v.get_int("m", k.m) || !v.get_int("n", k.n) || !v.get_int("k", k.k)) return bad("\"m\", \"n\" and \"k\" must be integers");
  if (k.m < 1 || k.n < 1 || k.k < 1 || k.m > max_dim + 1 || k.n > max_dim || k.k > max_dim) return bad("dimension out of range [1, 2^31)");
  if (!v.get_int("batch", k.batch) || k.batch < 1 || k.batch > max_dim) return bad("\"batch\" must be an integer >= 1");
  if (!v.get_string("m_bucket", s) || !detail::parse_enum(s, buckets, k.m_bucketing)) return bad("missing or unknown \"m_bucket\"");
  // pow2 bucketing rounds M up: M in (2^30, 2^31) is keyed as 2^31, the one bucket bound above max_dim.
  if (k.m > max_dim && k.m_bucketing != MBucketing::pow2) return bad("dimension out of range [1, 2^31)");
  if (bucket_m(k.m, k.m_bucketing) != k.m) return bad("\"m\" is not a bucket bound of \"" + s + "\" bucketing");
  std::int64_t al[3];
  if (!v.get_int("align_a", al[0]) || !v.get_int("align_b", al[1]) || !v.get_int("align_d", al[2])) return bad("alignments must be integers");
  const int max_ab = 16 / size_of(k.ab_type), max_d = 16 / size_of(k.d_type);
  for (int i = 0; i < 3; ++i) {
    const std::int64_t a = al[i], lim = i < 2 ? max_ab : max_d;
    if (a < 1 || a > lim || (a & (a - 1)) != 0) return bad("alignment " + std::to_string(a) + " is not a power of two in [1, " + std::to_string(lim) + "]");
  }
  k.align_a = static_cast<std::uint8_t>(al[0]);
  k.align_b = static_cast<std::uint8_t>(al[1]);
  k.align_d = static_cast<std::uint8_t>(al[2]);
  if (!v.get_string("instance", e.instance) || !detail::plausible_name(e.instance, 200)) return bad("missing or malformed \"instance\"");
  e.launch.clear();
  if (v.get("launch") != nullptr) {
    GemmLaunchOptions lo;
    std::string why_launch;
    if (!v.get_string("launch", e.launch)) return bad("\"launch\" must be a string");
    if (e.launch.empty() || e.launch.size() > 100 || !parse_launch_suffix(e.launch, lo, why_launch))
      return bad("malformed \"launch\": " + (e.launch.empty() ? std::string("empty (omit it for default options)") : why_launch));
  }
  if (!detail::parse_timing(v, e, 2.0 * double(k.m) * double(k.n) * double(k.k) * double(k.batch), why)) return false;
  return detail::parse_identity(v, e, why);
}

inline bool parse_entry_line(std::string_view line, CacheEntry& e, std::string& why) {
  json::Value v;
  if (!json::parse(line, v, why)) return false;
  return parse_entry(v, e, why);
}

// ---- A set of entries ----------------------------------------------------------------------------------

class CacheStore {
 public:
  // Adds or replaces (same key and identity: the better entry stays). True when the store changed.
  bool insert(const CacheEntry& e) {
    auto [it, inserted] = map_.try_emplace(Key{e.key, e.conv, e.id}, e);
    if (inserted) return true;
    if (e.better_than(it->second)) {
      it->second = e;
      return true;
    }
    return false;
  }
  // Merge another store: TensorRT's `combine` — same key keeps the faster entry.
  std::size_t merge(const CacheStore& other) {
    std::size_t changed = 0;
    for (const auto& [k, e] : other.map_) changed += insert(e) ? 1 : 0;
    return changed;
  }
  const CacheEntry* find(const ProblemKey& key, const CacheIdentity& id) const {
    auto it = map_.find(Key{key, ConvKey{}, id});
    return it == map_.end() ? nullptr : &it->second;
  }
  const CacheEntry* find(const ConvKey& key, const CacheIdentity& id) const {
    auto it = map_.find(Key{conv_problem_key(), key, id});
    return it == map_.end() ? nullptr : &it->second;
  }
  // Any entry's own key (GEMM or conv2d).
  const CacheEntry* find(const CacheEntry& like) const {
    auto it = map_.find(Key{like.key, like.conv, like.id});
    return it == map_.end() ? nullptr : &it->second;
  }
  bool erase(const ProblemKey& key, const CacheIdentity& id) { return map_.erase(Key{key, ConvKey{}, id}) != 0; }
  bool erase(const ConvKey& key, const CacheIdentity& id) { return map_.erase(Key{conv_problem_key(), key, id}) != 0; }
  std::size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }
  void clear() { map_.clear(); }

  std::vector<const CacheEntry*> entries() const {
    std::vector<const CacheEntry*> v;
    v.reserve(map_.size());
    for (const auto& [k, e] : map_) v.push_back(&e);
    return v;
  }

  // How many entries apply to `id`, and why the others do not.
  struct Applicability {
    std::size_t applicable = 0, other_device = 0, other_version = 0, other_families = 0;
  };
  Applicability applicability(const CacheIdentity& id) const { return applicability(id, id); }
  // GEMM entries judged against `gemm`, conv2d entries against `conv` (their instance tables differ).
  Applicability applicability(const CacheIdentity& gemm, const CacheIdentity& conv) const {
    Applicability a;
    for (const auto& [k, e] : map_) {
      const CacheIdentity& id = e.is_conv() ? conv : gemm;
      if (e.id.device != id.device) ++a.other_device;
      else if (e.id.version != id.version) ++a.other_version;
      else if (e.id.families != id.families) ++a.other_families;
      else ++a.applicable;
    }
    return a;
  }

  // The whole file: header, then entries sorted by their text (stable, diff-friendly).
  std::string serialize() const {
    std::vector<std::string> lines;
    lines.reserve(map_.size());
    for (const auto& [k, e] : map_) lines.push_back(to_line(e));
    std::sort(lines.begin(), lines.end());
    std::string out = header_line() + "\n";
    for (const auto& l : lines) out += l + "\n";
    return out;
  }

 private:
  static ProblemKey conv_problem_key() {
    ProblemKey k;
    k.op = OpKind::conv2d;
    return k;
  }
  struct Key {
    ProblemKey key;
    ConvKey conv;
    CacheIdentity id;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      std::uint64_t h = k.key.op == OpKind::conv2d ? hash_value(k.conv) : hash_value(k.key);
      h = detail::fnv1a(k.id.device, h);
      h = detail::fnv1a(k.id.version, h);
      h = detail::fnv1a(k.id.families, h);
      return static_cast<std::size_t>(h);
    }
  };
  std::unordered_map<Key, CacheEntry, KeyHash> map_;
};

// ---- A file's text ---------------------------------------------------------------------------------------

enum class CacheFileKind {
  empty,          // no content: a fresh cache
  cache,          // a ktune cache of this format (possibly with rejected lines)
  foreign,        // not a ktune cache: not applied, never overwritten
  newer_format,   // a ktune cache of a newer format: not applied, never overwritten
};

struct CacheParseResult {
  CacheFileKind kind = CacheFileKind::empty;
  CacheStore store;
  std::size_t lines = 0;           // non-blank lines after the header
  std::size_t rejected = 0;        // of which rejected
  std::vector<std::string> warnings;
  bool writable() const { return kind == CacheFileKind::empty || kind == CacheFileKind::cache; }
};

// Parse a cache file's text. `origin` names it in warnings. At most `max_line_warnings` rejected lines
// are described one by one; the rest are counted.
inline CacheParseResult parse_cache_text(std::string_view text, std::string_view origin, std::size_t max_line_warnings = 8) {
  CacheParseResult r;
  const std::string where(origin);
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  bool have_header = false;
  std::size_t lineno = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    const bool last_unterminated = end == std::string_view::npos;
    if (last_unterminated) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::string at = where + ":" + std::to_string(lineno);
    if (!have_header) {
      json::Value v;
      std::string why, fmt;
      std::int64_t ver = 0;
      if (line.size() > cache_max_line_bytes || !json::parse(line, v, why) || !v.get_string("format", fmt) ||
          fmt != cache_format_name) {
        r.kind = CacheFileKind::foreign;
        r.warnings.push_back(at + ": not a ktune cache (the first line is not a {\"format\":\"ktune-cache\",...} header); "
                             "ignoring the file and leaving it untouched");
        return r;
      }
      if (!v.get_int("version", ver) || ver < 1) {
        r.kind = CacheFileKind::foreign;
        r.warnings.push_back(at + ": ktune cache header has no valid \"version\"; ignoring the file and leaving it untouched");
        return r;
      }
      if (ver > cache_format_version) {
        r.kind = CacheFileKind::newer_format;
        r.warnings.push_back(at + ": ktune cache format version " + std::to_string(ver) + " is newer than this build's (" +
                             std::to_string(cache_format_version) + "); ignoring the file and leaving it untouched");
        return r;
      }
      if (ver < cache_oldest_readable_version) {
        r.kind = CacheFileKind::foreign;
        r.warnings.push_back(at + ": unknown ktune cache format version " + std::to_string(ver) + "; ignoring the file");
        return r;
      }
      have_header = true;
      r.kind = CacheFileKind::cache;
      continue;
    }
    ++r.lines;
    std::string why;
    CacheEntry e;
    bool ok = false;
    if (line.size() > cache_max_line_bytes) {
      why = "line longer than " + std::to_string(cache_max_line_bytes) + " bytes";
    } else {
      json::Value v;
      ok = json::parse(line, v, why);
      if (ok) {
        std::string fmt;
        if (v.get_string("format", fmt)) {  // a second header (concatenated files)
          std::int64_t ver = 0;
          if (fmt == cache_format_name && v.get_int("version", ver) && ver >= cache_oldest_readable_version &&
              ver <= cache_format_version) {
            --r.lines;
            continue;
          }
          ok = false;
          why = "header of another format in the middle of the file";
        } else {
          ok = parse_entry(v, e, why);
        }
      }
      if (!ok && last_unterminated) why += " (last line has no newline: truncated file?)";
    }
    if (!ok) {
      ++r.rejected;
      if (r.rejected <= max_line_warnings) r.warnings.push_back(at + ": rejected cache line: " + why);
      continue;
    }
    r.store.insert(e);
  }
  if (r.rejected > max_line_warnings)
    r.warnings.push_back(where + ": " + std::to_string(r.rejected - max_line_warnings) + " more rejected lines not shown");
  if (r.kind == CacheFileKind::cache && r.rejected > 0)
    r.warnings.push_back(where + ": " + std::to_string(r.rejected) + " of " + std::to_string(r.lines) +
                         " entries rejected; the rest are used, and the rejected lines will be dropped at the next save");
  return r;
}

// ---- Files -------------------------------------------------------------------------------------------------

namespace detail {

inline Status io_error(const std::string& what, const std::string& path, int err) {
  return error(StatusCode::cache_error, what + " '" + path + "': " + std::strerror(err));
}

// Whole file into `out`. A missing file is `exists = false` and ok.
inline Status read_file(const std::string& path, std::string& out, bool& exists) {
  out.clear();
  exists = false;
  // O_NONBLOCK: opening a FIFO (or a device) for reading would otherwise wait for a writer, forever;
  // it has no effect on the regular file, the only kind read below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return {};
    return io_error("cannot open tuning cache", path, errno);
  }
  exists = true;
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error("cannot stat tuning cache", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(StatusCode::cache_error, "tuning cache '" + path + "' is not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > cache_max_file_bytes) {
    ::close(fd);
    return error(StatusCode::cache_error, "tuning cache '" + path + "' is larger than " +
                                              std::to_string(cache_max_file_bytes >> 20) + " MiB; not reading it");
  }
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("cannot read tuning cache", path, err);
    }
    if (n == 0) break;  // shrank while reading
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  ::close(fd);
  return {};
}

inline Status write_all(int fd, std::string_view s, const std::string& path) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot write", path, errno);
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

// Exclusive advisory lock on "<path>.lock", held for the object's life.
class FileLock {
 public:
  FileLock() = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  Status acquire(const std::string& lock_path, double timeout_s) {
    fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return io_error("cannot create lock file", lock_path, errno);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return {};
      if (errno != EWOULDBLOCK && errno != EINTR) return io_error("cannot lock", lock_path, errno);
      if (std::chrono::steady_clock::now() > deadline)
        return error(StatusCode::cache_error, "timed out waiting for the lock on '" + lock_path + "'");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  int fd_ = -1;
};

}  // namespace detail

// Load a cache file into `into` (merging). Missing file: ok, nothing loaded. Warnings describe every
// problem; the returned Status is not ok only when the file could not be read at all. `kind` (optional)
// tells whether the file may later be overwritten.
inline Status load_cache_file(const std::string& path, CacheStore& into, std::vector<std::string>& warnings,
                              CacheFileKind* kind = nullptr) {
  std::string text;
  bool exists = false;
  Status s = detail::read_file(path, text, exists);
  if (kind) *kind = CacheFileKind::empty;
  if (!s.ok()) {
    if (kind) *kind = CacheFileKind::foreign;
    warnings.push_back(s.message() + "; tuning proceeds without it");
    return s;
  }
  if (!exists) return {};
  CacheParseResult r = parse_cache_text(text, path);
  for (auto& w : r.warnings) warnings.push_back(std::move(w));
  if (kind) *kind = r.kind;
  into.merge(r.store);
  return {};
}

// Merge `store` with what is on disk now and replace the file atomically. On return `store` also holds
// the entries other processes saved. Never overwrites a foreign or newer-format file.
inline Status save_cache_file(const std::string& path, CacheStore& store, std::vector<std::string>& warnings,
                              double lock_timeout_s = 10.0) {
  detail::FileLock lock;
  if (Status s = lock.acquire(path + ".lock", lock_timeout_s); !s.ok()) {
    warnings.push_back(s.message() + "; cache not saved");
    return s;
  }
  std::string text;
  bool exists = false;
  if (Status s = detail::read_file(path, text, exists); !s.ok()) {
    warnings.push_back(s.message() + "; cache not saved");
    return s;
  }
  if (exists) {
    CacheParseResult disk = parse_cache_text(text, path);
    if (!disk.writable()) {
      for (auto& w : disk.warnings) warnings.push_back(std::move(w));
      return error(StatusCode::cache_error, "'" + path + "' is not a ktune cache of this format; not overwriting it");
    }
    store.merge(disk.store);
  }
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    Status s = detail::io_error("cannot create", tmp, errno);
    warnings.push_back(s.message() + "; cache not saved");
    return s;
  }
  Status s = detail::write_all(fd, store.serialize(), tmp);
  if (s.ok() && ::fsync(fd) != 0) (void)(s = detail::io_error("cannot fsync", tmp, errno));
  if (::close(fd) != 0 && s.ok()) (void)(s = detail::io_error("cannot close", tmp, errno));
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) (void)(s = detail::io_error("cannot rename onto", path, errno));
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    warnings.push_back(s.message() + "; cache not saved");
  }
  return s;
}

}  // namespace ktune::tuner
