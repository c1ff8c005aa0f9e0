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
    detail::release_pools(pools_mu_, pools_, [](Pool& pool) { detail::free_scratch(pool); });
  }

  using Pool = detail::ScratchPool;  // per-device scratch, stream and events (cuda_backend.hpp)

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
// few-channels before optimized (the stem last), narrowest vectors, smallest tile, then the name.
inline void sort_conv_references(std::vector<const ConvKernelEntry*>& refs) {
  auto iterator_order = [](ConvIterator i) {
    switch (i) {
      case ConvIterator::analytic: return 0;
      case ConvIterator::few_channels: return 1;
      case ConvIterator::optimized: return 2;
      case ConvIterator::gemm1x1: return 3;
      case ConvIterator::tma_im2col: return 4;
      case ConvIterator::stem: return 5;  // its own kernel: the least conservative reference
    }
    return 6;
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
  CudaConvSession(CudaConvBackend::Pool& pool, const CudaBackendOptions& opt) : pool_(pool), hold_(pool), opt_(opt) {}

  Status open(int device, const Conv2dDesc& desc, const ConvAlignment& al, std::span<const ConvKernelEntry* const> candidates) {
    d_ = desc;
    shape_ = conv_shape(d_);
    KTUNE_RETURN_IF_ERROR(hold_.enter(device));
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
    const detail::SampledRows sampled = detail::plan_sampled_rows(shape_.m, d_.k, opt_.max_validation_elements);
    sample_stride_ = sampled.stride;
    sample_rows_ = sampled.rows;
    extra_last_row_ = sampled.extra_last;
    const std::size_t host_need = static_cast<std::size_t>((sample_rows_ + (extra_last_row_ ? 1 : 0)) * d_.k) * size_of(yt);

    if (pool_.stream == nullptr)
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&pool_.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
    KTUNE_RETURN_IF_ERROR(detail::grow_device(pool_, pool_.buf, pool_.bytes, pool_.buf_async, need, std::size_t{2} << 20, "conv tuning scratch"));
    const std::size_t flush_need = opt_.flush_l2 ? static_cast<std::size_t>(std::max(dev_.l2_bytes, 1 << 20)) * 2 : 0;
    KTUNE_RETURN_IF_ERROR(detail::grow_device(pool_, pool_.flush, pool_.flush_bytes, pool_.flush_async, flush_need, std::size_t{1} << 20, "the L2 flush buffer"));
    // The pinned buffer also stages the input patterns (fill).
    KTUNE_RETURN_IF_ERROR(detail::grow_host(pool_, std::max(host_need, detail::pattern_period * sizeof(float)), "conv tuning"));
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
      if (o->elements > 0) KTUNE_RETURN_IF_ERROR(detail::fill(pool_, *o));
    if (has_prior_) KTUNE_RETURN_IF_ERROR(reset_y());
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(pool_.stream), "filling conv tuning scratch"));
    return {};
  }

  Validation validate(const ConvTactic& t) override {
    return detail::validate_against(
        ref_, ref_status_, [&] { return make_reference(); },
        [&](std::vector<double>& got, double* ms) { return run_and_sample(*t.entry, t.launch, got, ms); }, first_ms_, t.name);
  }

  Measurement measure(const ConvTactic& t, const MeasureRequest& req) override {
    const ConvKernelEntry& e = *t.entry;
    const auto t0 = std::chrono::steady_clock::now();
    double est = 0;
    if (auto it = first_ms_.find(t.name); it != first_ms_.end()) est = it->second;
    // One launch per repeat (no chains), so a final-round request (req.exact_repeats > 0: one batch of
    // exactly that many, no stopping rule; detail::time_repeats) times the tactic as the first pass did.
    return detail::time_repeats(pool_, opt_.flush_l2, est, req, t0,
                                [&](cudaStream_t stream, int) { return e.launch(d_, ops_, t.launch, stream); });
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
  detail::SessionHold hold_;  // the pool's mutex, device and capture mode (see SessionHold)
  CudaBackendOptions opt_;
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
    return detail::launch_and_sample(
        pool_, [&] { return e.launch(d_, ops_, lo, pool_.stream); }, y_.ptr, d_.out_type, d_.k,
        static_cast<std::size_t>(d_.k) * static_cast<std::size_t>(ey), sample_stride_, sample_rows_, extra_last_row_, shape_.m - 1, out, ms);
  }

  std::int64_t sampled_row(std::size_t r) const {
    return r < static_cast<std::size_t>(sample_rows_) ? static_cast<std::int64_t>(r) * sample_stride_ : shape_.m - 1;
  }

  // The exact value (double accumulation) of y[pixel m][channel j] from the synthetic inputs.
  double host_value(std::int64_t m, std::int64_t j) const {
    const double acc = conv_sum_exact(d_, shape_, m, j, [this](std::int64_t e) { return x_.at(e); },
                                      [this](std::int64_t e) { return w_.at(e); });
    return host_fp::epilogue_value(
        d_.epilogue, acc, has_prior_, [&] { return prior_.at(m * d_.k + j); }, [&] { return bias_.at(j); },
        [&] { return res_.at(m * d_.k + j); });
  }

  Status make_reference() {
    const double host_tol = 2e-2;  // catches a broken reference (O(1) errors), not rounding
    return detail::choose_reference(
        refs_, host_tol, shape_.kgemm, static_cast<std::size_t>(sample_rows_ + (extra_last_row_ ? 1 : 0)), d_.k,
        [&](const ConvKernelEntry& r, std::vector<double>& out) { return run_and_sample(r, ConvLaunchOptions{}, out, nullptr); },
        [&](std::size_t rr, std::int64_t j) { return host_value(sampled_row(rr), j); },
        ref_, ref_name_, "conv reference");
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
