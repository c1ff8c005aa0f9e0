// test/gpu/test_util.cuh — helpers for ktune's GPU tests: guarded device buffers, deterministic random
// operands rounded to their storage type, a float64 CPU reference with the fused epilogue, a float64
// GPU reference for large shapes, and the checks every run goes through (guard bands and padding
// untouched, every element written, relative Frobenius error within the dtype's tolerance).
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
#include <vector>

#include "gpu/test_kernels.hpp"
#include "ktune/gemm.hpp"

namespace kt {
using namespace ktune;


// Poison: every byte 0xFF, which is a NaN in f32, f16 and bf16.
inline constexpr unsigned char kPoison = 0xFF;
// Elements of poison before and after every buffer.
inline constexpr std::int64_t kGuard = 256;

// ---- Elements ------------------------------------------------------------------------------------

// Store v rounded to nearest-even in type t (host).
inline void encode(DType t, unsigned char* p, double v) {
  switch (t) {
    case DType::f32: {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::f16: {
      const __half h = __double2half(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::bf16: {
      const __nv_bfloat16 h = __double2bfloat16(v);
      std::memcpy(p, &h, 2);
      break;
    }
  }
}

inline double decode(DType t, const unsigned char* p) {
  switch (t) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::f16: {
      __half h;
      std::memcpy(&h, p, 2);
      return __half2float(h);
    }
    case DType::bf16: {
      __nv_bfloat16 h;
      std::memcpy(&h, p, 2);
      return __bfloat162float(h);
    }
  }
  return 0.0;
}

// The value v becomes when stored as t.
inline double round_to(DType t, double v) {
  unsigned char b[4];
  encode(t, b, v);
  return decode(t, b);
}

// ---- Random numbers (deterministic, identical on every machine) ---------------------------------


struct Rng {
  std::uint64_t state;
  explicit Rng(std::uint64_t seed) : state(splitmix64(seed)) {}
  std::uint64_t next() { return state = splitmix64(state); }
  double nonzero() { return nonzero_uniform(next()); }
};

// ---- Guarded matrices ----------------------------------------------------------------------------

// A rows×cols matrix stored in `type` with leading dimension `ld`. Row-major: element (i, j) at
// i·ld + j; column-major: at j·ld + i. The buffer is [guard | offset | lines·ld | guard] elements:
// `offset` extra elements before the data make the data pointer deliberately less aligned.
struct Storage {
  DType type = DType::f32;
  std::int64_t rows = 0, cols = 0, ld = 0;
  bool row_major = true;
  std::int64_t offset = 0;

  int es() const { return size_of(type); }
  std::int64_t lines() const { return row_major ? rows : cols; }
  std::int64_t contiguous() const { return row_major ? cols : rows; }
  std::int64_t index(std::int64_t i, std::int64_t j) const { return row_major ? i * ld + j : j * ld + i; }
  std::int64_t first() const { return kGuard + offset; }  // element index of (0, 0) in the buffer
  std::int64_t total() const { return kGuard + offset + lines() * ld + kGuard; }
  std::size_t bytes() const { return static_cast<std::size_t>(total()) * es(); }
};

inline Storage storage(DType t, std::int64_t rows, std::int64_t cols, bool row_major, std::int64_t ld_pad = 0,
                       std::int64_t offset = 0) {
  Storage s;
  s.type = t;
  s.rows = rows;
  s.cols = cols;
  s.row_major = row_major;
  s.ld = (row_major ? cols : rows) + ld_pad;
  s.offset = offset;
  return s;
}

// Memory, copies and the GEMM call go through these (a host-memory self-test of these helpers can
// define KT_TEST_BACKEND_DEFINED and provide its own before including this file).
#ifndef KT_TEST_BACKEND_DEFINED
namespace backend {
inline void alloc(unsigned char** p, std::size_t n) { KT_CUDA(cudaMalloc(p, n)); }
inline void release(unsigned char* p) { cudaFree(p); }
inline void to_device(void* dst, const void* src, std::size_t n) {
  KT_CUDA(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
}
inline void to_host(void* dst, const void* src, std::size_t n) {
  KT_CUDA(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
}
inline Status run_gemm(const GemmDesc& d, const GemmOperands& o, cudaStream_t stream, const GemmOptions& opt) {
  return gemm(d, o, stream, opt);
}
inline void sync(cudaStream_t stream) {
  KT_CUDA(cudaStreamSynchronize(stream));
  KT_CUDA(cudaGetLastError());
}
inline void device_info(DeviceInfo& dev) {
  const Status s = current_device(dev);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
}
}  // namespace backend
#endif

struct DeviceBuffer {
  unsigned char* ptr = nullptr;
  std::size_t bytes = 0;
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : bytes(n) { backend::alloc(&ptr, n); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr; o.bytes = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr, o.ptr);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr) backend::release(ptr);
  }
};

// A matrix: its storage, its logical values as stored (row-major rows×cols, in double), the host image
// of the whole buffer (poison outside the data) and the device copy.
struct Matrix {
  Storage st;
  std::vector<double> vals;
  std::vector<unsigned char> image;
  DeviceBuffer dev;

  void* data() const { return dev.ptr + static_cast<std::size_t>(st.first()) * st.es(); }
  double at(std::int64_t i, std::int64_t j) const { return vals[static_cast<std::size_t>(i * st.cols + j)]; }
  void set(std::int64_t i, std::int64_t j, double v) {
    unsigned char* p = image.data() + static_cast<std::size_t>(st.first() + st.index(i, j)) * st.es();
    encode(st.type, p, v);
    vals[static_cast<std::size_t>(i * st.cols + j)] = decode(st.type, p);
  }
  void upload() { backend::to_device(dev.ptr, image.data(), image.size()); }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> img(image.size());
    backend::to_host(img.data(), dev.ptr, img.size());
    return img;
  }
};

// All-poison matrix (an output buffer); `vals` stays zero until the caller sets elements.
inline Matrix poisoned(const Storage& st) {
  Matrix m;
  m.st = st;
  m.vals.assign(static_cast<std::size_t>(st.rows * st.cols), 0.0);
  m.image.assign(st.bytes(), kPoison);
  m.dev = DeviceBuffer(st.bytes());
  return m;
}

// Random non-zero matrix, values rounded to the storage type; padding and guards stay poison (a
// kernel that read them would turn its result into NaN).
inline Matrix random_matrix(const Storage& st, Rng& rng) {
  Matrix m = poisoned(st);
  for (std::int64_t i = 0; i < st.rows; ++i)
    for (std::int64_t j = 0; j < st.cols; ++j) m.set(i, j, rng.nonzero());
  m.upload();
  return m;
}

// ---- Checking an output buffer ------------------------------------------------------------------

struct Check {
  std::int64_t poison_damaged = 0;  // bytes outside the data that are no longer poison
  std::int64_t unwritten = 0;       // data elements still NaN poison, or still their aliased initial value
  double err = 0.0;                 // relative Frobenius error (absolute when the reference is 0)
  double max_elem_err = 0.0;        // max |out − ref| / max(|ref|, rms(ref)) over the elements
  std::string first_problem;
  // Element-wise slack: 10× the Frobenius tolerance, so one wrong element in a large matrix cannot
  // hide in the norm.
  bool ok(double tol) const { return poison_damaged == 0 && unwritten == 0 && err <= tol && max_elem_err <= 10 * tol; }
  std::string summary() const {
    std::ostringstream s;
    s << "rel_err=" << err << " max_elem_err=" << max_elem_err << " guard/padding bytes damaged=" << poison_damaged
      << " unwritten=" << unwritten;
    if (!first_problem.empty()) s << " (first: " << first_problem << ")";
    return s.str();
  }
};

// Compare the data of a host copy of a whole output buffer with ref (row-major M×N) and its other
// bytes (guards, ld padding) with poison. `init`: the data's values before the run when C or the
// residual alias D (else D was poisoned and NaN means "never written"); an element that kept its
// initial value although the reference differs from it was not written either.
inline Check check_image(const Storage& st, const std::vector<unsigned char>& img, const std::vector<double>& ref,
                         const std::vector<double>* init = nullptr) {
  Check c;
  const int es = st.es();
  const std::int64_t first = st.first(), span = st.lines() * st.ld;
  auto note = [&](const std::string& what) {
    if (c.first_problem.empty()) c.first_problem = what;
  };
  for (std::int64_t e = 0; e < st.total(); ++e) {
    const std::int64_t rel = e - first;
    const bool data = rel >= 0 && rel < span && rel % st.ld < st.contiguous();
    if (data) continue;
    for (int b = 0; b < es; ++b)
      if (img[static_cast<std::size_t>(e * es + b)] != kPoison) {
        ++c.poison_damaged;
        std::ostringstream s;
        s << "element " << rel << " relative to D(0,0) was written: "
          << (rel < 0 ? "front guard" : rel >= span ? "back guard" : "ld padding");
        note(s.str());
        break;
      }
  }
  double ref2 = 0.0;
  for (double r : ref) ref2 += r * r;
  const double rms = ref.empty() ? 0.0 : std::sqrt(ref2 / static_cast<double>(ref.size()));
  double diff2 = 0.0;
  for (std::int64_t i = 0; i < st.rows; ++i)
    for (std::int64_t j = 0; j < st.cols; ++j) {
      const std::size_t ij = static_cast<std::size_t>(i * st.cols + j);
      const double v = decode(st.type, img.data() + static_cast<std::size_t>(first + st.index(i, j)) * es);
      const double r = ref[ij];
      const double scale = std::max(std::fabs(r), rms);
      if (std::isnan(v)) {
        ++c.unwritten;
        std::ostringstream s;
        s << "D(" << i << "," << j << ") is NaN";
        note(s.str());
        continue;
      }
      if (init != nullptr && v == (*init)[ij] && std::fabs(r - v) > 0.05 * scale) {
        ++c.unwritten;
        std::ostringstream s;
        s << "D(" << i << "," << j << ") kept its initial value " << v << ", expected " << r;
        note(s.str());
      }
      diff2 += (v - r) * (v - r);
      if (scale > 0.0) c.max_elem_err = std::max(c.max_elem_err, std::fabs(v - r) / scale);
      else c.max_elem_err = std::max(c.max_elem_err, std::fabs(v - r));
    }
  c.err = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (c.unwritten > 0) c.err = std::max(c.err, 1.0);
  return c;
}

// Download `out` and check it (see check_image).
inline Check check_output(const Matrix& out, const std::vector<double>& ref, const std::vector<double>* init = nullptr) {
  return check_image(out.st, out.download(), ref, init);
}

// ---- References ------------------------------------------------------------------------------------

// acc = A·B in float64 from the values as stored; A is M×K, B is K×N (logical, row-major values).
inline std::vector<double> reference_ab(const Matrix& A, const Matrix& B) {
  const std::int64_t M = A.st.rows, K = A.st.cols, N = B.st.cols;
  std::vector<double> acc(static_cast<std::size_t>(M * N), 0.0);
  for (std::int64_t i = 0; i < M; ++i) {
    double* row = acc.data() + i * N;
    for (std::int64_t k = 0; k < K; ++k) {
      const double a = A.vals[static_cast<std::size_t>(i * K + k)];
      const double* b = B.vals.data() + k * N;
      for (std::int64_t j = 0; j < N; ++j) row[j] += a * b[j];
    }
  }
  return acc;
}

// Random A (M×K) and B (K×N) in an instance's operand type and layouts, and their float64 product.
struct RandomOperands {
  Matrix A, B;
  std::vector<double> acc;
};

inline RandomOperands random_operands(const GemmKernelEntry& e, int m, int n, int k, Rng& rng) {
  const DType ab = e.config.operand();
  RandomOperands o;
  o.A = random_matrix(storage(ab, m, k, e.config.a_layout == Layout::row), rng);
  o.B = random_matrix(storage(ab, k, n, e.config.b_layout == Layout::row), rng);
  o.acc = reference_ab(o.A, o.B);
  return o;
}

// A GEMM shape class of the GPU tests: leading dimension = contiguous extent + pad, data pointers
// offset by `off` elements.
struct GemmShape {
  std::string what;
  int m, n, k;
  int pad_a = 0, pad_b = 0, pad_d = 0;
  int off_a = 0, off_b = 0, off_d = 0;
};

// Every operand type of `types` × layout pair of A and B that has candidates (entries_of(ab, la, lb)
// not empty) on shape `sc`: random A and B from a fresh Rng(seed++), their float64 product, then
// body(entries, A, B, acc, rng, la, lb).
template <class Types, class EntriesOf, class Body>
void for_each_operand_set(const GemmShape& sc, const Types& types, std::uint64_t& seed, EntriesOf&& entries_of, Body&& body) {
  for (DType ab : types)
    for (Layout la : {Layout::row, Layout::col})
      for (Layout lb : {Layout::row, Layout::col}) {
        const auto entries = entries_of(ab, la, lb);
        if (entries.empty()) continue;
        Rng rng(seed++);
        const Matrix A = random_matrix(storage(ab, sc.m, sc.k, la == Layout::row, sc.pad_a, sc.off_a), rng);
        const Matrix B = random_matrix(storage(ab, sc.k, sc.n, lb == Layout::row, sc.pad_b, sc.off_b), rng);
        body(entries, A, B, reference_ab(A, B), rng, la, lb);
      }
}

inline double activation(Activation a, double x) {
  switch (a) {
    case Activation::none: return x;
    case Activation::relu: return x > 0.0 ? x : 0.0;
    case Activation::gelu_tanh:
      return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::gelu_erf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::silu: return x / (1.0 + std::exp(-x));
  }
  return x;
}

// D = act(alpha·acc + beta·C + bias + residual), then clamp; C/bias/residual may be null when unused.
inline double epilogue_at(const EpilogueSpec& e, double acc, double c, double bias, double residual) {
  double x = static_cast<double>(e.alpha) * acc;
  if (e.beta != 0.0f) x += static_cast<double>(e.beta) * c;
  if (e.bias) x += bias;
  if (e.residual) x += residual;
  x = activation(e.activation, x);
  if (e.clamp) x = std::min(std::max(x, static_cast<double>(e.clamp_lo)), static_cast<double>(e.clamp_hi));
  return x;
}

inline std::vector<double> reference_epilogue(const std::vector<double>& acc, std::int64_t M, std::int64_t N,
                                              const EpilogueSpec& e, const std::vector<double>* c,
                                              const std::vector<double>* bias, const std::vector<double>* residual) {
  std::vector<double> out(acc.size());
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      const std::size_t ij = static_cast<std::size_t>(i * N + j);
      out[ij] = epilogue_at(e, acc[ij], e.beta != 0.0f ? (*c)[ij] : 0.0, e.bias ? (*bias)[static_cast<std::size_t>(j)] : 0.0,
                            e.residual ? (*residual)[ij] : 0.0);
    }
  return out;
}

// Relative Frobenius tolerance (DEVELOPERS.md): by output type first, then by math.
inline double tolerance(MathOp m, DType out) {
  if (out != DType::f32) return 1e-2;
  switch (m) {
    case MathOp::simt_f32: return 1e-5;
    case MathOp::mma_tf32: return 3e-3;
    // wgmma tf32 reads the fp32 operands truncated to tf32 (upper 19 bits; mma_tf32 rounds them):
    // ~7e-4 relative error on random data, up to 2^-9 for a single product (1x1x1).
    case MathOp::wgmma_tf32: return 3e-3;
    default: return 5e-3;
  }
}

// What a problem must ask for to be served by an instance of math `m`: f32 operands on tensor cores
// are tf32 compute.
inline Compute compute_for(MathOp m) {
  return operand_type(m) == DType::f32 && uses_tensor_cores(m) ? Compute::tf32 : Compute::f32;
}

// The kind of problem an instance of math `m` serves (a problem's required_math): instances with
// different instructions for the same operands and compute (e.g. mma.sync and wgmma) serve one kind.
inline MathOp problem_kind(MathOp m) {
  switch (operand_type(m)) {
    case DType::f16: return MathOp::mma_f16;
    case DType::bf16: return MathOp::mma_bf16;
    default: return uses_tensor_cores(m) ? MathOp::mma_tf32 : MathOp::simt_f32;
  }
}

// Can this instance run at all on this device (architecture, shared memory)? An aligned problem of
// its own kind that only the device could refuse.
inline Status runs_on_device(const GemmKernelEntry& e, const DeviceInfo& dev) {
  GemmDesc d;
  d.m = d.n = d.k = 256;
  d.ab_type = e.config.operand();
  d.a_layout = e.config.a_layout;
  d.b_layout = e.config.b_layout;
  d.d_type = DType::f32;
  d.compute = compute_for(e.config.math);
  return can_implement(e, resolved(d), GemmAlignment{16, 16, 16}, &dev);
}

inline std::string describe(const GemmDesc& d0) {
  const GemmDesc d = resolved(d0);
  std::ostringstream s;
  s << to_string(d.ab_type) << (d.compute == Compute::tf32 ? "(tf32)" : "") << ' ' << layout_letter(d.a_layout)
    << layout_letter(d.b_layout) << ' ' << d.m << 'x' << d.n << 'x' << d.k << " lda=" << d.lda << " ldb=" << d.ldb
    << " ldd=" << d.ldd << " out=" << to_string(d.d_type) << " epilogue=" << d.epilogue.tag();
  return s.str();
}

// ---- GPU side: random fill and a float64 reference for large shapes ------------------------------
// Defined in test_kernels.cu, the one GPU-test TU that nvcc compiles for the device: the test files
// themselves are host code (g++), which keeps the test build fast.

// fill_random, reference_gemm_gpu: gpu/test_kernels.hpp (defined in test_kernels.cu).

// ---- Running one problem through the one-call API -------------------------------------------------

// What a run adds to A·B: output type and padding, epilogue, and whether C / the residual alias D.
struct OutputCase {
  DType d_type = DType::f32;
  std::int64_t ldd_pad = 0, d_offset = 0;
  EpilogueSpec epilogue{};
  bool c_aliases_d = false;
  bool residual_aliases_d = false;
  std::int64_t ldc_pad = 4, ldr_pad = 2;  // used when C / the residual are separate buffers
};

// One bf16 instance of each wgmma schedule (cooperative, ping-pong) among `instances`, the first of each:
// the small sets the sanitizer targets run.
inline std::vector<const GemmKernelEntry*> one_bf16_per_schedule(const std::vector<const GemmKernelEntry*>& instances) {
  std::vector<const GemmKernelEntry*> pick;
  for (const GemmKernelEntry* e : instances) {
    if (e->config.math != MathOp::wgmma_bf16) continue;
    if (std::none_of(pick.begin(), pick.end(), [&](const GemmKernelEntry* p) { return p->config.schedule == e->config.schedule; }))
      pick.push_back(e);
  }
  return pick;
}

// Epilogues that a split K (split-K slices, stream-K pieces) must apply once, to the whole sum:
// bias + ReLU (f16 D), alpha/beta with C aliasing D (bf16), alpha/beta + residual + GELU + clamp (f32),
// bias + residual aliasing D + SiLU (bf16).
inline std::vector<std::pair<const char*, OutputCase>> whole_sum_epilogue_cases() {
  std::vector<std::pair<const char*, OutputCase>> cases;
  OutputCase oc;
  oc.epilogue = bias_activation(Activation::relu);
  oc.d_type = DType::f16;
  cases.push_back({"bias + relu, f16", oc});
  oc = OutputCase{};
  oc.epilogue = linear_combination(0.75f, -1.5f);
  oc.c_aliases_d = true;
  oc.d_type = DType::bf16;
  cases.push_back({"alpha/beta, C aliases D", oc});
  oc = OutputCase{};
  oc.epilogue = linear_combination(1.25f, 0.5f);
  oc.epilogue.residual = true;
  oc.epilogue.activation = Activation::gelu_tanh;
  oc.epilogue.clamp = true;
  oc.epilogue.clamp_lo = -2.0f;
  oc.epilogue.clamp_hi = 3.0f;
  oc.d_type = DType::f32;
  cases.push_back({"alpha/beta + residual + gelu + clamp", oc});
  oc = OutputCase{};
  oc.epilogue.residual = true;
  oc.epilogue.bias = true;
  oc.epilogue.activation = Activation::silu;
  oc.residual_aliases_d = true;
  oc.d_type = DType::bf16;
  cases.push_back({"bias + residual aliasing D + silu", oc});
  return cases;
}

struct RunResult {
  Status status;
  Check check;
  GemmDesc desc;
  // Empty when the run succeeded within `tol`; else what went wrong.
  std::string failure(double tol) const {
    if (!status.ok()) return status.to_string();
    return check.ok(tol) ? std::string() : check.summary() + " tol=" + std::to_string(tol);
  }
};

// Runs D = epilogue(A·B) with `instance` (nullptr: the one-call API's own choice) and checks D against
// the float64 reference built from `acc` (= A·B as stored). A and B are already on the device.
inline RunResult run_checked(const Matrix& A, const Matrix& B, const std::vector<double>& acc, MathOp math,
                             const OutputCase& oc, const char* instance, Rng& rng, cudaStream_t stream = nullptr,
                             const GemmLaunchOptions& launch = {}) {
  const std::int64_t M = A.st.rows, N = B.st.cols, K = A.st.cols;
  const EpilogueSpec& ep = oc.epilogue;
  RunResult rr;
  GemmDesc& d = rr.desc;
  d.m = M;
  d.n = N;
  d.k = K;
  d.ab_type = A.st.type;
  d.a_layout = A.st.row_major ? Layout::row : Layout::col;
  d.b_layout = B.st.row_major ? Layout::row : Layout::col;
  d.lda = A.st.ld;
  d.ldb = B.st.ld;
  d.d_type = oc.d_type;
  d.compute = compute_for(math);
  d.epilogue = ep;

  Matrix D = poisoned(storage(oc.d_type, M, N, true, oc.ldd_pad, oc.d_offset));
  d.ldd = D.st.ld;
  GemmOperands ops;
  ops.a = A.data();
  ops.b = B.data();
  ops.d = D.data();

  Matrix C, bias, R;
  const std::vector<double>* c_vals = nullptr;
  const std::vector<double>* bias_vals = nullptr;
  const std::vector<double>* r_vals = nullptr;
  if (ep.beta != 0.0f && !oc.c_aliases_d) {
    C = random_matrix(storage(oc.d_type, M, N, true, oc.ldc_pad), rng);
    ops.c = C.data();
    d.ldc = C.st.ld;
    c_vals = &C.vals;
  }
  if (ep.bias) {
    bias = random_matrix(storage(oc.d_type, 1, N, true), rng);
    ops.bias = bias.data();
    bias_vals = &bias.vals;
  }
  if (ep.residual && !oc.residual_aliases_d) {
    R = random_matrix(storage(oc.d_type, M, N, true, oc.ldr_pad), rng);
    ops.residual = R.data();
    d.ldr = R.st.ld;
    r_vals = &R.vals;
  }
  // When C or the residual alias D, D starts with values the result must move away from: of a few
  // random candidates, each element takes the one farthest from its own reference result, so an
  // element the kernel never wrote cannot pass for a correct one.
  std::vector<double> d_init;
  const bool c_alias = ep.beta != 0.0f && oc.c_aliases_d, r_alias = ep.residual && oc.residual_aliases_d;
  if (c_alias || r_alias) {
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        const std::size_t ij = static_cast<std::size_t>(i * N + j);
        double best = 0.0, best_gap = -1.0;
        for (int t = 0; t < 4; ++t) {
          const double v = round_to(oc.d_type, rng.nonzero());
          const double f = epilogue_at(ep, acc[ij], c_alias ? v : (c_vals ? (*c_vals)[ij] : 0.0),
                                       bias_vals ? (*bias_vals)[static_cast<std::size_t>(j)] : 0.0,
                                       r_alias ? v : (r_vals ? (*r_vals)[ij] : 0.0));
          if (std::fabs(f - v) > best_gap) {
            best_gap = std::fabs(f - v);
            best = v;
          }
        }
        D.set(i, j, best);
      }
    d_init = D.vals;
    if (c_alias) {
      ops.c = D.data();
      d.ldc = d.ldd;
      c_vals = &d_init;
    }
    if (r_alias) {
      ops.residual = D.data();
      d.ldr = d.ldd;
      r_vals = &d_init;
    }
  }
  D.upload();

  GemmOptions opt;
  opt.instance = instance;
  opt.launch = launch;
  (void)(rr.status = backend::run_gemm(d, ops, stream, opt));
  backend::sync(stream);
  if (!rr.status.ok()) return rr;
  const std::vector<double> ref = reference_epilogue(acc, M, N, ep, c_vals, bias_vals, r_vals);
  rr.check = check_output(D, ref, d_init.empty() ? nullptr : &d_init);
  return rr;
}

}  // namespace kt
