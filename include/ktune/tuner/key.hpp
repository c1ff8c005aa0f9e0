// ktune/tuner/key.hpp — the tuning problem key: everything about a call that can change which
// instance is fastest or which instances can run it, and nothing else.
//
//   op, A/B element type, D element type, math, layouts of A and B, epilogue kind (flags, not the
//   alpha/beta/clamp values), M (optionally bucketed), N, K, batch, alignment class of A, B and
//   the output group (C, D, bias, residual), as the vector widths `alignment_of` computes from
//   every pointer, leading dimension and contiguous extent.
//
// A key is a small trivially-copyable value: building and hashing it costs a few nanoseconds and no
// allocation, so the dispatch hot path can afford it on every call. Two keys that compare equal
// always get the same answer from `can_implement` (it depends only on math, layouts and alignment
// classes) — which is why a pinned winner can be reused without re-checking.
//
// Conv2d keys (ConvKey): element types, math, epilogue kind, N, H, W, C, K, R, S, padding, stride,
// dilation and the alignment classes of x, w and the output group (y, bias, residual), as
// ktune::alignment_of(Conv2dDesc, Conv2dOperands) computes them. A separate type, so the GEMM key and
// its hot path stay exactly as they were; the cache file holds both kinds of line ("op").
//
// Also here: the identity of the build that wrote a cache entry (ktune version + a hash of the
// instance table), so a cache is never applied to a different build.
#pragma once
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include <algorithm>

#include "ktune/conv/problem.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/epilogue/spec.hpp"
#include "ktune/problem.hpp"
#include "ktune/types.hpp"

#ifndef KTUNE_VERSION_STRING
#define KTUNE_VERSION_STRING "0.1.0"
#endif

namespace ktune::tuner {

// The ktune version written into (and required of) every cache entry.
inline constexpr std::string_view ktune_version = KTUNE_VERSION_STRING;

enum class OpKind : std::uint8_t { gemm = 0, conv2d = 1 };
constexpr std::string_view to_string(OpKind o) { return o == OpKind::gemm ? "gemm" : o == OpKind::conv2d ? "conv2d" : "?"; }

// How M enters the key. `pow2` rounds M up to the next power of two, so an application with many
// different M (variable batch × sequence) tunes once per octave instead of once per M; the tuning
// itself runs on the M of the first call that lands in the bucket.
enum class MBucketing : std::uint8_t { exact = 0, pow2 = 1 };
constexpr std::string_view to_string(MBucketing b) { return b == MBucketing::pow2 ? "pow2" : "exact"; }

constexpr std::int64_t bucket_m(std::int64_t m, MBucketing b) {
  if (b == MBucketing::exact || m <= 1) return m;
  return static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(m)));
}

// Epilogue kind flags, matching EpilogueSpec::tag() exactly (see epilogue_tag()).
namespace epi {
inline constexpr std::uint8_t alpha = 1;     // alpha != 1, beta == 0      ("alpha")
inline constexpr std::uint8_t beta = 2;      // beta != 0 (reads C)        ("ab")
inline constexpr std::uint8_t bias = 4;      //                            ("bias")
inline constexpr std::uint8_t residual = 8;  //                            ("res")
inline constexpr std::uint8_t clamp = 16;    //                            ("clamp")
}  // namespace epi

struct ProblemKey {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  OpKind op = OpKind::gemm;
  DType ab_type = DType::f16;
  DType d_type = DType::f16;
  MathOp math = MathOp::mma_f16;
  Layout a_layout = Layout::row;
  Layout b_layout = Layout::row;
  std::uint8_t epi_flags = 0;
  Activation activation = Activation::none;
  MBucketing m_bucketing = MBucketing::exact;
  std::uint8_t align_a = 1, align_b = 1, align_d = 1;  // vector widths in elements

  friend constexpr bool operator==(const ProblemKey&, const ProblemKey&) = default;
};

