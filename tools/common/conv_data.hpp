// tools/common/conv_data.hpp — one conv2d problem's data on the GPU, shared by ktune-profile --conv and
// bench/bench_conv.cu: random non-zero x, w and bias, buffer sets rotated per launch (several when one
// set of x, w and y fits in twice the L2 cache, so repeated launches do not find their inputs in L2),
// the reference output buffer, and the float64 CPU reference of set 0 on some output pixels
// (conv_reference.hpp) to check that reference.
//
// Host code only (CUDA runtime calls; the kernels are tools/common/gpu_harness.cu's).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "conv_reference.hpp"
#include "gpu_harness.cuh"
#include "ktune/conv/problem.hpp"

namespace ktune::tools {

class ConvData {
 public:
  Status create(const Conv2dDesc& d, const DeviceInfo& dev, std::uint64_t seed, cudaStream_t s, int max_sets = 32) {
    desc_ = d;
    const ConvShape sh = conv_shape(d);
    const int eb = size_of(d.type), eo = size_of(d.out_type);
    const double set_bytes = double(sh.x_elems + sh.w_elems) * eb + double(sh.y_elems) * eo;
    const double l2 = dev.l2_bytes > 0 ? dev.l2_bytes : 64.0 * 1024 * 1024;
    const int sets = set_bytes >= 2.0 * l2 ? 1 : std::clamp(static_cast<int>(std::ceil(2.0 * l2 / set_bytes)), 1, std::max(1, max_sets));
    sets_.clear();
    sets_.resize(sets);
    for (int i = 0; i < sets; ++i) {
      Set& t = sets_[i];
      KTUNE_RETURN_IF_ERROR(t.x.allocate(sh.x_elems * eb));
      KTUNE_RETURN_IF_ERROR(t.w.allocate(sh.w_elems * eb));
      KTUNE_RETURN_IF_ERROR(t.y.allocate(sh.y_elems * eo));
      KTUNE_RETURN_IF_ERROR(fill_random(t.x.get(), d.type, sh.x_elems, seed + 101 * i + 1, s));
      KTUNE_RETURN_IF_ERROR(fill_random(t.w.get(), d.type, sh.w_elems, seed + 101 * i + 2, s));
      KTUNE_RETURN_IF_ERROR(poison(t.y.get(), s));
    }
    KTUNE_RETURN_IF_ERROR(bias_.allocate(d.k * eo));
    KTUNE_RETURN_IF_ERROR(fill_random(bias_.get(), d.out_type, d.k, seed + 7, s));
    KTUNE_RETURN_IF_ERROR(ref_.allocate(sh.y_elems * eo));
    KTUNE_RETURN_IF_ERROR(poison(ref_.get(), s));
    cpu_ref_.clear();
    return cuda_status(cudaStreamSynchronize(s), "conv data set-up");
  }

  const Conv2dDesc& desc() const { return desc_; }
  int sets() const { return static_cast<int>(sets_.size()); }
  double bytes_per_set() const {
    const ConvShape sh = conv_shape(desc_);
    return double(sh.x_elems + sh.w_elems) * size_of(desc_.type) + double(sh.y_elems) * size_of(desc_.out_type);
  }
  const void* bias() const { return bias_.get(); }
  void* ref() const { return ref_.get(); }

  Conv2dOperands ops(int i) const {
    const Set& t = sets_[static_cast<std::size_t>(i) % sets_.size()];
    return Conv2dOperands{t.x.get(), t.w.get(), t.y.get(), bias_.get(), nullptr};
  }
  // Set 0's operands with y = the reference buffer.
  Conv2dOperands ref_ops() const {
    Conv2dOperands o = ops(0);
    o.y = ref_.get();
    return o;
  }
  // 0xFF bytes: NaN in f16, bf16 and f32, so an element a kernel does not write fails the check.
  Status poison(void* y, cudaStream_t s) const {
    return cuda_status(cudaMemsetAsync(y, 0xFF, conv_shape(desc_).y_elems * size_of(desc_.out_type), s), "poison y");
  }
  // Relative Frobenius error of y (the problem's output type) against the reference buffer; synchronizes s.
  Status error_vs_ref(const void* y, cudaStream_t s, ErrorStats& out) const {
    return rel_error(y, desc_.out_type, ref_.get(), desc_.out_type, conv_shape(desc_).y_elems, s, out);
  }

  // ---- The float64 CPU reference of set 0, on conv_check_blocks() of the output pixels ------------------

