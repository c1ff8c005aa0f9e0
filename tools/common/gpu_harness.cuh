// tools/common/gpu_harness.cuh — what ktune-profile and the benchmarks share on the GPU: device
// buffers, hash-based random data, a float64-accumulating reference GEMM, the relative Frobenius
// error, the cuBLASLt reference (computing ktune's row-major problem in column-major cuBLAS), and
// CUDA-event timing of CUDA-graph replays.
//
// Every CUDA and cuBLAS return code is turned into a ktune::Status; nothing here aborts.
// Host code only: the kernels are in gpu_harness.cu (link ktune_tools_common).
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ktune/device.hpp"
#include "ktune/gemm.hpp"
#include "gpu_harness_kernels.hpp"
#include "problem_spec.hpp"

namespace ktune::tools {

inline Status cublas_status(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return error(StatusCode::internal, std::string(what) + ": " + cublasGetStatusString(s));
}

#define KTUNE_TOOLS_CUDA(call) KTUNE_RETURN_IF_ERROR(::ktune::cuda_status((call), #call))
#define KTUNE_TOOLS_CUBLAS(call) KTUNE_RETURN_IF_ERROR(::ktune::tools::cublas_status((call), #call))

// The commit the tool was built from: CMake passes KTUNE_GIT_COMMIT (quoted or not).
#define KTUNE_TOOLS_STR2(x) #x
#define KTUNE_TOOLS_STR(x) KTUNE_TOOLS_STR2(x)
inline std::string git_commit() {
#ifdef KTUNE_GIT_COMMIT
  std::string s = KTUNE_TOOLS_STR(KTUNE_GIT_COMMIT);
  s.erase(std::remove(s.begin(), s.end(), '"'), s.end());
  s.erase(std::remove(s.begin(), s.end(), '\\'), s.end());
  return s.empty() ? "unknown" : s;
#else
  return "unknown";
#endif
}

inline std::string cuda_version_string(int v) {  // 13000 → "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

inline std::string cublaslt_version_string() {
  const std::size_t v = cublasLtGetVersion();  // e.g. 130100 → 13.1.0
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

// After a failure: is the CUDA context still usable? Sticky errors (illegal address, launch
// failure) poison the context for the rest of the process; ordinary errors are cleared here.
inline bool cuda_context_alive() {
  (void)cudaGetLastError();
  if (cudaDeviceSynchronize() != cudaSuccess) {
    (void)cudaGetLastError();
    return cudaDeviceSynchronize() == cudaSuccess;  // a sticky error is reported again
  }
  return true;
}

// ---- Memory ---------------------------------------------------------------------------------------

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  Status allocate(std::size_t bytes) {
    reset();
    KTUNE_TOOLS_CUDA(cudaMalloc(&p_, std::max<std::size_t>(bytes, 256)));
    bytes_ = bytes;
    return {};
  }
  void reset() {
    if (p_ != nullptr) (void)cudaFree(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

class CudaEvent {
 public:
  CudaEvent() = default;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);
  }
  Status create() { return cuda_status(cudaEventCreate(&e_), "cudaEventCreate"); }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// ---- Random data, error norm, reference GEMM: gpu_harness_kernels.hpp (the kernels: gpu_harness.cu) ----

struct ErrorStats {
  double rel = std::numeric_limits<double>::quiet_NaN();  // ‖x − ref‖_F / ‖ref‖_F
  double ref_norm = 0.0;
  std::int64_t nonfinite = 0;
  bool passes(double tol) const { return std::isfinite(rel) && nonfinite == 0 && ref_norm > 0.0 && rel <= tol; }
};

// Relative Frobenius error of x (type tx) against ref (type tr), n elements; synchronizes `s`.
inline Status rel_error(const void* x, DType tx, const void* ref, DType tr, std::int64_t n, cudaStream_t s,
                        ErrorStats& out) {
  DeviceBuffer acc;
  KTUNE_RETURN_IF_ERROR(acc.allocate(3 * sizeof(double)));
  KTUNE_TOOLS_CUDA(cudaMemsetAsync(acc.get(), 0, 3 * sizeof(double), s));
  KTUNE_RETURN_IF_ERROR(detail::launch_diff_norm(x, tx, ref, tr, n, static_cast<double*>(acc.get()), s));
  double h[3] = {0, 0, 0};
  KTUNE_TOOLS_CUDA(cudaMemcpyAsync(h, acc.get(), sizeof h, cudaMemcpyDeviceToHost, s));
  KTUNE_TOOLS_CUDA(cudaStreamSynchronize(s));
  out.ref_norm = std::sqrt(h[1]);
  out.nonfinite = static_cast<std::int64_t>(h[2]);
  out.rel = h[1] > 0.0 ? std::sqrt(h[0] / h[1]) : std::numeric_limits<double>::quiet_NaN();
  return {};
}

// ---- cuBLASLt reference -------------------------------------------------------------------------------
//
// ktune computes row-major D (M×N) = A·B. Row-major D is column-major Dᵀ (N×M) with the same leading
// dimension, and Dᵀ = Bᵀ·Aᵀ, so cuBLAS gets m' = N, n' = M, its first operand is B's memory and its
// second A's memory:
//   B row-major (K×N, ldb ≥ N) read column-major is Bᵀ (N×K)       → CUBLAS_OP_N
//   B col-major (K×N, ldb ≥ K) read column-major is B  (K×N)       → CUBLAS_OP_T
//   A row-major (M×K, lda ≥ K) read column-major is Aᵀ (K×M)       → CUBLAS_OP_N
//   A col-major (M×K, lda ≥ M) read column-major is A  (M×K)       → CUBLAS_OP_T
// ktune's per-column bias (N values) is a per-row bias of Dᵀ, which is what cuBLASLt's BIAS adds.

inline cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

inline cublasComputeType_t cublas_compute(Precision p) {
  return p == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

class CublasRef {
 public:
  CublasRef() = default;
  CublasRef(const CublasRef&) = delete;
  CublasRef& operator=(const CublasRef&) = delete;
  ~CublasRef() {
    if (lt_ != nullptr) (void)cublasLtDestroy(lt_);
    if (blas_ != nullptr) (void)cublasDestroy(blas_);
  }

  Status init(std::size_t workspace_bytes = std::size_t{64} << 20) {
    KTUNE_TOOLS_CUBLAS(cublasLtCreate(&lt_));
    KTUNE_TOOLS_CUBLAS(cublasCreate(&blas_));
    KTUNE_RETURN_IF_ERROR(workspace_.allocate(workspace_bytes));
    KTUNE_TOOLS_CUBLAS(cublasSetWorkspace(blas_, workspace_.get(), workspace_.bytes()));
    return {};
  }

  // One problem's descriptors and algorithm, reused for every launch.
  class Plan {
   public:
    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
      if (pref_) (void)cublasLtMatmulPreferenceDestroy(pref_);
      if (ld_) (void)cublasLtMatrixLayoutDestroy(ld_);
      if (lx_) (void)cublasLtMatrixLayoutDestroy(lx_);
      if (ly_) (void)cublasLtMatrixLayoutDestroy(ly_);
      if (op_) (void)cublasLtMatmulDescDestroy(op_);
    }
    // "cublasLt" or "cublasGemmEx" (when cuBLASLt's heuristic offers nothing for the problem).
    const std::string& api() const { return api_; }

   private:
    friend class CublasRef;
    GemmDesc desc_{};
    Precision precision_{};
    cublasOperation_t tx_ = CUBLAS_OP_N, ty_ = CUBLAS_OP_N;
    cublasLtMatmulDesc_t op_ = nullptr;
    cublasLtMatrixLayout_t lx_ = nullptr, ly_ = nullptr, ld_ = nullptr;
    cublasLtMatmulPreference_t pref_ = nullptr;
    cublasLtMatmulAlgo_t algo_{};
    bool use_lt_ = false;
    std::string api_;
  };

  // `bias` (N elements of the output type) is needed for bias_relu problems.
  Status make_plan(const ProblemSpec& spec, const void* bias, std::unique_ptr<Plan>& out) {
    auto p = std::make_unique<Plan>();
    const GemmDesc d = resolved(spec.desc());
    p->desc_ = d;
    p->precision_ = spec.precision;
    p->tx_ = d.b_layout == Layout::row ? CUBLAS_OP_N : CUBLAS_OP_T;
    p->ty_ = d.a_layout == Layout::row ? CUBLAS_OP_N : CUBLAS_OP_T;
    const cudaDataType_t ab = cuda_type(d.ab_type), dt = cuda_type(d.d_type);
    const auto N = static_cast<std::uint64_t>(d.n), M = static_cast<std::uint64_t>(d.m), K = static_cast<std::uint64_t>(d.k);
    KTUNE_TOOLS_CUBLAS(cublasLtMatmulDescCreate(&p->op_, cublas_compute(spec.precision), CUDA_R_32F));
    KTUNE_TOOLS_CUBLAS(cublasLtMatmulDescSetAttribute(p->op_, CUBLASLT_MATMUL_DESC_TRANSA, &p->tx_, sizeof p->tx_));
    KTUNE_TOOLS_CUBLAS(cublasLtMatmulDescSetAttribute(p->op_, CUBLASLT_MATMUL_DESC_TRANSB, &p->ty_, sizeof p->ty_));
    if (spec.bias_relu) {
      if (bias == nullptr) return error(StatusCode::invalid_argument, "bias_relu problem without a bias vector");
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
      KTUNE_TOOLS_CUBLAS(cublasLtMatmulDescSetAttribute(p->op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
      KTUNE_TOOLS_CUBLAS(cublasLtMatmulDescSetAttribute(p->op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
      const std::int32_t bias_type = dt;
      KTUNE_TOOLS_CUBLAS(cublasLtMatmulDescSetAttribute(p->op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
    }
    // First operand: B's memory; second: A's memory; output: Dᵀ, N×M column-major.
    if (p->tx_ == CUBLAS_OP_N)
      KTUNE_TOOLS_CUBLAS(cublasLtMatrixLayoutCreate(&p->lx_, ab, N, K, d.ldb));
    else
      KTUNE_TOOLS_CUBLAS(cublasLtMatrixLayoutCreate(&p->lx_, ab, K, N, d.ldb));
    if (p->ty_ == CUBLAS_OP_N)
      KTUNE_TOOLS_CUBLAS(cublasLtMatrixLayoutCreate(&p->ly_, ab, K, M, d.lda));
    else
      KTUNE_TOOLS_CUBLAS(cublasLtMatrixLayoutCreate(&p->ly_, ab, M, K, d.lda));
    KTUNE_TOOLS_CUBLAS(cublasLtMatrixLayoutCreate(&p->ld_, dt, N, M, d.ldd));
    KTUNE_TOOLS_CUBLAS(cublasLtMatmulPreferenceCreate(&p->pref_));
    const std::uint64_t ws = workspace_.bytes();
    KTUNE_TOOLS_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(p->pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt_, p->op_, p->lx_, p->ly_, p->ld_, p->ld_, p->pref_, 1,
                                                             &result, &found);
    if (hs == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
      p->algo_ = result.algo;
      p->use_lt_ = true;
      p->api_ = "cublasLt";
    } else if (!spec.bias_relu) {
      p->use_lt_ = false;
      p->api_ = "cublasGemmEx";
    } else {
      return error(StatusCode::unsupported, "cuBLASLt offers no algorithm for " + spec.name() +
                                                (hs != CUBLAS_STATUS_SUCCESS ? std::string(": ") + cublasGetStatusString(hs) : ""));
    }
    out = std::move(p);
    return {};
  }

  // D = A·B (+ epilogue) on `s`, capturable into a CUDA graph.
  Status run(const Plan& p, const void* A, const void* B, void* D, cudaStream_t s) {
    const float alpha = 1.0f, beta = 0.0f;
    if (p.use_lt_) {
      KTUNE_TOOLS_CUBLAS(cublasLtMatmul(lt_, p.op_, &alpha, B, p.lx_, A, p.ly_, &beta, D, p.ld_, D, p.ld_, &p.algo_,
                                        workspace_.get(), workspace_.bytes(), s));
    } else {
      const GemmDesc& d = p.desc_;
      const cudaDataType_t ab = cuda_type(d.ab_type), dt = cuda_type(d.d_type);
      KTUNE_TOOLS_CUBLAS(cublasSetStream(blas_, s));
      KTUNE_TOOLS_CUBLAS(cublasGemmEx(blas_, p.tx_, p.ty_, static_cast<int>(d.n), static_cast<int>(d.m),
                                      static_cast<int>(d.k), &alpha, B, ab, static_cast<int>(d.ldb), A, ab,
                                      static_cast<int>(d.lda), &beta, D, dt, static_cast<int>(d.ldd),
                                      cublas_compute(p.precision_), CUBLAS_GEMM_DEFAULT));
    }
    return cuda_status(cudaGetLastError(), "cuBLAS launch");
  }

 private:
  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  DeviceBuffer workspace_;
};

// ---- One problem's data ---------------------------------------------------------------------------------

// Random A, B (and bias), the output buffers, and the references. When one set of A, B, D fits in
// twice the L2 cache, several sets are allocated and launches rotate over them, so repeated runs do
// not measure L2-resident inputs (the same sets for ktune and cuBLAS).
class ProblemData {
 public:
  Status create(const ProblemSpec& spec, const DeviceInfo& dev, std::uint64_t seed, cudaStream_t s, int max_sets = 32) {
    spec_ = spec;
    desc_ = resolved(spec.desc());
    const GemmDesc& d = desc_;
    const int eb = size_of(d.ab_type), eo = size_of(d.d_type);
    a_elems_ = (d.a_layout == Layout::row ? d.m : d.k) * d.lda;
    b_elems_ = (d.b_layout == Layout::row ? d.k : d.n) * d.ldb;
    d_elems_ = d.m * d.ldd;
    const double set_bytes = double(a_elems_) * eb + double(b_elems_) * eb + double(d_elems_) * eo;
    const double l2 = dev.l2_bytes > 0 ? dev.l2_bytes : 64.0 * 1024 * 1024;
    int sets = set_bytes >= 2.0 * l2 ? 1 : static_cast<int>(std::ceil(2.0 * l2 / set_bytes));
    sets = std::clamp(sets, 1, std::max(1, max_sets));
    sets_.clear();
    sets_.resize(sets);
    for (int i = 0; i < sets; ++i) {
      KTUNE_RETURN_IF_ERROR(sets_[i].a.allocate(a_elems_ * eb));
      KTUNE_RETURN_IF_ERROR(sets_[i].b.allocate(b_elems_ * eb));
      KTUNE_RETURN_IF_ERROR(sets_[i].d.allocate(d_elems_ * eo));
      KTUNE_RETURN_IF_ERROR(fill_random(sets_[i].a.get(), d.ab_type, a_elems_, seed + 101 * i + 1, s));
      KTUNE_RETURN_IF_ERROR(fill_random(sets_[i].b.get(), d.ab_type, b_elems_, seed + 101 * i + 2, s));
      KTUNE_TOOLS_CUDA(cudaMemsetAsync(sets_[i].d.get(), 0xFF, d_elems_ * eo, s));
    }
    if (spec.bias_relu) {
      KTUNE_RETURN_IF_ERROR(bias_.allocate(d.n * eo));
      KTUNE_RETURN_IF_ERROR(fill_random(bias_.get(), d.d_type, d.n, seed + 7, s));
    }
    KTUNE_RETURN_IF_ERROR(ref_.allocate(d_elems_ * eo));
    KTUNE_TOOLS_CUDA(cudaMemsetAsync(ref_.get(), 0xFF, d_elems_ * eo, s));
    KTUNE_TOOLS_CUDA(cudaStreamSynchronize(s));
    return {};
  }

  const ProblemSpec& spec() const { return spec_; }
  const GemmDesc& desc() const { return desc_; }  // leading dimensions resolved
  int sets() const { return static_cast<int>(sets_.size()); }
  double bytes_per_set() const {
    return double(a_elems_ + b_elems_) * size_of(desc_.ab_type) + double(d_elems_) * size_of(desc_.d_type);
  }
  const void* bias() const { return bias_.get(); }
  void* ref() const { return ref_.get(); }  // the reference output (cuBLAS, set 0)
  std::int64_t d_elems() const { return d_elems_; }

  GemmOperands ops(int i) const {
    const OperandSet& s = sets_[static_cast<std::size_t>(i) % sets_.size()];
    GemmOperands o;
    o.a = s.a.get();
    o.b = s.b.get();
    o.d = s.d.get();
    o.bias = bias_.get();
    return o;
  }

  // Fill set i's D with NaN bit patterns (0xFF bytes are NaN in f32, f16 and bf16).
  Status poison(int i, cudaStream_t s) const {
    return cuda_status(cudaMemsetAsync(ops(i).d, 0xFF, d_elems_ * size_of(desc_.d_type), s), "cudaMemsetAsync(poison D)");
  }

  // Error of `x` (an output of the problem's type) against the reference output.
  Status error_vs_ref(const void* x, cudaStream_t s, ErrorStats& out) const {
    return rel_error(x, desc_.d_type, ref_.get(), desc_.d_type, d_elems_, s, out);
  }

  // The float64-accumulating GEMM on set 0, kept as an fp32 M×N matrix: the independent check of the
  // cuBLAS reference (it catches a wrong operand or layout mapping in the cuBLAS call), and the
  // reference of last resort when cuBLAS cannot run the problem. Needs a packed D (ldd == N).
  Status compute_ref32(cudaStream_t s) {
    const GemmDesc& d = desc_;
    if (d.ldd != d.n) return error(StatusCode::unsupported, "the fp32 reference needs a packed D");
    KTUNE_RETURN_IF_ERROR(ref32_.allocate(d_elems_ * sizeof(float)));
    const GemmOperands o = ops(0);
    KTUNE_RETURN_IF_ERROR(detail::launch_reference_gemm(d, o.a, o.b, spec_.bias_relu ? bias_.get() : nullptr,
                                                        spec_.bias_relu, static_cast<float*>(ref32_.get()), s));
    return cuda_status(cudaStreamSynchronize(s), "reference_gemm_kernel");
  }
  bool has_ref32() const { return ref32_.get() != nullptr; }

  // Error of `x` (an output of the problem's type) against the fp32 reference (compute_ref32 first).
  Status error_vs_ref32(const void* x, cudaStream_t s, ErrorStats& out) const {
    if (!has_ref32()) return error(StatusCode::internal, "no fp32 reference computed");
    return rel_error(x, desc_.d_type, ref32_.get(), DType::f32, d_elems_, s, out);
  }

  // The cuBLAS reference output against the fp32 reference.
  Status ref_vs_ref32(cudaStream_t s, ErrorStats& out) const { return error_vs_ref32(ref_.get(), s, out); }

 private:
  struct OperandSet {
    DeviceBuffer a, b, d;
  };
  ProblemSpec spec_{};
  GemmDesc desc_{};
  std::int64_t a_elems_ = 0, b_elems_ = 0, d_elems_ = 0;
  std::vector<OperandSet> sets_;
  DeviceBuffer bias_, ref_, ref32_;
};

// ---- Timing -----------------------------------------------------------------------------------------------

// One launch of the timed operation; `i` counts launches (to rotate buffer sets).
using LaunchFn = std::function<Status(int i, cudaStream_t)>;

// `iters` launches captured into a CUDA graph, replayed as one unit: no host launch gaps, so ktune
// and cuBLAS (whose host side costs several µs per call) are both timed on the GPU alone. Falls back
// to plain launches when capture fails.
class LaunchGraph {
 public:
  LaunchGraph() = default;
  LaunchGraph(const LaunchGraph&) = delete;
  LaunchGraph& operator=(const LaunchGraph&) = delete;
  ~LaunchGraph() { destroy(); }

  Status capture(const LaunchFn& fn, int iters, cudaStream_t s, bool try_graph = true) {
    destroy();
    fn_ = fn;
    iters_ = std::max(1, iters);
    if (!try_graph) return {};
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      (void)cudaGetLastError();
      return {};
    }
    Status launched;
    for (int i = 0; i < iters_ && launched.ok(); ++i) (void)(launched = fn(i, s));
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(s, &g);
    if (!launched.ok()) {
      if (g != nullptr) (void)cudaGraphDestroy(g);
      (void)cudaGetLastError();
      return launched;
    }
    if (end != cudaSuccess || g == nullptr) {
      (void)cudaGetLastError();
      return {};  // not capturable: plain launches
    }
    const cudaError_t inst = cudaGraphInstantiate(&exec_, g, 0);
    (void)cudaGraphDestroy(g);
    if (inst != cudaSuccess) {
      exec_ = nullptr;
      (void)cudaGetLastError();
    }
    return {};
  }

  Status launch(cudaStream_t s) const {
    if (exec_ != nullptr) return cuda_status(cudaGraphLaunch(exec_, s), "cudaGraphLaunch");
    for (int i = 0; i < iters_; ++i) KTUNE_RETURN_IF_ERROR(fn_(i, s));
    return {};
  }
  bool is_graph() const { return exec_ != nullptr; }
  int iters() const { return iters_; }

 private:
  void destroy() {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
  cudaGraphExec_t exec_ = nullptr;
  LaunchFn fn_;
  int iters_ = 1;
};

struct TimingOptions {
  double target_ms_per_repeat = 8.0;  // launches per repeat are chosen to take about this long
  int iters = 0;                      // launches per repeat; 0: from target_ms_per_repeat
  int repeats = 7;                    // timed graph replays; the median is reported
  int max_iters = 1000;
  int warmup = 2;
  bool use_graph = true;
  // time_paired: before each timed replay, replay the same graph untimed for about this long, so each side is
  // timed in its own power/clock state and not in the one the other side left (0: plain alternation).
  double paired_settle_ms = 60.0;
};

struct Timing {
  double median_ms = std::numeric_limits<double>::quiet_NaN();  // per launch
  double min_ms = median_ms, max_ms = median_ms;
  int iters = 0, repeats = 0;
  bool graph = false;
};

// Estimate one launch's time from a few events-timed plain launches (after warm-up).
inline Status estimate_launch_ms(const LaunchFn& fn, cudaStream_t s, int warmup, double& ms) {
  for (int i = 0; i < std::max(1, warmup); ++i) KTUNE_RETURN_IF_ERROR(fn(i, s));
  KTUNE_TOOLS_CUDA(cudaStreamSynchronize(s));
  CudaEvent e0, e1;
  KTUNE_RETURN_IF_ERROR(e0.create());
  KTUNE_RETURN_IF_ERROR(e1.create());
  constexpr int n = 3;
  KTUNE_TOOLS_CUDA(cudaEventRecord(e0.get(), s));
  for (int i = 0; i < n; ++i) KTUNE_RETURN_IF_ERROR(fn(i, s));
  KTUNE_TOOLS_CUDA(cudaEventRecord(e1.get(), s));
  KTUNE_TOOLS_CUDA(cudaEventSynchronize(e1.get()));
  float t = 0.0f;
  KTUNE_TOOLS_CUDA(cudaEventElapsedTime(&t, e0.get(), e1.get()));
  ms = std::max(1e-4, double(t) / n);
  return {};
}

// Warm up, pick the launches per repeat, capture them into a graph, replay it `repeats` times
// between CUDA events; the median per-launch time over the repeats is the result.
inline Status time_launches(const LaunchFn& fn, cudaStream_t s, const TimingOptions& opt, Timing& out) {
  out = Timing{};
  double est = 0.0;
  KTUNE_RETURN_IF_ERROR(estimate_launch_ms(fn, s, opt.warmup, est));
  int iters = opt.iters > 0 ? opt.iters
                            : static_cast<int>(std::clamp(std::ceil(opt.target_ms_per_repeat / est), 1.0, double(opt.max_iters)));
  LaunchGraph graph;
  KTUNE_RETURN_IF_ERROR(graph.capture(fn, iters, s, opt.use_graph));
  KTUNE_RETURN_IF_ERROR(graph.launch(s));  // warm the graph (upload, first replay)
  KTUNE_TOOLS_CUDA(cudaStreamSynchronize(s));
  CudaEvent e0, e1;
  KTUNE_RETURN_IF_ERROR(e0.create());
  KTUNE_RETURN_IF_ERROR(e1.create());
  std::vector<double> per_launch;
  const int repeats = std::max(1, opt.repeats);
  for (int r = 0; r < repeats; ++r) {
    KTUNE_TOOLS_CUDA(cudaEventRecord(e0.get(), s));
    KTUNE_RETURN_IF_ERROR(graph.launch(s));
    KTUNE_TOOLS_CUDA(cudaEventRecord(e1.get(), s));
    KTUNE_TOOLS_CUDA(cudaEventSynchronize(e1.get()));
    float t = 0.0f;
    KTUNE_TOOLS_CUDA(cudaEventElapsedTime(&t, e0.get(), e1.get()));
    per_launch.push_back(double(t) / iters);
  }
  KTUNE_TOOLS_CUDA(cudaGetLastError());
  std::sort(per_launch.begin(), per_launch.end());
  const std::size_t n = per_launch.size();
  out.median_ms = n % 2 ? per_launch[n / 2] : 0.5 * (per_launch[n / 2 - 1] + per_launch[n / 2]);
  out.min_ms = per_launch.front();
  out.max_ms = per_launch.back();
  out.iters = iters;
  out.repeats = repeats;
  out.graph = graph.is_graph();
  return {};
}

// Two launch sequences timed in alternation: graph A, graph B, A, B, ... for `rounds` rounds, each
// replay between its own events. Why: under sustained tensor-core load the GPU runs at its power cap
// and its clock drifts within one process (H200: cuBLAS bf16 4096^3 moved between 620 and 800 TF/s),
// so two medians taken one after the other carry that drift; the median of the per-round ratios does
// not. ratio_b_over_a > 1 means A is faster.
// Each timed replay follows opt.paired_settle_ms of untimed replays of the same graph: the power cap's
// clock control lags by tens of milliseconds, so a replay right after the other side's runs in the
// clock state that side left. H200, s8-batchA, one process, bf16 tn 4096^3, mma.sync 128x256x64 against
// cuBLASLt: alternating 20 ms replays gave 0.3585 vs 0.1870 ms (0.52x), the same kernels timed alone
// (time_launches, median of 9) 0.3434 vs 0.2073 ms (0.60x); alone, cuBLAS's first repeats ran faster
// (min 0.1919 ms) and the mma.sync kernel's slower (max 0.3802 ms) than their medians: each inherited
// the other's clock (notes/sm80-mma.md, session 8).
struct PairedTiming {
  double a_ms = std::numeric_limits<double>::quiet_NaN(), b_ms = a_ms;  // medians per launch
  double ratio_b_over_a = a_ms;                                         // median of the per-round ratios
  int rounds = 0;
};

inline Status time_paired(const LaunchFn& a, const LaunchFn& b, cudaStream_t s, const TimingOptions& opt, int rounds,
                          PairedTiming& out) {
  out = PairedTiming{};
  double est_a = 0.0, est_b = 0.0;
  KTUNE_RETURN_IF_ERROR(estimate_launch_ms(a, s, opt.warmup, est_a));
  KTUNE_RETURN_IF_ERROR(estimate_launch_ms(b, s, opt.warmup, est_b));
  const auto iters_for = [&](double est) {
    return opt.iters > 0 ? opt.iters
                         : static_cast<int>(std::clamp(std::ceil(opt.target_ms_per_repeat / est), 1.0, double(opt.max_iters)));
  };
  const int ia = iters_for(est_a), ib = iters_for(est_b);
  LaunchGraph ga, gb;
  KTUNE_RETURN_IF_ERROR(ga.capture(a, ia, s, opt.use_graph));
  KTUNE_RETURN_IF_ERROR(gb.capture(b, ib, s, opt.use_graph));
  KTUNE_RETURN_IF_ERROR(ga.launch(s));
  KTUNE_RETURN_IF_ERROR(gb.launch(s));
  KTUNE_TOOLS_CUDA(cudaStreamSynchronize(s));
  // Untimed replays before each timed one (at least one replay's worth of settling when asked for).
  const auto settle_for = [&](double est, int iters) {
    return opt.paired_settle_ms > 0.0 ? static_cast<int>(std::ceil(opt.paired_settle_ms / std::max(1e-4, est * iters))) : 0;
  };
  const int sa = settle_for(est_a, ia), sb = settle_for(est_b, ib);
  CudaEvent e0, e1, e2, e3;
  KTUNE_RETURN_IF_ERROR(e0.create());
  KTUNE_RETURN_IF_ERROR(e1.create());
  KTUNE_RETURN_IF_ERROR(e2.create());
  KTUNE_RETURN_IF_ERROR(e3.create());
  std::vector<double> ta, tb, ratio;
  for (int r = 0; r < std::max(1, rounds); ++r) {
    for (int i = 0; i < sa; ++i) KTUNE_RETURN_IF_ERROR(ga.launch(s));
    KTUNE_TOOLS_CUDA(cudaEventRecord(e0.get(), s));
    KTUNE_RETURN_IF_ERROR(ga.launch(s));
    KTUNE_TOOLS_CUDA(cudaEventRecord(e1.get(), s));
    for (int i = 0; i < sb; ++i) KTUNE_RETURN_IF_ERROR(gb.launch(s));
    KTUNE_TOOLS_CUDA(cudaEventRecord(e2.get(), s));
    KTUNE_RETURN_IF_ERROR(gb.launch(s));
    KTUNE_TOOLS_CUDA(cudaEventRecord(e3.get(), s));
    KTUNE_TOOLS_CUDA(cudaEventSynchronize(e3.get()));
    float t01 = 0.0f, t12 = 0.0f;
    KTUNE_TOOLS_CUDA(cudaEventElapsedTime(&t01, e0.get(), e1.get()));
    KTUNE_TOOLS_CUDA(cudaEventElapsedTime(&t12, e2.get(), e3.get()));
    ta.push_back(double(t01) / ia);
    tb.push_back(double(t12) / ib);
    ratio.push_back(tb.back() / ta.back());
  }
  KTUNE_TOOLS_CUDA(cudaGetLastError());
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  out.a_ms = median(ta);
  out.b_ms = median(tb);
  out.ratio_b_over_a = median(ratio);
  out.rounds = static_cast<int>(ratio.size());
  return {};
}

inline double tflops(double flops, double ms) { return ms > 0.0 ? flops / (ms * 1e-3) / 1e12 : 0.0; }

}  // namespace ktune::tools