namespace detail {
constexpr std::uint64_t mix64(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
constexpr std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace detail

// Field-wise hash (padding never enters it).
constexpr std::uint64_t hash_value(const ProblemKey& k) {
  const std::uint64_t small = std::uint64_t(k.op) | std::uint64_t(k.ab_type) << 8 | std::uint64_t(k.d_type) << 16 |
                              std::uint64_t(k.math) << 24 | std::uint64_t(k.a_layout) << 32 |
                              std::uint64_t(k.b_layout) << 36 | std::uint64_t(k.epi_flags) << 40 |
                              std::uint64_t(k.activation) << 48 | std::uint64_t(k.m_bucketing) << 56 |
                              std::uint64_t(k.align_a & 0x1f) << 59;
  std::uint64_t h = detail::mix64(small ^ (std::uint64_t(k.align_b) << 5 | std::uint64_t(k.align_d) << 13));
  h = detail::mix64(h ^ static_cast<std::uint64_t>(k.m));
  h = detail::mix64(h ^ static_cast<std::uint64_t>(k.n));
  h = detail::mix64(h ^ static_cast<std::uint64_t>(k.k));
  h = detail::mix64(h ^ static_cast<std::uint64_t>(k.batch));
  return h;
}

struct ProblemKeyHash {
  std::size_t operator()(const ProblemKey& k) const noexcept { return static_cast<std::size_t>(hash_value(k)); }
};

constexpr std::uint8_t epilogue_flags(const EpilogueSpec& e) {
  std::uint8_t f = 0;
  if (e.alpha != 1.0f || e.beta != 0.0f) f |= e.beta != 0.0f ? epi::beta : epi::alpha;
  if (e.bias) f |= epi::bias;
  if (e.residual) f |= epi::residual;
  if (e.clamp) f |= epi::clamp;
  return f;
}

// The key of a (validated) problem. No allocation, no string building: safe for the hot path.
inline ProblemKey make_key(const GemmDesc& d, const GemmAlignment& al, MBucketing b = MBucketing::exact) {
  ProblemKey k;
  k.m = bucket_m(d.m, b);
  k.n = d.n;
  k.k = d.k;
  k.batch = 1;
  k.op = OpKind::gemm;
  k.ab_type = d.ab_type;
  k.d_type = d.d_type;
  k.math = required_math(d);
  k.a_layout = d.a_layout;
  k.b_layout = d.b_layout;
  k.epi_flags = epilogue_flags(d.epilogue);
  k.activation = d.epilogue.activation;
  k.m_bucketing = b;
  k.align_a = static_cast<std::uint8_t>(al.a);
  k.align_b = static_cast<std::uint8_t>(al.b);
  k.align_d = static_cast<std::uint8_t>(al.d);
  return k;
}

// An epilogue with these key flags and representative values: alpha 1.5 / beta 0.5 when the flags
// ask for them, clamp [-4, 4] (GEMM and conv keys).
inline EpilogueSpec representative_epilogue(std::uint8_t flags, Activation act) {
  EpilogueSpec e;
  if (flags & epi::alpha) e.alpha = 1.5f;
  if (flags & epi::beta) {
    e.alpha = 1.5f;
    e.beta = 0.5f;
  }
  e.bias = (flags & epi::bias) != 0;
  e.residual = (flags & epi::residual) != 0;
  e.clamp = (flags & epi::clamp) != 0;
  if (e.clamp) {
    e.clamp_lo = -4.0f;
    e.clamp_hi = 4.0f;
  }
  e.activation = act;
  return e;
}

// A problem description that has this key (used to re-check cache entries with can_implement, to
// tune pending keys and to pre-tune offline). Epilogue values are representative: alpha 1.5 /
// beta 0.5 when the flags ask for them, clamp [-4, 4].
inline GemmDesc desc_of(const ProblemKey& k) {
  GemmDesc d;
  d.m = k.m;
  d.n = k.n;
  d.k = k.k;
  d.ab_type = k.ab_type;
  d.d_type = k.d_type;
  d.a_layout = k.a_layout;
  d.b_layout = k.b_layout;
  d.compute = k.math == MathOp::mma_tf32 ? Compute::tf32 : Compute::f32;
  d.epilogue = representative_epilogue(k.epi_flags, k.activation);
  return resolved(d);
}

inline GemmAlignment alignment_of(const ProblemKey& k) { return GemmAlignment{k.align_a, k.align_b, k.align_d}; }

// The epilogue tag of a key, identical to EpilogueSpec::tag() of any spec with these flags.
inline std::string epilogue_tag(std::uint8_t flags, Activation act) {
  std::string s;
  auto add = [&](std::string_view p) {
    if (!s.empty()) s += '_';
    s += p;
  };
  if (flags & epi::beta) add("ab");
  else if (flags & epi::alpha) add("alpha");
  if (flags & epi::bias) add("bias");
  if (flags & epi::residual) add("res");
  if (act != Activation::none) add(to_string(act));
  if (flags & epi::clamp) add("clamp");
  return s.empty() ? "identity" : s;
}

// Inverse of epilogue_tag; accepts only the canonical spelling (so every tag has one key).
inline bool parse_epilogue_tag(std::string_view tag, std::uint8_t& flags, Activation& act) {
  flags = 0;
  act = Activation::none;
  if (tag == "identity") return true;
  std::string_view rest = tag;
  auto take = [&](std::string_view word) {
    if (rest.substr(0, word.size()) != word) return false;
    if (rest.size() > word.size() && rest[word.size()] != '_') return false;
    rest.remove_prefix(std::min(rest.size(), word.size() + 1));
    return true;
  };
  if (take("ab")) flags |= epi::beta;
  else if (take("alpha")) flags |= epi::alpha;
  if (take("bias")) flags |= epi::bias;
  if (take("res")) flags |= epi::residual;
  for (Activation a : {Activation::relu, Activation::gelu_tanh, Activation::gelu_erf, Activation::silu})
    if (take(to_string(a))) {
      act = a;
      break;
    }
  if (take("clamp")) flags |= epi::clamp;
  return rest.empty() && !tag.empty() && epilogue_tag(flags, act) == tag;
}

// One-line readable form for logs, e.g. "gemm bf16->bf16 mma_bf16 tn bias_relu m=4096 n=4096 k=4096 al=8/8/8".
inline std::string to_string(const ProblemKey& k) {
  std::string s(to_string(k.op));
  s += ' ';
  s += to_string(k.ab_type);
  s += "->";
  s += to_string(k.d_type);
  s += ' ';
  s += to_string(k.math);
  s += ' ';
  s += layout_letter(k.a_layout);
  s += layout_letter(k.b_layout);
  s += ' ';
  s += epilogue_tag(k.epi_flags, k.activation);
  s += " m=";
  if (k.m_bucketing == MBucketing::pow2) s += "<=";
  s += std::to_string(k.m) + " n=" + std::to_string(k.n) + " k=" + std::to_string(k.k);
  if (k.batch != 1) s += " batch=" + std::to_string(k.batch);
  s += " al=" + std::to_string(k.align_a) + "/" + std::to_string(k.align_b) + "/" + std::to_string(k.align_d);
  return s;
}

// ---- Conv2d keys -----------------------------------------------------------------------------------

// Everything about a conv2d call that can change which instance is fastest or which can run it. The
// sizes are those validate() accepts (each below 2^30), so 32 bits hold them.
struct ConvKey {
  std::int32_t n = 0, h = 0, w = 0, c = 0;  // input NHWC
  std::int32_t k = 0, r = 0, s = 0;         // filters KRSC
  std::int32_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  DType x_type = DType::f16;   // x and w
  DType y_type = DType::f16;   // y, bias, residual
  MathOp math = MathOp::mma_f16;
  std::uint8_t epi_flags = 0;
  Activation activation = Activation::none;
  std::uint8_t align_x = 1, align_w = 1, align_y = 1;  // vector widths in elements

  friend constexpr bool operator==(const ConvKey&, const ConvKey&) = default;
};

constexpr std::uint64_t hash_value(const ConvKey& k) {
  const std::uint64_t small = std::uint64_t(OpKind::conv2d) | std::uint64_t(k.x_type) << 8 | std::uint64_t(k.y_type) << 16 |
                              std::uint64_t(k.math) << 24 | std::uint64_t(k.epi_flags) << 32 |
                              std::uint64_t(k.activation) << 40 | std::uint64_t(k.align_x) << 48 |
                              std::uint64_t(k.align_w) << 53 | std::uint64_t(k.align_y & 0x3f) << 58;
  auto pair = [](std::int32_t a, std::int32_t b) { return std::uint64_t(std::uint32_t(a)) << 32 | std::uint32_t(b); };
  std::uint64_t h = detail::mix64(small);
  h = detail::mix64(h ^ pair(k.n, k.h));
  h = detail::mix64(h ^ pair(k.w, k.c));
  h = detail::mix64(h ^ pair(k.k, k.r));
  h = detail::mix64(h ^ pair(k.s, k.pad_h));
  h = detail::mix64(h ^ pair(k.pad_w, k.stride_h));
  h = detail::mix64(h ^ pair(k.stride_w, k.dil_h));
  h = detail::mix64(h ^ std::uint64_t(std::uint32_t(k.dil_w)));
  return h;
}

struct ConvKeyHash {
  std::size_t operator()(const ConvKey& k) const noexcept { return static_cast<std::size_t>(hash_value(k)); }
};

// The key of a validated conv problem. No allocation: safe for the hot path.
inline ConvKey make_conv_key(const Conv2dDesc& d, const ConvAlignment& al) {
  ConvKey k;
  k.n = static_cast<std::int32_t>(d.n);
  k.h = static_cast<std::int32_t>(d.h);
  k.w = static_cast<std::int32_t>(d.w);
  k.c = static_cast<std::int32_t>(d.c);
  k.k = static_cast<std::int32_t>(d.k);
  k.r = static_cast<std::int32_t>(d.r);
  k.s = static_cast<std::int32_t>(d.s);
  k.pad_h = static_cast<std::int32_t>(d.pad_h);
  k.pad_w = static_cast<std::int32_t>(d.pad_w);
  k.stride_h = static_cast<std::int32_t>(d.stride_h);
  k.stride_w = static_cast<std::int32_t>(d.stride_w);
  k.dil_h = static_cast<std::int32_t>(d.dil_h);
  k.dil_w = static_cast<std::int32_t>(d.dil_w);
  k.x_type = d.type;
  k.y_type = d.out_type;
  k.math = required_math(d);
  k.epi_flags = epilogue_flags(d.epilogue);
  k.activation = d.epilogue.activation;
  k.align_x = static_cast<std::uint8_t>(al.x);
  k.align_w = static_cast<std::uint8_t>(al.w);
  k.align_y = static_cast<std::uint8_t>(al.y);
  return k;
}

// A problem with this key (cache entries re-checked with can_implement, pending keys, offline
// tuning). Epilogue values are representative, as in desc_of.
inline Conv2dDesc conv_desc_of(const ConvKey& k) {
  Conv2dDesc d;
  d.n = k.n;
  d.h = k.h;
  d.w = k.w;
  d.c = k.c;
  d.k = k.k;
  d.r = k.r;
  d.s = k.s;
  d.pad_h = k.pad_h;
  d.pad_w = k.pad_w;
  d.stride_h = k.stride_h;
  d.stride_w = k.stride_w;
  d.dil_h = k.dil_h;
  d.dil_w = k.dil_w;
  d.type = k.x_type;
  d.out_type = k.y_type;
  d.epilogue = representative_epilogue(k.epi_flags, k.activation);
  return d;
}

inline ConvAlignment conv_alignment_of(const ConvKey& k) { return ConvAlignment{k.align_x, k.align_w, k.align_y}; }

// Multiply-adds × 2 of the convolution (for TF/s).
inline double conv_flops(const ConvKey& k) {
  const Conv2dDesc d = conv_desc_of(k);
  const ConvShape s = conv_shape(d);
  return 2.0 * double(s.m) * double(d.k) * double(s.kgemm);
}

// e.g. "conv2d f16->f16 mma_f16 bias_relu n=32 h=56 w=56 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dil=1x1 al=8/8/8".
inline std::string to_string(const ConvKey& k) {
  auto n = [](std::int32_t v) { return std::to_string(v); };
  std::string s = "conv2d ";
  s += to_string(k.x_type);
  s += "->";
  s += to_string(k.y_type);
  s += ' ';
  s += to_string(k.math);
  s += ' ';
  s += epilogue_tag(k.epi_flags, k.activation);
  s += " n=" + n(k.n) + " h=" + n(k.h) + " w=" + n(k.w) + " c=" + n(k.c) + " k=" + n(k.k) + " r=" + n(k.r) + " s=" + n(k.s);
  s += " pad=" + n(k.pad_h) + "x" + n(k.pad_w) + " stride=" + n(k.stride_h) + "x" + n(k.stride_w) + " dil=" + n(k.dil_h) + "x" +
       n(k.dil_w);
  s += " al=" + std::to_string(k.align_x) + "/" + std::to_string(k.align_w) + "/" + std::to_string(k.align_y);
  return s;
}

// Hash of the instance table's contents (family and instance names, order-independent), as 16 hex
// digits. A cache written by a build with a different set of instances is not applied: a faster
// instance may have been added since.
// Conv entries use conv_family_hash (the conv table's contents, under another seed).
template <class Table>
std::string table_hash(const Table& table, std::string_view seed) {
  std::vector<std::string> names;
  names.reserve(table.size());
  for (const auto& e : table.entries()) names.push_back(std::string(e.family) + "/" + std::string(e.name));
  std::sort(names.begin(), names.end());
  std::uint64_t h = detail::fnv1a(seed);
  for (const auto& n : names) h = detail::fnv1a(n, detail::fnv1a("\n", h));
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = hex[h & 15];
  return out;
}

inline std::string family_hash(const GemmTable& table) { return table_hash(table, "ktune-families-v1"); }

}  // namespace ktune::tuner
