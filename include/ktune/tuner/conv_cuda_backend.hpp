// ktune/tuner/conv_cuda_backend.hpp — the tuner's conv2d measuring backend on a real GPU (host code,
// CUDA runtime API and the conv table's launch functions; the conv counterpart of cuda_backend.hpp,
// whose input patterns and number helpers it reuses).
//
// Scratch, never the caller's tensors: per device one pool (grown on demand in its own stream's
// order — never a device-wide synchronisation, see workspace.hpp's alloc_for_stream — and released by
// release_scratch()) holds x, w, bias, residual (a buffer of its own: aliasing y does not change
// which kernel is fastest) and y — at most one extra copy of the operands and the output — each
// placed so that its pointer has exactly the key's alignment class; plus, with flush_l2, an L2-flush
// buffer of 2×L2; and, when beta ≠ 0, a copy of y's synthetic prior contents (y is read before it is written).
//
// Inputs: the GEMM backend's synthetic grid values (non-zero, exactly representable, reproducible).
// Timing: on a private non-blocking stream, event → launch → event per repeat, median of adaptive
// repeats (timing.hpp). Unlike the GEMM backend, L2 is NOT flushed between repeats by default
// (conv_backend_defaults()): in a network a layer reads the activations its predecessor has just
// written, and the weights of a convolution are small, so they are largely L2-resident — as in
// ktune-conv-bench's graph replays. Measured on the H200 (ResNet-50 layers, N = 32, f16 bias+ReLU,
// batchA): with the flush the tuned pick was within 3% of the bench's best instance on 10 of 15
// layers (geomean 1.6% slower), without it on 15 of 15. CudaBackendOptions::flush_l2 = true restores
// the GEMM policy (memset of 2×L2 before every repeat).
//
// Validation: y is poisoned (NaN) before each validation run (or, with beta ≠ 0, reset to its prior
// contents). The reference is the most conservative candidate — an mma.sync instance before a Hopper
// route, the analytic iterator before the optimized one, narrowest vectors, smallest tile — checked
// on up to 64 outputs against an exact host convolution of the synthetic inputs (the next one is tried
// if it fails, up to 3). Every candidate's output is compared with the reference on a strided
// sample of whole output rows (pixels; at most 2^20 elements) by relative Frobenius error.
//
// While a session is open the calling thread uses cudaStreamCaptureModeRelaxed (see cuda_backend.hpp).
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/problem.hpp"
#include "ktune/conv/tactics.hpp"
#include "ktune/device.hpp"
#include "ktune/tuner/conv_backend.hpp"
#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/timing.hpp"
#include "ktune/workspace.hpp"

namespace ktune::tuner {

// The conv backend's default options: the GEMM backend's, without the L2 flush (see the header).
inline CudaBackendOptions conv_backend_defaults() {
  CudaBackendOptions o;
  o.flush_l2 = false;
  return o;
}

class CudaConvBackend : public ConvTuningBackend {
 public:
  explicit CudaConvBackend(CudaBackendOptions o = conv_backend_defaults()) : opt_(o) {}
  // Pools are not freed here (the default tuner outlives the CUDA runtime); see release_scratch().
  ~CudaConvBackend() override = default;

  Status begin(int device, const Conv2dDesc& desc, const ConvAlignment& al, std::span<const ConvKernelEntry* const> candidates,
               std::unique_ptr<ConvTuningSession>& out) override;

  void release_scratch() override {
    std::lock_guard lock(pools_mu_);
    for (auto& [dev, pool] : pools_) {
      std::lock_guard plock(pool->mu);
      int prev = -1;
      (void)cudaGetDevice(&prev);
      (void)cudaSetDevice(dev);
      if (pool->buf) (void)cudaFree(pool->buf);
      if (pool->flush) (void)cudaFree(pool->flush);
      if (pool->host) (void)cudaFreeHost(pool->host);
      for (void* r : pool->retired_host) (void)cudaFreeHost(r);
      pool->retired_host.clear();
      pool->buf = pool->flush = pool->host = nullptr;
      pool->bytes = pool->flush_bytes = pool->host_bytes = 0;
      if (prev >= 0) (void)cudaSetDevice(prev);
      (void)cudaGetLastError();
    }
    ktune::detail::trim_private_mem_pools();
  }

