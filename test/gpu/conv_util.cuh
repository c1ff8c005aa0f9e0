// test/gpu/conv_util.cuh — helpers for the conv2d GPU tests: guarded device tensors (poison before,
// after and around the data), deterministic non-zero random values rounded to the storage type, a
// float64 CPU reference of conv2d fprop with the fused epilogue, and the output check (guard bands
// untouched, every element written, relative Frobenius and element-wise error within tolerance).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/conv.hpp"

namespace ktconv {
using namespace ktune;

#define KTCONV_CUDA(expr)                                                                          \
  do {                                                                                             \
    const cudaError_t ktconv_err_ = (expr);                                                        \
    REQUIRE_MESSAGE(ktconv_err_ == cudaSuccess, #expr << ": " << cudaGetErrorName(ktconv_err_));   \
  } while (0)

inline constexpr unsigned char kPoison = 0xFF;  // NaN in f32, f16 and bf16
inline constexpr std::int64_t kGuard = 256;     // poisoned elements before and after every tensor

inline void encode(DType t, unsigned char* p, double v) {
  if (t == DType::f32) {
    const float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
  } else if (t == DType::f16) {
    const __half h = __double2half(v);
    std::memcpy(p, &h, 2);
  } else {
    const __nv_bfloat16 h = __double2bfloat16(v);
    std::memcpy(p, &h, 2);
  }
}

inline double decode(DType t, const unsigned char* p) {
  if (t == DType::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (t == DType::f16) {
    __half h;
    std::memcpy(&h, p, 2);
    return __half2float(h);
  }
  __nv_bfloat16 h;
  std::memcpy(&h, p, 2);
  return __bfloat162float(h);
}

struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  std::uint64_t next() {
    s += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in ±[1e-3, 1]: no element can hide a missing term.
  double nonzero() {
    const std::uint64_t b = next();
    const double mag = 1e-3 + static_cast<double>(b >> 12) * 0x1.0p-52 * (1.0 - 1e-3);
    return (b & 1) ? -mag : mag;
  }
};

// A packed tensor of `elems` elements in `type`, `offset` extra poisoned elements in front of the data
// (to misalign it on purpose), kGuard poisoned elements on both sides.
struct Tensor {
  DType type = DType::f16;
  std::int64_t elems = 0, offset = 0;
  std::vector<double> vals;          // the values as stored
  std::vector<unsigned char> image;  // host image of the whole buffer
  unsigned char* dev = nullptr;

  Tensor() = default;
  Tensor(DType t, std::int64_t n, std::int64_t off = 0) : type(t), elems(n), offset(off) {
    vals.assign(static_cast<std::size_t>(n), 0.0);
    image.assign(bytes(), kPoison);
    KTCONV_CUDA(cudaMalloc(&dev, bytes()));
    upload();
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor(Tensor&& o) noexcept { *this = std::move(o); }
  Tensor& operator=(Tensor&& o) noexcept {
    std::swap(type, o.type);
    std::swap(elems, o.elems);
    std::swap(offset, o.offset);
    std::swap(vals, o.vals);
    std::swap(image, o.image);
    std::swap(dev, o.dev);
    return *this;
  }
  ~Tensor() {
    if (dev) cudaFree(dev);
  }
  int es() const { return size_of(type); }
  std::size_t bytes() const { return static_cast<std::size_t>(2 * kGuard + offset + elems) * es(); }
  std::size_t first() const { return static_cast<std::size_t>(kGuard + offset); }
  void* data() const { return dev + first() * es(); }
  void set(std::int64_t i, double v) {
    unsigned char* p = image.data() + (first() + static_cast<std::size_t>(i)) * es();
    encode(type, p, v);
    vals[static_cast<std::size_t>(i)] = decode(type, p);
  }
  void upload() { KTCONV_CUDA(cudaMemcpy(dev, image.data(), image.size(), cudaMemcpyHostToDevice)); }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> img(image.size());
    KTCONV_CUDA(cudaMemcpy(img.data(), dev, img.size(), cudaMemcpyDeviceToHost));
    return img;
  }
};

inline Tensor random_tensor(DType t, std::int64_t n, Rng& rng, std::int64_t offset = 0) {
  Tensor x(t, n, offset);
  for (std::int64_t i = 0; i < n; ++i) x.set(i, rng.nonzero());
  x.upload();
  return x;
}

// acc[m, k] = Σ x·w in float64 (m = (n, p, q) row-major, as y is laid out).
inline std::vector<double> reference_conv(const Conv2dDesc& d, const std::vector<double>& x, const std::vector<double>& w) {
  const ConvShape s = conv_shape(d);
  std::vector<double> acc(static_cast<std::size_t>(s.y_elems), 0.0);
  std::vector<double> patch(static_cast<std::size_t>(s.kgemm));
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t p = 0; p < s.p; ++p)
      for (std::int64_t q = 0; q < s.q; ++q) {
        std::size_t kg = 0;
        for (std::int64_t r = 0; r < d.r; ++r)
          for (std::int64_t t = 0; t < d.s; ++t) {
            const std::int64_t h = p * d.stride_h - d.pad_h + r * d.dil_h, wc = q * d.stride_w - d.pad_w + t * d.dil_w;
            const bool in = h >= 0 && h < d.h && wc >= 0 && wc < d.w;
            for (std::int64_t c = 0; c < d.c; ++c)
              patch[kg++] = in ? x[static_cast<std::size_t>(((n * d.h + h) * d.w + wc) * d.c + c)] : 0.0;
          }
        double* out = acc.data() + ((n * s.p + p) * s.q + q) * d.k;
        for (std::int64_t k = 0; k < d.k; ++k) {
          const double* wk = w.data() + k * s.kgemm;
          double sum = 0.0;
          for (std::int64_t i = 0; i < s.kgemm; ++i) sum += patch[static_cast<std::size_t>(i)] * wk[i];
          out[k] = sum;
        }
      }
  return acc;
}

inline double activation(Activation a, double x) {
  switch (a) {
    case Activation::none: return x;
    case Activation::relu: return x > 0.0 ? x : 0.0;
    case Activation::gelu_tanh: return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::gelu_erf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::silu: return x / (1.0 + std::exp(-x));
  }
  return x;
}

// y = act(alpha·acc + beta·y0 + bias[k] + residual), then clamp.
inline std::vector<double> reference_epilogue(const Conv2dDesc& d, const std::vector<double>& acc,
                                              const std::vector<double>* y0, const std::vector<double>* bias,
                                              const std::vector<double>* res) {
  const EpilogueSpec& e = d.epilogue;
  std::vector<double> out(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) {
    double v = static_cast<double>(e.alpha) * acc[i];
    if (e.beta != 0.0f) v += static_cast<double>(e.beta) * (*y0)[i];
    if (e.bias) v += (*bias)[i % static_cast<std::size_t>(d.k)];
    if (e.residual) v += (*res)[i];
    v = activation(e.activation, v);
    if (e.clamp) v = std::min(std::max(v, static_cast<double>(e.clamp_lo)), static_cast<double>(e.clamp_hi));
    out[i] = v;
  }
  return out;
}

struct Check {
  std::int64_t guard_damaged = 0, unwritten = 0;
  double err = 0.0, max_elem_err = 0.0;
  std::string first;
  bool ok(double tol) const { return guard_damaged == 0 && unwritten == 0 && err <= tol && max_elem_err <= 10 * tol; }
  std::string summary() const {
    std::ostringstream s;
    s << "rel_err=" << err << " max_elem_err=" << max_elem_err << " guard bytes damaged=" << guard_damaged
      << " unwritten=" << unwritten;
    if (!first.empty()) s << " (first: " << first << ")";
    return s.str();
  }
};

// Compare y's data with ref and its guards with poison. `init`: y's values before the call when it
// was not poisoned (beta != 0 or the residual aliases y): an element that kept it although the
// reference differs was not written.
inline Check check_output(const Tensor& y, const std::vector<double>& ref, const std::vector<double>* init = nullptr) {
  Check c;
  const std::vector<unsigned char> img = y.download();
  const int es = y.es();
  for (std::size_t b = 0; b < img.size(); ++b) {
    const std::size_t e = b / es;
    if (e >= y.first() && e < y.first() + static_cast<std::size_t>(y.elems)) continue;
    if (img[b] != kPoison) {
      if (c.first.empty()) c.first = "guard element " + std::to_string(static_cast<long long>(e) - static_cast<long long>(y.first())) + " written";
      ++c.guard_damaged;
    }
  }
  double ref2 = 0.0;
  for (double r : ref) ref2 += r * r;
  const double rms = ref.empty() ? 0.0 : std::sqrt(ref2 / static_cast<double>(ref.size()));
  double diff2 = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = decode(y.type, img.data() + (y.first() + i) * es), r = ref[i];
    const double scale = std::max(std::fabs(r), rms);
    if (std::isnan(v)) {
      if (c.first.empty()) c.first = "y[" + std::to_string(i) + "] is NaN";
      ++c.unwritten;
      continue;
    }
    if (init != nullptr && v == (*init)[i] && std::fabs(r - v) > 0.05 * scale) {
      if (c.first.empty()) c.first = "y[" + std::to_string(i) + "] kept its initial value";
      ++c.unwritten;
    }
    diff2 += (v - r) * (v - r);
    const double e = scale > 0.0 ? std::fabs(v - r) / scale : std::fabs(v - r);
    if (e > c.max_elem_err) {
      c.max_elem_err = e;
      if (e > 0.1 && c.first.empty()) c.first = "y[" + std::to_string(i) + "]=" + std::to_string(v) + " expected " + std::to_string(r);
    }
  }
  c.err = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (c.unwritten > 0) c.err = std::max(c.err, 1.0);
  return c;
}

inline double tolerance(DType out) { return out == DType::f32 ? 1e-3 : 1e-2; }

inline std::string describe(const Conv2dDesc& d) {
  std::ostringstream s;
  s << to_string(d.type) << "->" << to_string(d.out_type) << " N" << d.n << " H" << d.h << " W" << d.w << " C" << d.c
    << " K" << d.k << " R" << d.r << " S" << d.s << " pad" << d.pad_h << "/" << d.pad_w << " stride" << d.stride_h << "/"
    << d.stride_w << " dil" << d.dil_h << "/" << d.dil_w << " epilogue=" << d.epilogue.tag();
  return s.str();
}

// One problem's inputs and float64 accumulators, shared by every instance and epilogue that runs it.
struct ConvCase {
  Conv2dDesc d;
  Tensor x, w;
  std::vector<double> acc;
  ConvCase(const Conv2dDesc& desc, std::uint64_t seed, std::int64_t x_offset = 0) : d(desc) {
    Rng rng(seed);
    const ConvShape s = conv_shape(d);
    x = random_tensor(d.type, s.x_elems, rng, x_offset);
    w = random_tensor(d.type, s.w_elems, rng);
    acc = reference_conv(d, x.vals, w.vals);
  }
};

// Run instance `instance` on x, w → y with `bias` (d's own epilogue: no C, no residual) and wait for it.
inline void run_with_bias(const Conv2dDesc& d, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                          std::string_view instance) {
  Conv2dOperands o;
  o.x = x.data();
  o.w = w.data();
  o.y = y.data();
  o.bias = bias.data();
  ConvOptions opt;
  opt.instance = instance.data();
  const Status st = conv2d(d, o, nullptr, opt);
  REQUIRE_MESSAGE(st.ok(), instance << ": " << st.to_string());
  KTCONV_CUDA(cudaDeviceSynchronize());
}

// Run `c` with epilogue `e` and output type `out` (instance by name when given, with `launch` options)
// and check y.
inline Check run_and_check(const ConvCase& c, const EpilogueSpec& e, DType out, const char* instance,
                           std::uint64_t seed, Status* status = nullptr, bool residual_aliases_y = false,
                           const ConvLaunchOptions& launch = {}) {
  Conv2dDesc d = c.d;
  d.epilogue = e;
  d.out_type = out;
  const ConvShape s = conv_shape(d);
  Rng rng(seed);
  Tensor bias = random_tensor(out, d.k, rng);
  Tensor res = random_tensor(out, s.y_elems, rng);
  const bool keeps_y = e.beta != 0.0f || residual_aliases_y;
  Tensor y = keeps_y ? random_tensor(out, s.y_elems, rng) : Tensor(out, s.y_elems);
  if (residual_aliases_y) res.vals = y.vals;
  const std::vector<double> y0 = y.vals;
  Conv2dOperands ops;
  ops.x = c.x.data();
  ops.w = c.w.data();
  ops.y = y.data();
  ops.bias = bias.data();
  ops.residual = residual_aliases_y ? y.data() : res.data();
  ConvOptions opt;
  opt.instance = instance;
  opt.launch = launch;
  const Status st = conv2d(d, ops, nullptr, opt);
  if (status) *status = st;
  REQUIRE_MESSAGE(st.ok(), st.to_string() << " for " << describe(d));
  KTCONV_CUDA(cudaDeviceSynchronize());
  const auto ref = reference_epilogue(d, c.acc, &y0, &bias.vals, &res.vals);
  return check_output(y, ref, keeps_y ? &y0 : nullptr);
}

}  // namespace ktconv
