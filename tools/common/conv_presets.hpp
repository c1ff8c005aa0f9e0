// tools/common/conv_presets.hpp — conv2d problems as the conv benchmarks name them: the 15 ResNet-50
// layers of shared/ANCHORS.md (with cuDNN's measured times there), the C = 3 stem, a problem's label
// and benchmark path, and the lines of a user's conv shapes file. Host-only, header-only: no CUDA
// calls, so it builds into host tests and tools alike.
//
// Shapes file, one problem per line ('#' starts a comment, blank lines are skipped):
//
//   N H W C K R S [stride [pad]] [f16|bf16]
//
// square strides and paddings (stride default 1, pad default R/2 and S/2: "same" for odd filters);
// the element type defaults to the caller's. Every problem gets the fused bias + ReLU epilogue.
#pragma once
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/conv/problem.hpp"

namespace ktune::tools {

// A square ResNet layer: H = W = hw, C → K channels, an rs × rs filter, padding rs / 2.
struct ConvLayer {
  int hw, c, k, rs, stride;
  double anchor_fused_us, anchor_unfused_us;  // cuDNN at N = 32, shared/ANCHORS.md (0: not listed)
};

// The 15 ResNet-50 layers of shared/ANCHORS.md, in its order (the stem with C padded to 4).
inline const std::vector<ConvLayer>& resnet50_layers() {
  static const std::vector<ConvLayer> layers = {
      {224, 4, 64, 7, 2, 60.3, 211}, {56, 64, 64, 1, 1, 7.5, 113},    {56, 64, 64, 3, 1, 24.4, 55},
      {56, 64, 256, 1, 1, 28.6, 166}, {56, 256, 64, 1, 1, 18.4, 48},   {56, 256, 128, 1, 1, 32.8, 78},
      {28, 128, 128, 3, 1, 17.1, 34}, {28, 128, 512, 1, 1, 11.7, 234}, {28, 512, 128, 1, 1, 10.2, 175},
      {14, 256, 256, 3, 1, 16.9, 28}, {14, 1024, 256, 1, 1, 8.1, 18},  {14, 256, 1024, 1, 1, 10.1, 191},
      {7, 512, 512, 3, 1, 16.2, 23},  {7, 2048, 512, 1, 1, 7.4, 14},   {7, 512, 2048, 1, 1, 8.1, 25}};
  return layers;
}

// The stem as the network has it (C = 3: only the few-channels instances accept it).
inline constexpr ConvLayer resnet50_stem_c3{224, 3, 64, 7, 2, 0, 0};

// conv2d fprop with the fused bias + ReLU epilogue, the output in the input's type.
inline Conv2dDesc conv_problem(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t k,
                               std::int64_t r, std::int64_t s, std::int64_t stride, std::int64_t pad_h,
                               std::int64_t pad_w, DType type) {
  return Conv2dDesc{.n = n, .h = h, .w = w, .c = c, .k = k, .r = r, .s = s, .pad_h = pad_h, .pad_w = pad_w,
                    .stride_h = stride, .stride_w = stride, .type = type, .out_type = type,
                    .epilogue = bias_activation(Activation::relu)};
}

inline Conv2dDesc conv_problem(std::int64_t n, const ConvLayer& l, DType type) {
  return conv_problem(n, l.hw, l.hw, l.c, l.k, l.rs, l.rs, l.stride, l.rs / 2, l.rs / 2, type);
}

// "56 64->64 3x3 s1" (ktune-conv-bench's layer label; H×W when not square, the padding when not R/2).
inline std::string conv_label(const Conv2dDesc& d) {
  std::string s = d.h == d.w ? std::to_string(d.h) : std::to_string(d.h) + "x" + std::to_string(d.w);
  s += " " + std::to_string(d.c) + "->" + std::to_string(d.k) + " " + std::to_string(d.r) + "x" + std::to_string(d.s) +
       " s" + std::to_string(d.stride_h);
  if (d.pad_h != d.r / 2 || d.pad_w != d.s / 2) s += " p" + std::to_string(d.pad_h);
  return s;
}

// "f16/n32/56x56_64to64_3x3_s1" (+ "_p<pad>" when the padding is not R/2): a Google Benchmark name
// prefix without spaces, filterable by type, batch or layer.
inline std::string conv_path(const Conv2dDesc& d) {
  std::string s = std::string(to_string(d.type)) + "/n" + std::to_string(d.n) + "/" + std::to_string(d.h) + "x" +
                  std::to_string(d.w) + "_" + std::to_string(d.c) + "to" + std::to_string(d.k) + "_" +
                  std::to_string(d.r) + "x" + std::to_string(d.s) + "_s" + std::to_string(d.stride_h);
  if (d.pad_h != d.r / 2 || d.pad_w != d.s / 2) s += "_p" + std::to_string(d.pad_h);
  return s;
}

// 2·M·N·K of the implicit GEMM (M = N·P·Q, N = K, K = R·S·C).
inline double conv_flops(const Conv2dDesc& d) {
  const ConvShape s = conv_shape(d);
  return 2.0 * double(s.m) * double(d.k) * double(s.kgemm);
}

// Bytes that must move at least once: x, w, y and the bias.
inline double conv_bytes(const Conv2dDesc& d) {
  const ConvShape s = conv_shape(d);
  return double(s.x_elems + s.w_elems) * size_of(d.type) + double(s.y_elems + d.k) * size_of(d.out_type);
}

// Distinct, 256-byte aligned, far apart (never dereferenced): for validate() and alignment_of() before
// any buffer exists, as cudaMalloc'd buffers would be.
inline Conv2dOperands placeholder_conv_operands() {
  auto at = [](int i) { return reinterpret_cast<void*>(std::uintptr_t(i) << 40); };
  return Conv2dOperands{at(1), at(2), at(3), at(4), at(5)};
}

// One line of a conv shapes file (comment already removed). Empty → nullopt with `why` empty; a bad
// line → nullopt with `why` saying what is wrong.
inline std::optional<Conv2dDesc> parse_conv_line(std::string_view line, DType default_type, std::string& why) {
  why.clear();
  std::vector<std::int64_t> v;
  std::optional<DType> type;
  std::istringstream in{std::string(line)};
  for (std::string tok; in >> tok;) {
    if (tok == "f16" || tok == "fp16") {
      type = DType::f16;
      continue;
    }
    if (tok == "bf16") {
      type = DType::bf16;
      continue;
    }
    std::int64_t x = 0;
    const auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), x);
    if (ec != std::errc{} || end != tok.data() + tok.size() || x < 0 || x > (std::int64_t{1} << 31)) {
      why = "'" + tok + "' is neither a size nor f16/bf16";
      return std::nullopt;
    }
    v.push_back(x);
  }
  if (v.empty() && !type) return std::nullopt;
  if (v.size() < 7 || v.size() > 9) {
    why = "expected 'N H W C K R S [stride [pad]] [f16|bf16]', got " + std::to_string(v.size()) + " numbers";
    return std::nullopt;
  }
  const std::int64_t stride = v.size() > 7 ? v[7] : 1;
  const std::int64_t pad_h = v.size() > 8 ? v[8] : v[5] / 2, pad_w = v.size() > 8 ? v[8] : v[6] / 2;
  Conv2dDesc d = conv_problem(v[0], v[1], v[2], v[3], v[4], v[5], v[6], stride, pad_h, pad_w, type.value_or(default_type));
  if (const Status st = validate(d, placeholder_conv_operands()); !st.ok()) {
    why = st.message();
    return std::nullopt;
  }
  return d;
}