  struct Pool {
    std::mutex mu;
    void* buf = nullptr;
    std::size_t bytes = 0;
    void* flush = nullptr;
    std::size_t flush_bytes = 0;
    void* host = nullptr;  // pinned: sampled rows, and the staging of input patterns
    std::size_t host_bytes = 0;
    bool buf_async = false, flush_async = false;  // stream-ordered allocations
    std::vector<void*> retired_host;              // outgrown pinned buffers (freed by release_scratch)
    cudaStream_t stream = nullptr;
    std::vector<cudaEvent_t> events;
  };

 private:
  CudaBackendOptions opt_;
  std::mutex pools_mu_;
  std::map<int, std::unique_ptr<Pool>> pools_;

  Pool& pool(int device) {
    std::lock_guard lock(pools_mu_);
    auto& p = pools_[device];
    if (!p) p = std::make_unique<Pool>();
    return *p;
  }
};

// The most conservative conv instances first: mma.sync before the Hopper routes, analytic before
// few-channels before optimized, narrowest vectors, smallest tile, then the name.
inline void sort_conv_references(std::vector<const ConvKernelEntry*>& refs) {
  auto iterator_order = [](ConvIterator i) {
    switch (i) {
      case ConvIterator::analytic: return 0;
      case ConvIterator::few_channels: return 1;
      case ConvIterator::optimized: return 2;
      case ConvIterator::gemm1x1: return 3;
      case ConvIterator::tma_im2col: return 4;
    }
    return 5;
  };
  std::stable_sort(refs.begin(), refs.end(), [&](const ConvKernelEntry* a, const ConvKernelEntry* b) {
    const int ia = iterator_order(a->config.iterator), ib = iterator_order(b->config.iterator);
    if (ia != ib) return ia < ib;
    if (a->config.gemm.align != b->config.gemm.align) return a->config.gemm.align < b->config.gemm.align;
    const long long ta = 1LL * a->config.gemm.tile.m * a->config.gemm.tile.n, tb = 1LL * b->config.gemm.tile.m * b->config.gemm.tile.n;
    if (ta != tb) return ta < tb;
    return a->name < b->name;
  });
}

class CudaConvSession : public ConvTuningSession {
 public:
  CudaConvSession(CudaConvBackend::Pool& pool, const CudaBackendOptions& opt) : pool_(pool), lock_(pool.mu), opt_(opt) {}
  ~CudaConvSession() override {
    if (pool_.stream) (void)cudaStreamSynchronize(pool_.stream);
    if (mode_set_) (void)cudaThreadExchangeStreamCaptureMode(&prev_mode_);
    if (prev_device_ >= 0 && prev_device_ != device_) (void)cudaSetDevice(prev_device_);
  }

