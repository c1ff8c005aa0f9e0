// test/sanitize/sanitize_driver.cpp — ktune_sanitize_driver: every default GEMM and conv instance of the
// dispatch table, run once by name on a small problem of its own kind, for compute-sanitizer
// (scripts/sanitize.sh runs it under memcheck, racecheck, synccheck and initcheck).
//
//   ktune_sanitize_driver [--kind gemm|conv|all] [--filter TEXT]... [--skip TEXT]... [--list]
//
// Each problem is small but exercises what sanitizers look at: two tile rows and two tile columns, both
// with a partial edge tile; more k-tiles than pipeline stages (the shared-memory ring wraps around, where
// a missing barrier shows); padded leading dimensions; the epilogue reading C, bias and residual. Every
// operand is its own cudaMalloc of exactly its extent (an out-of-bounds access leaves the allocation);
// every byte the kernel may read is initialised, the leading-dimension padding with NaN (a kernel that
// read it would produce NaN); D starts all-NaN. The result is checked against a float64 host reference
// (relative Frobenius error within the dtype's tolerance, every element written, D's padding untouched).
//
// Output: "== BEGIN <name>" before and "== END <name> <PASS|FAIL> ..." after each instance (synchronised,
// flushed), so a sanitizer report between them belongs to that instance. Hopper (sm90) instances first.
// Exit status: 0 all passed, 1 any failed, 2 usage error, 77 no CUDA device (skipped).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/conv.hpp"
#include "ktune/device.hpp"
#include "ktune/gemm.hpp"
#include "ktune/tuner/cuda_backend.hpp"  // host_fp: f16/bf16 conversions on the host

namespace {

using namespace ktune;
namespace hf = ktune::tuner::host_fp;

// ---- Host values ------------------------------------------------------------------------------------

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// Non-zero values in ±[1/16, 1] on a grid every operand type represents exactly.
float value(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t h = mix(seed * 0x100000001B3ull ^ mix(i));
  const float mag = static_cast<float>(8 + (h >> 8) % 121) / 128.0f;
  return (h & 1) ? -mag : mag;
}

// A device buffer of exactly `elems` elements of `type` with its host image.
struct Buffer {
  DType type = DType::f32;
  std::int64_t elems = 0;
  std::vector<unsigned char> image;
  void* dev = nullptr;
  int es() const { return size_of(type); }
  std::size_t bytes() const { return static_cast<std::size_t>(elems) * static_cast<std::size_t>(es()); }
  void set(std::int64_t i, float v) { hf::store(type, image.data(), static_cast<std::size_t>(i), v); }
  double get(std::int64_t i) const { return hf::load(type, image.data(), static_cast<std::size_t>(i)); }
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (dev) (void)cudaFree(dev);
  }
};

bool cuda_ok(cudaError_t e, const char* what, std::string& err) {
  if (e == cudaSuccess) return true;
  err = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  return false;
}

