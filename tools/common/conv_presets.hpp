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