  Status open(int device, const Conv2dDesc& desc, const ConvAlignment& al, std::span<const ConvKernelEntry* const> candidates) {
    device_ = device;
    d_ = desc;
    shape_ = conv_shape(d_);
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&prev_device_), "cudaGetDevice"));
    if (prev_device_ != device) KTUNE_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device), "cudaSetDevice"));
    prev_mode_ = cudaStreamCaptureModeRelaxed;
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaThreadExchangeStreamCaptureMode(&prev_mode_), "cudaThreadExchangeStreamCaptureMode"));
    mode_set_ = true;
    KTUNE_RETURN_IF_ERROR(query_device(device, dev_));

    refs_.assign(candidates.begin(), candidates.end());
    sort_conv_references(refs_);
    const std::size_t tries = static_cast<std::size_t>(std::max(1, opt_.max_reference_tries));
    if (refs_.size() > tries) refs_.resize(tries);

    // Operand layout in the pool: each tensor is one "matrix" of rows × cols (packed).
    const DType xt = d_.type, yt = d_.out_type;
    std::size_t cursor = 0;
    auto place = [&](detail::Operand& o, DType t, std::int64_t rows, std::int64_t cols, int vec, std::uint64_t seed) {
      o.type = t;
      o.rows = rows;
      o.cols = cols;
      o.ld = cols;
      o.elements = static_cast<std::size_t>(rows * cols);
      cursor = (cursor + 255) / 256 * 256;
      o.offset = cursor + detail::misalign_bytes(vec, size_of(t));
      cursor = o.offset + o.elements * static_cast<std::size_t>(size_of(t));
      o.pattern = detail::make_pattern(t, seed);
    };
    const EpilogueSpec& ep = d_.epilogue;
    place(x_, xt, d_.n * d_.h * d_.w, d_.c, al.x, 11);
    place(w_, xt, d_.k, shape_.kgemm, al.w, 12);
    if (ep.bias) place(bias_, yt, 1, d_.k, al.y, 14);
    if (ep.residual) place(res_, yt, shape_.m, d_.k, al.y, 15);
    has_prior_ = ep.beta != 0.0f;
    if (has_prior_) place(prior_, yt, shape_.m, d_.k, al.y, 13);
    place(y_, yt, shape_.m, d_.k, al.y, 16);
    y_.pattern.clear();
    const std::size_t need = cursor + 256;

    // Sampled output rows (pixels): stride s (odd when > 1), plus the last row.
    const std::int64_t max_rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(opt_.max_validation_elements) / std::max<std::int64_t>(1, d_.k));
    std::int64_t s = std::max<std::int64_t>(1, (shape_.m + max_rows - 1) / max_rows);
    if (s > 1 && s % 2 == 0) ++s;
    sample_stride_ = s;
    sample_rows_ = (shape_.m - 1) / s + 1;
    extra_last_row_ = (shape_.m - 1) % s != 0;
    const std::size_t host_need = static_cast<std::size_t>((sample_rows_ + (extra_last_row_ ? 1 : 0)) * d_.k) * size_of(yt);

    if (pool_.stream == nullptr)
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&pool_.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
    KTUNE_RETURN_IF_ERROR(grow_device(pool_.buf, pool_.bytes, pool_.buf_async, need, std::size_t{2} << 20, "conv tuning scratch"));
    const std::size_t flush_need = opt_.flush_l2 ? static_cast<std::size_t>(std::max(dev_.l2_bytes, 1 << 20)) * 2 : 0;
    KTUNE_RETURN_IF_ERROR(grow_device(pool_.flush, pool_.flush_bytes, pool_.flush_async, flush_need, std::size_t{1} << 20, "the L2 flush buffer"));
    // The pinned buffer also stages the input patterns (fill).
    KTUNE_RETURN_IF_ERROR(grow_host(std::max(host_need, detail::pattern_period * sizeof(float))));
    scratch_bytes_ = need + flush_need;
    auto* base = static_cast<char*>(pool_.buf);
    for (detail::Operand* o : {&x_, &w_, &bias_, &res_, &prior_, &y_})
      if (o->elements > 0) o->ptr = base + o->offset;
    ops_.x = x_.ptr;
    ops_.w = w_.ptr;
    ops_.y = y_.ptr;
    ops_.bias = bias_.ptr;
    ops_.residual = res_.ptr;
    for (detail::Operand* o : {&x_, &w_, &bias_, &res_, &prior_})
      if (o->elements > 0) KTUNE_RETURN_IF_ERROR(fill(*o));
    if (has_prior_) KTUNE_RETURN_IF_ERROR(reset_y());
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(pool_.stream), "filling conv tuning scratch"));
    return {};
  }

  Validation validate(const ConvTactic& t) override {
    Validation v;
    if (ref_.empty() && ref_status_.ok()) (void)(ref_status_ = make_reference());
    if (!ref_status_.ok()) {
      (void)(v.status = ref_status_);
      return v;
    }
    std::vector<double> got;
    double ms = 0;
    (void)(v.status = run_and_sample(*t.entry, t.launch, got, &ms));
    if (!v.status.ok()) return v;
    first_ms_[t.name] = ms;
    v.rel_error = rel_error(got, ref_);
    return v;
  }

  Measurement measure(const ConvTactic& t, const MeasureRequest& req) override {
    Measurement m;
    const ConvKernelEntry& e = *t.entry;
    const auto t0 = std::chrono::steady_clock::now();
    double est = 0;
    if (auto it = first_ms_.find(t.name); it != first_ms_.end()) est = it->second;
    if (est > req.max_launch_ms) {
      m.ms = est;
      m.repeats = 1;
      m.exceeded_bound = true;
      return m;
    }
    const int batch_max = std::max(1, req.repeats.batch);
    if (Status s = ensure_events(static_cast<std::size_t>(2 * batch_max)); !s.ok()) {
      (void)(m.status = s);
      return m;
    }
    std::vector<double> samples;
    for (;;) {
      int n = batch_max;
      if (est > 0 && req.budget_ms > 0) n = std::clamp(static_cast<int>(req.budget_ms / est), 1, batch_max);
      for (int r = 0; r < n; ++r) {
        if (opt_.flush_l2 && pool_.flush)
          if (Status s = cuda_status(cudaMemsetAsync(pool_.flush, (r + static_cast<int>(samples.size())) & 0xff, pool_.flush_bytes, pool_.stream), "L2 flush"); !s.ok()) {
            (void)(m.status = s);
            return m;
          }
        cudaEventRecord(pool_.events[static_cast<std::size_t>(2 * r)], pool_.stream);
        if (Status s = e.launch(d_, ops_, t.launch, pool_.stream); !s.ok()) {
          (void)(m.status = s);
          return m;
        }
        cudaEventRecord(pool_.events[static_cast<std::size_t>(2 * r + 1)], pool_.stream);
      }
      if (Status s = cuda_status(cudaEventSynchronize(pool_.events[static_cast<std::size_t>(2 * n - 1)]), "timing run"); !s.ok()) {
        (void)(m.status = s);
        return m;
      }
      for (int r = 0; r < n; ++r) {
        float ms = 0;
        if (Status s = cuda_status(cudaEventElapsedTime(&ms, pool_.events[static_cast<std::size_t>(2 * r)], pool_.events[static_cast<std::size_t>(2 * r + 1)]), "cudaEventElapsedTime"); !s.ok()) {
          (void)(m.status = s);
          return m;
        }
        samples.push_back(ms);
        if (ms > req.max_launch_ms) {
          m.ms = ms;
          m.repeats = static_cast<int>(samples.size());
          m.exceeded_bound = true;
          return m;
        }
      }
      const SampleStats st = stats_of(samples);
      est = st.median;
      const double spent = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const RepeatDecision dec = next_step(samples, req.repeats, spent, req.budget_ms, req.best_ms);
      if (dec != RepeatDecision::more) {
        m.ms = st.median;
        m.repeats = st.n;
        m.spread = st.rel_spread();
        m.stop = dec;
        return m;
      }
    }
  }

  std::size_t scratch_bytes() const override { return scratch_bytes_; }

  std::string describe() const override {
    std::string s = "synthetic inputs, ";
    s += opt_.flush_l2 ? "L2 flushed before each repeat" : "L2 not flushed (inputs L2-warm between repeats)";
    s += ", median of adaptive repeats, reference ";
    s += ref_name_.empty() ? std::string("(none)") : ref_name_;
    return s;
  }

 private:
  CudaConvBackend::Pool& pool_;
  std::unique_lock<std::mutex> lock_;
  CudaBackendOptions opt_;
  int device_ = -1, prev_device_ = -1;
  bool mode_set_ = false;
  cudaStreamCaptureMode prev_mode_ = cudaStreamCaptureModeRelaxed;
  DeviceInfo dev_;
  Conv2dDesc d_;
  ConvShape shape_;
  Conv2dOperands ops_;
  detail::Operand x_, w_, bias_, res_, prior_, y_;
  bool has_prior_ = false;
  std::int64_t sample_stride_ = 1, sample_rows_ = 0;
  bool extra_last_row_ = false;
  std::size_t scratch_bytes_ = 0;
  std::vector<const ConvKernelEntry*> refs_;
  std::vector<double> ref_;
  Status ref_status_;
  std::string ref_name_;
  std::unordered_map<std::string, double> first_ms_;  // validation run's time, by tactic name

  Status ensure_events(std::size_t n) {
    const std::size_t have = pool_.events.size();
    if (have >= n) return {};
    pool_.events.resize(n, nullptr);
    for (std::size_t i = have; i < n; ++i)
      if (Status s = cuda_status(cudaEventCreate(&pool_.events[i]), "cudaEventCreate"); !s.ok()) {
        pool_.events.resize(i);
        return s;
      }
    return {};
  }

  // Grow a device buffer of the pool in the order of the pool's stream (the only stream that uses it):
  // cudaFree would synchronise the whole device and so wait for other streams' work.
  Status grow_device(void*& buf, std::size_t& bytes, bool& stream_ordered, std::size_t need, std::size_t granule, const char* what) {
    if (need == 0 || bytes >= need) return {};
    if (buf) {
      if (ktune::detail::free_for_stream(buf, pool_.stream, stream_ordered) != cudaSuccess) (void)cudaGetLastError();
      buf = nullptr;
      bytes = 0;
    }
    const std::size_t want = (need + granule - 1) / granule * granule;
    void* p = nullptr;
    if (ktune::detail::alloc_for_stream(&p, want, pool_.stream, &stream_ordered) != cudaSuccess) {
      (void)cudaGetLastError();
      return error(StatusCode::cuda_error, "cannot allocate " + std::to_string((want + (1u << 20) - 1) >> 20) + " MiB for " + what);
    }
    buf = p;
    bytes = want;
    return {};
  }

  // The same for the pinned host buffer (cudaFreeHost synchronises the device too: outgrown ones retire).
  Status grow_host(std::size_t need) {
    if (pool_.host_bytes >= need) return {};
    const std::size_t want = (std::max(need, 2 * pool_.host_bytes) + (1u << 20) - 1) / (1u << 20) * (1u << 20);
    void* p = nullptr;
    if (cudaHostAlloc(&p, want, cudaHostAllocDefault) != cudaSuccess) {
      (void)cudaGetLastError();
      return error(StatusCode::cuda_error, "cannot allocate " + std::to_string(want >> 20) + " MiB of pinned host memory for conv tuning");
    }
    if (pool_.host) pool_.retired_host.push_back(pool_.host);
    pool_.host = p;
    pool_.host_bytes = want;
    return {};
  }

  Status fill(detail::Operand& o) {
    const int es = size_of(o.type);
    const std::size_t first = std::min(o.elements, o.pattern.size());
    // Through the pinned buffer (at least one pattern period, see open()): a true async copy.
    if (pool_.host_bytes < first * static_cast<std::size_t>(es)) return error(StatusCode::internal, "pinned staging buffer too small");
    for (std::size_t i = 0; i < first; ++i) host_fp::store(o.type, pool_.host, i, o.pattern[i]);
    auto* p = static_cast<char*>(o.ptr);
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(p, pool_.host, first * static_cast<std::size_t>(es), cudaMemcpyHostToDevice, pool_.stream), "cudaMemcpyAsync"));
    // The staging buffer is reused by the next operand: wait for this copy (on the pool's stream only).
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(pool_.stream), "cudaStreamSynchronize"));
    std::size_t have = first;
    while (have < o.elements) {
      const std::size_t c = std::min(have, o.elements - have);
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(p + have * es, p, c * es, cudaMemcpyDeviceToDevice, pool_.stream), "cudaMemcpyAsync"));
      have += c;
    }
    return {};
  }

  // y's prior contents (beta ≠ 0) before a validation run.
  Status reset_y() {
    return cuda_status(cudaMemcpyAsync(y_.ptr, prior_.ptr, y_.elements * static_cast<std::size_t>(size_of(y_.type)),
                                       cudaMemcpyDeviceToDevice, pool_.stream),
                       "resetting y");
  }

  // Poison y (or reset it), run once (timed), copy the sampled rows to `out` (as doubles).
  Status run_and_sample(const ConvKernelEntry& e, const ConvLaunchOptions& lo, std::vector<double>& out, double* ms) {
    const int ey = size_of(d_.out_type);
    if (has_prior_) KTUNE_RETURN_IF_ERROR(reset_y());
    else KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(y_.ptr, 0xff, y_.elements * static_cast<std::size_t>(ey), pool_.stream), "poisoning y"));
    KTUNE_RETURN_IF_ERROR(ensure_events(2));
    cudaEventRecord(pool_.events[0], pool_.stream);
    KTUNE_RETURN_IF_ERROR(e.launch(d_, ops_, lo, pool_.stream));
    cudaEventRecord(pool_.events[1], pool_.stream);
    const std::size_t row_bytes = static_cast<std::size_t>(d_.k) * static_cast<std::size_t>(ey);
    auto* host = static_cast<unsigned char*>(pool_.host);
    const auto* yptr = static_cast<const unsigned char*>(y_.ptr);
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpy2DAsync(host, row_bytes, yptr, static_cast<std::size_t>(sample_stride_) * row_bytes, row_bytes,
                                                        static_cast<std::size_t>(sample_rows_), cudaMemcpyDeviceToHost, pool_.stream),
                                      "copying sampled rows"));
    if (extra_last_row_)
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(host + static_cast<std::size_t>(sample_rows_) * row_bytes,
                                                        yptr + static_cast<std::size_t>(shape_.m - 1) * row_bytes, row_bytes,
                                                        cudaMemcpyDeviceToHost, pool_.stream),
                                        "copying the last row"));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(pool_.stream), "validation run"));
    float t = 0;
    if (cudaEventElapsedTime(&t, pool_.events[0], pool_.events[1]) != cudaSuccess) (void)cudaGetLastError();
    if (ms) *ms = t;
    const std::size_t n = static_cast<std::size_t>((sample_rows_ + (extra_last_row_ ? 1 : 0)) * d_.k);
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = host_fp::load(d_.out_type, host, i);
    return {};
  }

  static double rel_error(const std::vector<double>& got, const std::vector<double>& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double dlt = got[i] - ref[i];
      num += dlt * dlt;
      den += ref[i] * ref[i];
    }
    if (std::isnan(num)) return std::numeric_limits<double>::quiet_NaN();
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }

  std::int64_t sampled_row(std::size_t r) const {
    return r < static_cast<std::size_t>(sample_rows_) ? static_cast<std::int64_t>(r) * sample_stride_ : shape_.m - 1;
  }

  // The exact value (double accumulation) of y[pixel m][channel j] from the synthetic inputs.
  double host_value(std::int64_t m, std::int64_t j) const {
    const std::int64_t q = m % shape_.q, p = (m / shape_.q) % shape_.p, n = m / (shape_.q * shape_.p);
    double acc = 0;
    for (std::int64_t r = 0; r < d_.r; ++r) {
      const std::int64_t hi = p * d_.stride_h - d_.pad_h + r * d_.dil_h;
      if (hi < 0 || hi >= d_.h) continue;
      for (std::int64_t s = 0; s < d_.s; ++s) {
        const std::int64_t wi = q * d_.stride_w - d_.pad_w + s * d_.dil_w;
        if (wi < 0 || wi >= d_.w) continue;
        const std::int64_t xb = ((n * d_.h + hi) * d_.w + wi) * d_.c, wb = ((j * d_.r + r) * d_.s + s) * d_.c;
        for (std::int64_t c = 0; c < d_.c; ++c) acc += double(x_.at(xb + c)) * double(w_.at(wb + c));
      }
    }
    const EpilogueSpec& ep = d_.epilogue;
    float v = ep.alpha * static_cast<float>(acc);
    if (has_prior_) v += ep.beta * prior_.at(m * d_.k + j);
    if (ep.bias) v += bias_.at(j);
    if (ep.residual) v += res_.at(m * d_.k + j);
    v = host_fp::activation(ep.activation, v);
    if (ep.clamp) v = std::min(std::max(v, ep.clamp_lo), ep.clamp_hi);
    return v;
  }

  Status make_reference() {
    const double host_tol = 2e-2;  // catches a broken reference (O(1) errors), not rounding
    const int samples = static_cast<int>(std::clamp<std::int64_t>((std::int64_t{1} << 22) / std::max<std::int64_t>(1, shape_.kgemm), 8, 64));
    std::string why;
    for (const ConvKernelEntry* r : refs_) {
      std::vector<double> out;
      double ms = 0;
      Status s = run_and_sample(*r, ConvLaunchOptions{}, out, &ms);
      if (!s.ok()) {
        why += std::string(why.empty() ? "" : "; ") + std::string(r->name) + ": " + s.message();
        continue;
      }
      const std::size_t rows = static_cast<std::size_t>(sample_rows_ + (extra_last_row_ ? 1 : 0));
      double num = 0, den = 0;
      for (int t = 0; t < samples; ++t) {
        const std::size_t rr = (static_cast<std::size_t>(t) * 7919u) % rows;
        const std::int64_t j = static_cast<std::int64_t>((static_cast<std::uint64_t>(t) * 2654435761u + static_cast<std::uint64_t>(t) * t) % static_cast<std::uint64_t>(d_.k));
        const double want = host_value(sampled_row(rr), j);
        const double got = out[rr * static_cast<std::size_t>(d_.k) + static_cast<std::size_t>(j)];
        num += (got - want) * (got - want);
        den += want * want;
      }
      const double err = std::isnan(num) ? std::numeric_limits<double>::quiet_NaN() : den > 0 ? std::sqrt(num / den) : std::sqrt(num);
      if (err <= host_tol) {
        ref_ = std::move(out);
        ref_name_ = std::string(r->name);
        return {};
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2e", err);
      why += std::string(why.empty() ? "" : "; ") + std::string(r->name) + " differs from the host check by " + buf;
    }
    return error(StatusCode::internal, "no trustworthy conv reference output (" + why + ")");
  }
};

inline Status CudaConvBackend::begin(int device, const Conv2dDesc& desc, const ConvAlignment& al,
                                     std::span<const ConvKernelEntry* const> candidates, std::unique_ptr<ConvTuningSession>& out) {
  if (candidates.empty()) return error(StatusCode::no_instance, "no conv candidates to tune");
  auto s = std::make_unique<CudaConvSession>(pool(device), opt_);
  KTUNE_RETURN_IF_ERROR(s->open(device, desc, al, candidates));
  out = std::move(s);
  return {};
}

}  // namespace ktune::tuner