  // Copies set 0's x and w and the bias to the host and computes the reference pixels (needs no beta,
  // no residual). The blocks hold at most 3072 pixels and about 2^27 multiply-adds in all (≤ 1024-pixel
  // blocks, fewer pixels for long reductions): a fraction of a second.
  Status compute_cpu_ref(cudaStream_t s) {
    const Conv2dDesc& d = desc_;
    if (d.epilogue.beta != 0.0f || d.epilogue.residual)
      return error(StatusCode::unsupported, "the CPU reference does not read y or a residual");
    const ConvShape sh = conv_shape(d);
    const Conv2dOperands o = ops(0);
    std::vector<float> x, w, b;
    KTUNE_RETURN_IF_ERROR(download(o.x, d.type, sh.x_elems, s, x));
    KTUNE_RETURN_IF_ERROR(download(o.w, d.type, sh.w_elems, s, w));
    if (d.epilogue.bias) KTUNE_RETURN_IF_ERROR(download(o.bias, d.out_type, d.k, s, b));
    const std::int64_t macs_per_pixel = std::max<std::int64_t>(1, d.k * sh.kgemm);
    blocks_ = conv_check_blocks(sh.m, std::clamp<std::int64_t>((std::int64_t{1} << 27) / (3 * macs_per_pixel), 16, 1024));
    std::int64_t pixels = 0;
    for (const auto& [b0, b1] : blocks_) pixels += b1 - b0;
    cpu_ref_.assign(static_cast<std::size_t>(pixels * d.k), 0.0);
    double* out = cpu_ref_.data();
    for (const auto& [b0, b1] : blocks_) {
      conv_reference(d, x.data(), w.data(), b.empty() ? nullptr : b.data(), b0, b1, out);
      out += (b1 - b0) * d.k;
    }
    return {};
  }
  bool has_cpu_ref() const { return !cpu_ref_.empty(); }

  // "all 3136 output pixels" or "3 blocks of 1024 of 802816 output pixels".
  std::string cpu_ref_scope() const {
    const std::int64_t m = conv_shape(desc_).m;
    if (blocks_.size() == 1) return "all " + std::to_string(m) + " output pixels";
    return std::to_string(blocks_.size()) + " blocks of " + std::to_string(blocks_.front().second - blocks_.front().first) + " of " +
           std::to_string(m) + " output pixels";
  }

  // Relative Frobenius error of the device output y against the CPU reference on its pixels.
  Status error_vs_cpu(const void* y, cudaStream_t s, ErrorStats& out) const {
    if (!has_cpu_ref()) return error(StatusCode::internal, "no CPU reference computed");
    const Conv2dDesc& d = desc_;
    const std::size_t eo = static_cast<std::size_t>(size_of(d.out_type));
    double diff = 0.0, ref = 0.0;
    std::int64_t bad = 0;
    const double* r = cpu_ref_.data();
    for (const auto& [b0, b1] : blocks_) {
      const std::size_t n = static_cast<std::size_t>((b1 - b0) * d.k);
      std::vector<unsigned char> raw(n * eo);
      KTUNE_TOOLS_CUDA(cudaMemcpyAsync(raw.data(), static_cast<const unsigned char*>(y) + static_cast<std::size_t>(b0 * d.k) * eo,
                                       raw.size(), cudaMemcpyDeviceToHost, s));
      KTUNE_TOOLS_CUDA(cudaStreamSynchronize(s));
      const std::vector<float> v = to_float_vector(d.out_type, raw.data(), n);
      for (std::size_t i = 0; i < n; ++i, ++r) {
        if (!std::isfinite(v[i])) ++bad;
        diff += (double(v[i]) - *r) * (double(v[i]) - *r);
        ref += *r * *r;
      }
    }
    out.ref_norm = std::sqrt(ref);
    out.nonfinite = bad;
    out.rel = ref > 0.0 ? std::sqrt(diff / ref) : std::numeric_limits<double>::quiet_NaN();
    return {};
  }

 private:
  struct Set {
    DeviceBuffer x, w, y;
  };
  static Status download(const void* p, DType t, std::int64_t n, cudaStream_t s, std::vector<float>& out) {
    std::vector<unsigned char> raw(static_cast<std::size_t>(n) * size_of(t));
    KTUNE_TOOLS_CUDA(cudaMemcpyAsync(raw.data(), p, raw.size(), cudaMemcpyDeviceToHost, s));
    KTUNE_TOOLS_CUDA(cudaStreamSynchronize(s));
    out = to_float_vector(t, raw.data(), static_cast<std::size_t>(n));
    return {};
  }
  Conv2dDesc desc_{};
  std::vector<Set> sets_;
  DeviceBuffer bias_, ref_;
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks_;
  std::vector<double> cpu_ref_;
};

}  // namespace ktune::tools