// ---- ktune-profile's conv problems ---------------------------------------------------------------------
//
// A conv problem on the command line (`ktune-profile --conv SPEC`) and in its shapes files:
//
//   NxHxWxC,KxRxS[,stride=S][,pad=P][,dil=D]      e.g. 32x56x56x64,64x3x3   32x224x224x4,64x7x7,stride=2
//
// S, P and D are one value for both dimensions or "VHxVW"; defaults: stride 1, dilation 1, padding
// dil·⌊R/2⌋ × dil·⌊S/2⌋ ("same" for odd filters, as the line form above). The line form
// "N H W C K R S [stride [pad]]" is accepted too. Sizes only: the element type and the epilogue come
// from the caller (--dtype, --epilogue; a shapes-file line's own fields).

inline constexpr std::string_view conv_spec_syntax =
    "NxHxWxC,KxRxS[,stride=S][,pad=P][,dil=D] (S, P, D: one value or HxW), or 'N H W C K R S [stride [pad]]'";

namespace detail {

// "V" or "VHxVW" → two values in [lo, 2^31]; false on anything else.
inline bool parse_conv_pair(std::string_view s, std::int64_t lo, std::int64_t& a, std::int64_t& b) {
  std::int64_t v[2] = {0, 0};
  int i = 0;
  std::size_t digits = 0;
  for (char ch : s) {
    if (ch >= '0' && ch <= '9') {
      if (++digits > 10) return false;
      v[i] = v[i] * 10 + (ch - '0');
    } else if ((ch == 'x' || ch == 'X') && digits > 0 && i == 0) {
      ++i;
      digits = 0;
    } else {
      return false;
    }
  }
  if (digits == 0) return false;
  if (i == 0) v[1] = v[0];
  for (std::int64_t x : v)
    if (x < lo || x > (std::int64_t{1} << 31)) return false;
  a = v[0];
  b = v[1];
  return true;
}

// "AxBxC..." with exactly `count` positive values (each ≤ 2^31).
inline bool parse_conv_dims(std::string_view s, int count, std::int64_t* out) {
  int i = 0;
  std::size_t digits = 0;
  for (int j = 0; j < count; ++j) out[j] = 0;
  for (char ch : s) {
    if (ch >= '0' && ch <= '9') {
      if (++digits > 10) return false;
      out[i] = out[i] * 10 + (ch - '0');
    } else if ((ch == 'x' || ch == 'X') && digits > 0 && i + 1 < count) {
      ++i;
      digits = 0;
    } else {
      return false;
    }
  }
  if (i + 1 != count || digits == 0) return false;
  for (int j = 0; j < count; ++j)
    if (out[j] <= 0 || out[j] > (std::int64_t{1} << 31)) return false;
  return true;
}

inline std::string conv_pair_text(std::int64_t a, std::int64_t b) {
  return a == b ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b);
}

}  // namespace detail