// Allocate and fill: element i of the buffer is NaN (poison) unless `data(i)` says it holds a value.
template <class IsData>
bool make(Buffer& b, DType t, std::int64_t elems, std::uint64_t seed, IsData data, std::string& err) {
  b.type = t;
  b.elems = elems;
  b.image.assign(b.bytes(), 0xFF);  // all-ones bytes: NaN in f32, f16 and bf16
  for (std::int64_t i = 0; i < elems; ++i)
    if (data(i)) b.set(i, value(seed, static_cast<std::uint64_t>(i)));
  return cuda_ok(cudaMalloc(&b.dev, b.bytes()), "cudaMalloc", err) &&
         cuda_ok(cudaMemcpy(b.dev, b.image.data(), b.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy H2D", err);
}

// A rows×cols row-major (or column-major) matrix with leading dimension ld: (lines−1)·ld + contiguous
// elements, the padding poisoned.
struct MatrixShape {
  std::int64_t lines, contiguous, ld;
  std::int64_t elems() const { return (lines - 1) * ld + contiguous; }
  bool is_data(std::int64_t i) const { return i % ld < contiguous; }
};

struct Result {
  bool ok = false;
  std::string what;  // the problem, and the error or the check's numbers
};

double tolerance(MathOp m, DType out) {
  double t = m == MathOp::simt_f32 ? 1e-5 : operand_type(m) == DType::f32 ? 3e-3 : 5e-3;
  if (out != DType::f32) t = std::max(t, 1e-2);
  return t;
}

// Compare D (row-major, ld) with ref; padding must still be poison.
Result check_output(const Buffer& d, std::int64_t rows, std::int64_t cols, std::int64_t ld, const std::vector<double>& ref,
                    double tol, std::string what) {
  std::vector<unsigned char> img(d.bytes());
  std::string err;
  if (!cuda_ok(cudaMemcpy(img.data(), d.dev, d.bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy D2H", err))
    return {false, what + ": " + err};
  std::int64_t unwritten = 0, padding_written = 0;
  double diff2 = 0, ref2 = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < ld && i * ld + j < d.elems; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * ld + j);
      if (j >= cols) {
        for (int b = 0; b < d.es(); ++b) padding_written += img[at * static_cast<std::size_t>(d.es()) + static_cast<std::size_t>(b)] != 0xFF;
        continue;
      }
      const double v = hf::load(d.type, img.data(), at), r = ref[static_cast<std::size_t>(i * cols + j)];
      if (std::isnan(v)) {
        ++unwritten;
        continue;
      }
      diff2 += (v - r) * (v - r);
      ref2 += r * r;
    }
  const double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  char buf[160];
  std::snprintf(buf, sizeof buf, " rel_err=%.3g (tol %.0e) unwritten=%lld padding_written=%lld", rel, tol,
                static_cast<long long>(unwritten), static_cast<long long>(padding_written));
  return {unwritten == 0 && padding_written == 0 && rel <= tol, what + buf};
}

double act(Activation a, double x) {
  switch (a) {
    case Activation::relu: return x > 0 ? x : 0;
    case Activation::silu: return x / (1 + std::exp(-x));
    case Activation::gelu_tanh: return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::gelu_erf: return 0.5 * x * (1 + std::erf(x * 0.7071067811865476));
    default: return x;
  }
}

// ---- GEMM -------------------------------------------------------------------------------------------

// cudaMalloc'd pointers are 256-byte aligned: alignment then depends on dimensions and leading
// dimensions only, and a stand-in pointer decides which problem variant an instance accepts.
const void* aligned_stand_in(int i) { return reinterpret_cast<const void*>(std::uintptr_t{1} << (40 + i)); }

struct GemmProblem {
  GemmDesc d;
  MatrixShape as{}, bs{}, cs{}, rs{}, ds{};
};

// Two tile rows and columns, each with a partial edge; more k-tiles than stages, with a partial one;
// padded leading dimensions. `odd`: dimensions and leading dimensions that allow only scalar access
// (for instances and routes that serve misaligned problems).
GemmProblem gemm_problem(const GemmConfig& c, bool odd) {
  GemmProblem p;
  GemmDesc& d = p.d;
  const std::int64_t e = odd ? 1 : 0;
  d.m = c.tile.m + 8 - e;
  d.n = c.tile.n + 8 - 3 * e;
  d.k = static_cast<std::int64_t>(c.stages + 2) * c.tile.k + 8 - 5 * e;
  d.ab_type = c.operand();
  d.compute = operand_type(c.math) == DType::f32 && uses_tensor_cores(c.math) ? Compute::tf32 : Compute::f32;
  d.a_layout = c.a_layout;
  d.b_layout = c.b_layout;
  d.d_type = d.ab_type;
  const bool a_row = d.a_layout == Layout::row, b_row = d.b_layout == Layout::row;
  p.as = {a_row ? d.m : d.k, a_row ? d.k : d.m, (a_row ? d.k : d.m) + 8 + e};
  p.bs = {b_row ? d.k : d.n, b_row ? d.n : d.k, (b_row ? d.n : d.k) + 8 + e};
  p.cs = {d.m, d.n, d.n + 8};
  p.rs = {d.m, d.n, d.n + 16};
  p.ds = {d.m, d.n, d.n + 24};
  d.lda = p.as.ld;
  d.ldb = p.bs.ld;
  d.ldc = p.cs.ld;
  d.ldr = p.rs.ld;
  d.ldd = p.ds.ld;
  d.epilogue.alpha = 1.25f;
  d.epilogue.beta = 0.5f;
  d.epilogue.bias = true;
  d.epilogue.residual = true;
  d.epilogue.activation = Activation::silu;
  return p;
}

GemmOperands stand_in_ops() {
  GemmOperands o;
  o.a = aligned_stand_in(0);
  o.b = aligned_stand_in(1);
  o.c = aligned_stand_in(2);
  o.residual = aligned_stand_in(3);
  o.bias = aligned_stand_in(4);
  o.d = const_cast<void*>(aligned_stand_in(5));
  return o;
}

// The first problem variant the instance accepts on this device; `why` otherwise (code no_instance:
// the device cannot run the instance at all).
Status pick_gemm_problem(const GemmKernelEntry& e, const DeviceInfo& dev, GemmProblem& out) {
  Status first;
  for (bool odd : {false, true}) {
    const GemmProblem p = gemm_problem(e.config, odd);
    Status s = can_implement(e, resolved(p.d), alignment_of(p.d, stand_in_ops()), &dev);
    if (s.ok()) {
      out = p;
      return {};
    }
    if (!odd) first = s;
  }
  return first;
}

Result run_gemm(const GemmKernelEntry& e, const GemmProblem& p) {
  const GemmDesc& d = p.d;
  const MatrixShape &as = p.as, &bs = p.bs, &cs = p.cs, &rs = p.rs, &ds = p.ds;
  const bool a_row = d.a_layout == Layout::row, b_row = d.b_layout == Layout::row;
  char desc_buf[160];
  std::snprintf(desc_buf, sizeof desc_buf, "%s %c%c %lldx%lldx%lld lda=%lld ldb=%lld ab_bias_res_silu",
                std::string(to_string(d.ab_type)).c_str(), layout_letter(d.a_layout), layout_letter(d.b_layout),
                static_cast<long long>(d.m), static_cast<long long>(d.n), static_cast<long long>(d.k),
                static_cast<long long>(d.lda), static_cast<long long>(d.ldb));
  const std::string what = desc_buf;

  Buffer A, B, C, R, bias, D;
  std::string err;
  const DType t = d.ab_type, o = d.d_type;
  if (!make(A, t, as.elems(), 1, [&](std::int64_t i) { return as.is_data(i); }, err) ||
      !make(B, t, bs.elems(), 2, [&](std::int64_t i) { return bs.is_data(i); }, err) ||
      !make(C, o, cs.elems(), 3, [&](std::int64_t i) { return cs.is_data(i); }, err) ||
      !make(R, o, rs.elems(), 4, [&](std::int64_t i) { return rs.is_data(i); }, err) ||
      !make(bias, o, d.n, 5, [](std::int64_t) { return true; }, err) ||
      !make(D, o, ds.elems(), 6, [](std::int64_t) { return false; }, err))
    return {false, what + ": " + err};
  GemmOperands ops;
  ops.a = A.dev;
  ops.b = B.dev;
  ops.c = C.dev;
  ops.residual = R.dev;
  ops.bias = bias.dev;
  ops.d = D.dev;
  // The public call with the instance forced: validation, can_implement and (where the instance needs
  // it) the workspace, as for a user.
  const std::string name(e.name);
  GemmOptions opt;
  opt.instance = name.c_str();
  if (Status s = gemm(d, ops, nullptr, opt); !s.ok()) return {false, what + ": ktune::gemm: " + s.to_string()};
  if (!cuda_ok(cudaDeviceSynchronize(), "kernel", err)) return {false, what + ": " + err};

  // A as M×K and B as N×K, decoded once.
  std::vector<double> a(static_cast<std::size_t>(d.m * d.k)), b(static_cast<std::size_t>(d.n * d.k));
  for (std::int64_t i = 0; i < d.m; ++i)
    for (std::int64_t k = 0; k < d.k; ++k) a[static_cast<std::size_t>(i * d.k + k)] = A.get(a_row ? i * as.ld + k : k * as.ld + i);
  for (std::int64_t j = 0; j < d.n; ++j)
    for (std::int64_t k = 0; k < d.k; ++k) b[static_cast<std::size_t>(j * d.k + k)] = B.get(b_row ? k * bs.ld + j : j * bs.ld + k);
  std::vector<double> ref(static_cast<std::size_t>(d.m * d.n));
  for (std::int64_t i = 0; i < d.m; ++i)
    for (std::int64_t j = 0; j < d.n; ++j) {
      const double* ai = a.data() + i * d.k;
      const double* bj = b.data() + j * d.k;
      double acc = 0;
      for (std::int64_t k = 0; k < d.k; ++k) acc += ai[k] * bj[k];
      const double x = d.epilogue.alpha * acc + d.epilogue.beta * C.get(i * cs.ld + j) + bias.get(j) + R.get(i * rs.ld + j);
      ref[static_cast<std::size_t>(i * d.n + j)] = act(d.epilogue.activation, x);
    }
  return check_output(D, d.m, d.n, ds.ld, ref, tolerance(e.config.math, o), what);
}

// ---- Conv -------------------------------------------------------------------------------------------

// N=2, 12x12 images: M = N·P·Q = 288 output pixels (two or three tile rows, one partial); K = tile.n + 8
// output channels (two tile columns, one partial). Variants in order: 3x3 with padding 1 and 32 or 64
// channels (R·S·C = 288 or 576: more k-tiles than stages), then 1x1 without padding (a plain GEMM);
// few_channels instances get their own C.
Conv2dDesc conv_problem(const ConvConfig& c, int variant) {
  Conv2dDesc d;
  d.n = 2;
  d.h = d.w = 12;
  d.k = c.gemm.tile.n + 8;
  const bool one_by_one = variant >= 2;
  d.r = d.s = one_by_one ? 1 : 3;
  d.pad_h = d.pad_w = one_by_one ? 0 : 1;
  d.c = c.iterator == ConvIterator::few_channels ? c.channels : variant == 0 ? 32 : 64;
  if (one_by_one && variant == 3) d.c = 128;
  d.type = c.operand();
  d.out_type = d.type;
  d.epilogue.alpha = 1.25f;
  d.epilogue.bias = true;
  d.epilogue.residual = true;
  d.epilogue.activation = Activation::relu;
  if (c.iterator == ConvIterator::stem) {  // the stem's shape: C = its channels, 7x7/2 pad 3, K ≤ 64
    d.c = c.channels;
    d.k = variant == 0 ? 64 : 24;
    d.r = d.s = 7;
    d.pad_h = d.pad_w = 3;
    d.stride_h = d.stride_w = 2;
  }
  return d;
}

Status pick_conv_problem(const ConvKernelEntry& e, const DeviceInfo& dev, Conv2dDesc& out) {
  Conv2dOperands o;
  o.x = aligned_stand_in(0);
  o.w = aligned_stand_in(1);
  o.y = const_cast<void*>(aligned_stand_in(2));
  o.bias = aligned_stand_in(3);
  o.residual = aligned_stand_in(4);
  Status first;
  for (int v = 0; v < 4; ++v) {
    const Conv2dDesc d = conv_problem(e.config, v);
    Status s = can_implement(e, d, alignment_of(d, o), &dev);
    if (s.ok()) {
      out = d;
      return {};
    }
    if (v == 0) first = s;
  }
  return first;
}

Result run_conv(const ConvKernelEntry& e, const Conv2dDesc& d) {
  const ConvShape s = conv_shape(d);
  char desc_buf[160];
  std::snprintf(desc_buf, sizeof desc_buf, "%s n%lld h%lld w%lld c%lld k%lld %lldx%lld pad%lld alpha_bias_res_relu",
                std::string(to_string(d.type)).c_str(), static_cast<long long>(d.n), static_cast<long long>(d.h),
                static_cast<long long>(d.w), static_cast<long long>(d.c), static_cast<long long>(d.k),
                static_cast<long long>(d.r), static_cast<long long>(d.s), static_cast<long long>(d.pad_h));
  const std::string what = desc_buf;

  Buffer X, W, Y, R, bias;
  std::string err;
  auto all = [](std::int64_t) { return true; };
  if (!make(X, d.type, s.x_elems, 11, all, err) || !make(W, d.type, s.w_elems, 12, all, err) ||
      !make(R, d.out_type, s.y_elems, 13, all, err) || !make(bias, d.out_type, d.k, 14, all, err) ||
      !make(Y, d.out_type, s.y_elems, 15, [](std::int64_t) { return false; }, err))
    return {false, what + ": " + err};
  Conv2dOperands ops;
  ops.x = X.dev;
  ops.w = W.dev;
  ops.y = Y.dev;
  ops.bias = bias.dev;
  ops.residual = R.dev;
  const std::string name(e.name);
  ConvOptions opt;
  opt.instance = name.c_str();
  if (Status st = conv2d(d, ops, nullptr, opt); !st.ok()) return {false, what + ": ktune::conv2d: " + st.to_string()};
  if (!cuda_ok(cudaDeviceSynchronize(), "kernel", err)) return {false, what + ": " + err};

  std::vector<double> x(static_cast<std::size_t>(s.x_elems)), w(static_cast<std::size_t>(s.w_elems));
  for (std::int64_t i = 0; i < s.x_elems; ++i) x[static_cast<std::size_t>(i)] = X.get(i);
  for (std::int64_t i = 0; i < s.w_elems; ++i) w[static_cast<std::size_t>(i)] = W.get(i);
  std::vector<double> ref(static_cast<std::size_t>(s.y_elems));
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t p = 0; p < s.p; ++p)
      for (std::int64_t q = 0; q < s.q; ++q)
        for (std::int64_t k = 0; k < d.k; ++k) {
          double acc = 0;
          for (std::int64_t r = 0; r < d.r; ++r)
            for (std::int64_t t = 0; t < d.s; ++t) {
              const std::int64_t ih = p * d.stride_h - d.pad_h + r * d.dil_h, iw = q * d.stride_w - d.pad_w + t * d.dil_w;
              if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w) continue;
              for (std::int64_t ch = 0; ch < d.c; ++ch)
                acc += x[static_cast<std::size_t>(((n * d.h + ih) * d.w + iw) * d.c + ch)] *
                       w[static_cast<std::size_t>(((k * d.r + r) * d.s + t) * d.c + ch)];
            }
          const std::int64_t at = ((n * s.p + p) * s.q + q) * d.k + k;
          ref[static_cast<std::size_t>(at)] = act(d.epilogue.activation, d.epilogue.alpha * acc + bias.get(k) + R.get(at));
        }
  return check_output(Y, s.m, d.k, d.k, ref, tolerance(e.config.gemm.math, d.out_type), what);
}

// ---- Driver -----------------------------------------------------------------------------------------

struct Args {
  bool gemm = true, conv = true, list = false;
  std::vector<std::string> filters, skips;
  bool selected(std::string_view name) const {
    for (const auto& s : skips)
      if (name.find(s) != std::string_view::npos) return false;
    if (filters.empty()) return true;
    for (const auto& f : filters)
      if (name.find(f) != std::string_view::npos) return true;
    return false;
  }
};

struct Job {
  std::string_view name;
  const GemmKernelEntry* gemm = nullptr;
  const ConvKernelEntry* conv = nullptr;
  int arch = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto next_arg = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--list") {
      args.list = true;
    } else if (a == "--kind") {
      const char* v = next_arg();
      const std::string_view k = v ? v : "";
      if (k != "gemm" && k != "conv" && k != "all") {
        std::fprintf(stderr, "ktune_sanitize_driver: --kind gemm|conv|all\n");
        return 2;
      }
      args.gemm = k != "conv";
      args.conv = k != "gemm";
    } else if (a == "--filter" || a == "--skip") {
      const char* v = next_arg();
      if (!v) {
        std::fprintf(stderr, "ktune_sanitize_driver: %s needs a value\n", argv[i]);
        return 2;
      }
      (a == "--filter" ? args.filters : args.skips).emplace_back(v);
    } else {
      std::fprintf(stderr, "usage: ktune_sanitize_driver [--kind gemm|conv|all] [--filter TEXT]... [--skip TEXT]... [--list]\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }

  std::vector<Job> jobs;
  if (args.gemm)
    for (const auto& e : gemm_table().entries())
      if (args.selected(e.name)) jobs.push_back({e.name, &e, nullptr, e.config.arch_cc});
  if (args.conv)
    for (const auto& e : conv_table().entries())
      if (args.selected(e.name)) jobs.push_back({e.name, nullptr, &e, e.config.gemm.arch_cc});
  // Hopper instances first (racecheck matters most there), then by kind, then by name.
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& x, const Job& y) {
    if (x.arch != y.arch) return x.arch > y.arch;
    if ((x.gemm != nullptr) != (y.gemm != nullptr)) return x.gemm != nullptr;
    return x.name < y.name;
  });
  if (args.list) {
    for (const Job& j : jobs) std::printf("%s %.*s\n", j.gemm ? "gemm" : "conv", static_cast<int>(j.name.size()), j.name.data());
    return 0;
  }
  if (cuda_device_count() == 0) {
    std::printf("ktune_sanitize_driver: no CUDA device found - SKIPPED\n");
    return 77;
  }
  DeviceInfo dev;
  if (Status s = current_device(dev); !s.ok()) {
    std::printf("ktune_sanitize_driver: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("ktune_sanitize_driver: %zu instances selected, device %s (sm%d)\n", jobs.size(), dev.name.c_str(), dev.cc);
  int passed = 0, failed = 0, skipped = 0;
  for (const Job& j : jobs) {
    const std::string name(j.name);
    // Instances this device cannot run (architecture, shared memory) are skipped, not failed.
    GemmProblem gp;
    Conv2dDesc cp;
    const Status pick = j.gemm ? pick_gemm_problem(*j.gemm, dev, gp) : pick_conv_problem(*j.conv, dev, cp);
    if (pick.code() == StatusCode::no_instance) {
      std::printf("== SKIP %s (%s)\n", name.c_str(), pick.message().c_str());
      ++skipped;
      continue;
    }
    std::printf("== BEGIN %s\n", name.c_str());
    std::fflush(stdout);
    const auto t0 = std::chrono::steady_clock::now();
    Result r;
    if (!pick.ok()) r = {false, "no test problem the instance accepts: " + pick.to_string()};
    else r = j.gemm ? run_gemm(*j.gemm, gp) : run_conv(*j.conv, cp);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("== END %s %s %s (%.0f ms)\n", name.c_str(), r.ok ? "PASS" : "FAIL", r.what.c_str(), ms);
    std::fflush(stdout);
    (r.ok ? passed : failed) += 1;
    // A sticky error (e.g. an illegal address) poisons the context: later results would mean nothing.
    if (cudaGetLastError() != cudaSuccess && cudaDeviceSynchronize() != cudaSuccess) {
      std::printf("ktune_sanitize_driver: the CUDA context is broken after %s; stopping\n", name.c_str());
      ++failed;
      break;
    }
  }
  std::printf("ktune_sanitize_driver: %d passed, %d failed, %d skipped (not for this device)\n", passed, failed, skipped);
  return failed == 0 ? 0 : 1;
}