// The conv problem `text` stands for (SPEC or the line form), with element type `type` (x, w, y and
// bias) and epilogue `epilogue`; false with `why` saying what is wrong (also for a problem validate()
// rejects: an empty output, too large sizes).
inline bool parse_conv_spec(std::string_view text, DType type, const EpilogueSpec& epilogue, Conv2dDesc& out, std::string& why) {
  why.clear();
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
  };
  text = trim(text);
  std::int64_t nhwc[4] = {}, krs[3] = {};
  std::int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_h = -1, pad_w = -1;
  if (text.find_first_of(" \t") != std::string_view::npos) {
    // The line form: 7 to 9 numbers.
    std::vector<std::int64_t> v;
    std::istringstream in{std::string(text)};
    for (std::string tok; in >> tok;) {
      std::int64_t x = 0;
      const auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), x);
      if (ec != std::errc{} || end != tok.data() + tok.size() || x < 0 || x > (std::int64_t{1} << 31)) {
        why = "'" + tok + "' is not a size; expected " + std::string(conv_spec_syntax);
        return false;
      }
      v.push_back(x);
    }
    if (v.size() < 7 || v.size() > 9) {
      why = "expected 'N H W C K R S [stride [pad]]' (7 to 9 numbers), got " + std::to_string(v.size()) + " numbers";
      return false;
    }
    for (int i = 0; i < 4; ++i) nhwc[i] = v[i];
    for (int i = 0; i < 3; ++i) krs[i] = v[4 + i];
    if (v.size() > 7) stride_h = stride_w = v[7];
    if (v.size() > 8) pad_h = pad_w = v[8];
  } else {
    std::vector<std::string_view> parts;
    for (std::size_t pos = 0;;) {
      const std::size_t comma = text.find(',', pos);
      parts.push_back(text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
    if (parts.size() < 2 || !detail::parse_conv_dims(parts[0], 4, nhwc)) {
      why = "bad conv problem '" + std::string(text) + "': expected " + std::string(conv_spec_syntax) +
            ", e.g. 32x56x56x64,64x3x3";
      return false;
    }
    if (!detail::parse_conv_dims(parts[1], 3, krs)) {
      why = "bad filter '" + std::string(parts[1]) + "' in '" + std::string(text) + "': expected KxRxS (output channels x filter height x width), e.g. 64x3x3";
      return false;
    }
    bool seen[3] = {false, false, false};
    for (std::size_t i = 2; i < parts.size(); ++i) {
      const std::string_view t = parts[i];
      const std::size_t eq = t.find('=');
      const std::string_view name = t.substr(0, eq), value = eq == std::string_view::npos ? std::string_view() : t.substr(eq + 1);
      const int which = name == "stride" ? 0 : name == "pad" ? 1 : name == "dil" ? 2 : -1;
      if (which < 0 || eq == std::string_view::npos) {
        why = "unknown option '" + std::string(t) + "' in '" + std::string(text) + "' (stride=S, pad=P, dil=D)";
        return false;
      }
      if (seen[which]) {
        why = std::string(name) + "= given twice in '" + std::string(text) + "'";
        return false;
      }
      seen[which] = true;
      std::int64_t& a = which == 0 ? stride_h : which == 1 ? pad_h : dil_h;
      std::int64_t& b = which == 0 ? stride_w : which == 1 ? pad_w : dil_w;
      if (!detail::parse_conv_pair(value, which == 1 ? 0 : 1, a, b)) {
        why = "bad " + std::string(t) + ": expected one " + (which == 1 ? "non-negative" : "positive") +
              " value or two as HxW, e.g. " + std::string(name) + "=2 or " + std::string(name) + "=2x1";
        return false;
      }
    }
  }
  if (pad_h < 0) {
    pad_h = dil_h * (krs[1] / 2);
    pad_w = dil_w * (krs[2] / 2);
  }
  Conv2dDesc d = conv_problem(nhwc[0], nhwc[1], nhwc[2], nhwc[3], krs[0], krs[1], krs[2], stride_h, pad_h, pad_w, type);
  d.stride_w = stride_w;
  d.dil_h = dil_h;
  d.dil_w = dil_w;
  d.epilogue = epilogue;
  if (const Status st = validate(d, placeholder_conv_operands()); !st.ok()) {
    why = "conv problem '" + std::string(text) + "': " + st.message();
    return false;
  }
  out = d;
  return true;
}

// The SPEC text of a problem: "32x56x56x64,64x3x3" plus ",stride=", ",pad=", ",dil=" where they differ
// from the defaults. parse_conv_spec of it gives the same sizes.
inline std::string conv_spec_text(const Conv2dDesc& d) {
  std::string s = std::to_string(d.n) + "x" + std::to_string(d.h) + "x" + std::to_string(d.w) + "x" + std::to_string(d.c) + "," +
                  std::to_string(d.k) + "x" + std::to_string(d.r) + "x" + std::to_string(d.s);
  if (d.stride_h != 1 || d.stride_w != 1) s += ",stride=" + detail::conv_pair_text(d.stride_h, d.stride_w);
  if (d.pad_h != d.dil_h * (d.r / 2) || d.pad_w != d.dil_w * (d.s / 2)) s += ",pad=" + detail::conv_pair_text(d.pad_h, d.pad_w);
  if (d.dil_h != 1 || d.dil_w != 1) s += ",dil=" + detail::conv_pair_text(d.dil_h, d.dil_w);
  return s;
}

// ktune-profile's name of a conv problem, a valid shapes-file line: "conv f16 32x56x56x64,64x3x3 bias_relu"
// (+ " out=f32" when the output type differs). The epilogue is its tag (EpilogueSpec::tag()).
inline std::string conv_problem_name(const Conv2dDesc& d) {
  std::string s = "conv " + std::string(to_string(d.type)) + " " + conv_spec_text(d) + " " + d.epilogue.tag();
  if (d.out_type != d.type) s += " out=" + std::string(to_string(d.out_type));
  return s;
}

// ktune-profile's built-in conv problems (its main job, after the GEMM defaults): three ResNet-50
// layers at N = 32, f16, bias + ReLU, one per conv route: a 1x1 (the sm90 GEMM route), a 3x3 (TMA
// im2col / mma.sync) and the C = 4 stem (few-channels gather).
inline std::vector<Conv2dDesc> default_conv_problems() {
  return {conv_problem(32, ConvLayer{56, 256, 64, 1, 1, 0, 0}, DType::f16), conv_problem(32, ConvLayer{28, 128, 128, 3, 1, 0, 0}, DType::f16),
          conv_problem(32, resnet50_layers().front(), DType::f16)};
}

// Every problem of a shapes file; false with `why` = "<origin>:<line>: <reason>" at the first bad line.
inline bool read_conv_shapes(std::istream& in, std::string_view origin, DType default_type, std::vector<Conv2dDesc>& out,
                             std::string& why) {
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (const auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::string reason;
    if (auto d = parse_conv_line(line, default_type, reason)) {
      out.push_back(*d);
    } else if (!reason.empty()) {
      why = std::string(origin) + ":" + std::to_string(lineno) + ": " + reason;
      return false;
    }
  }
  return true;
}

}  // namespace ktune::tools
