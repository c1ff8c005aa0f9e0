// ktune/tuner/cuda_backend.hpp — the tuner's measuring backend on a real GPU. Host code using only
// the CUDA runtime API and the dispatch table's launch functions (compiles with any C++20 compiler).
//
// Scratch, never the caller's buffers: a session allocates (from a per-device pool, grown on demand,
// released by release_scratch()) one buffer per operand the problem reads and one output, with the
// problem's leading dimensions, offset so that every pointer has exactly the key's alignment class.
// That is at most one extra copy of the operands and the output, plus an L2-flush buffer of 2× L2,
// plus, for tactics that need one (split-K partial sums and semaphores), a workspace grown to the
// largest candidate's need and bounded by CudaBackendOptions::max_workspace_bytes (a tactic needing
// more fails to run, with the reason in the tactic log). The log states the total.
// The caller's data are never read or written, so C aliasing D, or a later kernel in the caller's
// stream, cannot be affected — and tune_pending() can tune keys whose buffers are long gone.
//
// Inputs: synthetic, non-zero, reproducible: a pseudo-random pattern of 65521 (prime) values on a
// per-type grid exactly representable in the operand type (k/1024 for f16 and f32/tf32, k/128 for
// bf16, |k| below the grid), written once and replicated on the device by doubling copies.
// Zeros are never benchmarked (they run 7–13% faster than real data on H200).
//
// Timing: on a private non-blocking stream, each repeat is `memset(flush buffer)` → event → launch
// → event, i.e. L2 is flushed before every repeat (inputs come from HBM, as for a GEMM whose operands
// were written long ago; state is identical for every candidate). Short kernels (under
// CudaBackendOptions::chain_below_ms) launch 2-8 times back to back per repeat, each launch on the next of
// up to 16 copies of the inputs, and the repeat's time is divided by the count: what a call costs among
// other calls (launch overlap, programmatic dependent launch), not its lone ramp and tail; where the
// copies together exceed L2 they keep the inputs cold and those repeats skip the flush. The median of the repeats is
// reported; repeats come in batches until the IQR/median is within the policy's target, the
// candidate's share of the key budget is spent, or it is clearly slower than the best so far. The
// validation run doubles as the warm-up and gives the first estimate. A request for exactly k repeats
// (MeasureRequest::exact_repeats: the tuner's interleaved final round) runs one batch of k with the
// chain length the tactic's adaptive measurement used, and no stopping rule.
//
// Validation: D is poisoned (all-ones bytes: NaN) before each validation run so a kernel that skips
// elements fails. A reference instance — the most conservative candidate (narrowest vectors, then
// smallest tile), itself checked on up to 64 elements against an exact host computation — produces
// the reference output; each candidate's output is compared on a strided sample of whole rows (at
// most 2^20 elements: every column tile, rows at an odd stride so every row position within a tile
// recurs) by relative Frobenius error. If the most conservative reference fails its host check the
// next one is tried (up to 3).
//
// Never waiting for other streams: tuning must not stall (or be stalled by) the caller's other work.
// Every call a session makes is ordered on its own non-blocking stream or waits only for it: device
// buffers grow by stream-ordered allocation on that stream and outgrown ones are freed in its order
// (ktune's memory pool, workspace.hpp: cudaMallocFromPoolAsync/cudaFreeAsync, never reusing a block
// another stream has yet to free; cudaMalloc and cudaFree may synchronize the whole device), an
// outgrown pinned host buffer is retired rather than freed (cudaFreeHost synchronizes too; growth at
// least doubles, so the retired ones never exceed the current one; release_scratch() frees them), and
// host data travel through that pinned buffer (a copy from pageable memory is staged through the
// driver's buffers, which another thread's staged copy, waiting for its own stream, may hold).
//
// While a session is open the calling thread uses cudaStreamCaptureModeRelaxed, so that tuning on
// its own stream is legal even while another thread captures a graph in global mode.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ktune/device.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/problem.hpp"
#include "ktune/tuner/backend.hpp"
#include "ktune/tuner/timing.hpp"
#include "ktune/workspace.hpp"

namespace ktune::tuner {

namespace host_fp {

inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline std::uint16_t to_bf16(float f) {
  std::uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}
inline float from_bf16(std::uint16_t h) { return float_of(std::uint32_t(h) << 16); }

inline std::uint16_t to_f16(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t au = u & 0x7fffffffu;
  if (au > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
  if (au >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow → inf (rounds up at 65520)
  if (au < 0x38800000u) {                                                    // subnormal or zero in f16
    if (au < 0x33000000u) return static_cast<std::uint16_t>(sign);           // < 2^-25: rounds to 0
    // |x| = mant · 2^(e-150) and an f16 subnormal is q · 2^-24, so q = mant · 2^(e-126), rounded.
    const int e = static_cast<int>(au >> 23);
    const std::uint32_t mant = (au & 0x7fffffu) | 0x800000u;
    const int shift = 126 - e;  // 14..24
    const std::uint32_t q = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    std::uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = ((au >> 13) - (112u << 10));
  const std::uint32_t rem = au & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<std::uint16_t>(sign | r);
}
inline float from_f16(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = std::ldexp(float(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return float_of(sign | 0x7f800000u | (m << 13));
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

inline void store(DType t, void* dst, std::size_t i, float v) {
  switch (t) {
    case DType::f32: static_cast<float*>(dst)[i] = v; break;
    case DType::f16: static_cast<std::uint16_t*>(dst)[i] = to_f16(v); break;
    case DType::bf16: static_cast<std::uint16_t*>(dst)[i] = to_bf16(v); break;
  }
}
inline double load(DType t, const void* src, std::size_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(src)[i];
    case DType::f16: return from_f16(static_cast<const std::uint16_t*>(src)[i]);
    case DType::bf16: return from_bf16(static_cast<const std::uint16_t*>(src)[i]);
  }
  return 0;
}

// The host's version of the built-in epilogue (see epilogue/builtin.cuh).
inline float activation(Activation a, float x) {
  switch (a) {
    case Activation::relu: return std::max(x, 0.0f);
    case Activation::gelu_tanh: return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case Activation::gelu_erf: return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
    case Activation::silu: return x / (1.0f + std::exp(-x));
    default: return x;
  }
}

// The built-in epilogue applied to one exact accumulator: alpha·acc (+ beta·prior) (+ bias)
// (+ residual), activation, clamp. The inputs are callables, read only when the epilogue uses them.
template <class Prior, class Bias, class Residual>
inline float epilogue_value(const EpilogueSpec& ep, double acc, bool has_prior, Prior prior, Bias bias, Residual residual) {
  float x = ep.alpha * static_cast<float>(acc);
  if (has_prior) x += ep.beta * prior();
  if (ep.bias) x += bias();
  if (ep.residual) x += residual();
  x = activation(ep.activation, x);
  if (ep.clamp) x = std::min(std::max(x, ep.clamp_lo), ep.clamp_hi);
  return x;
}

}  // namespace host_fp

struct CudaBackendOptions {
  bool flush_l2 = true;                            // memset 2×L2 before every timed repeat
  // Short kernels are timed as chains: a candidate whose validation run took less than chain_below_ms
  // is launched back to back ⌈chain_below_ms / estimate⌉ times (2 .. max_chain) per repeat, each launch on
  // the next copy of the inputs, and the repeat's time is divided by the chain's length. A lone launch after the
  // flush measures its own launch ramp and tail, which back-to-back calls overlap (programmatic dependent
  // launch, block scheduling); the ranking then differed from graph replay's (H200 s10-batchA, bf16
  // 128x4096x4096: 64x64 s12 20.7 µs vs 128x64 @split2c2 20.6 alone, 15.9 vs 13.9 µs replayed).
  // The R copies of the inputs (at most max_input_copies, the extra ones together at most rotation_bytes;
  // 1: no copy) keep every launch reading memory its predecessors did not touch: the chain's launches take
  // them in turn, continuing across repeats. When the copies together are at least 1.5× L2, that alone
  // keeps the inputs out of L2 and chained repeats skip the flush: the memset leaves L2 full of dirty
  // lines whose write-back then competes with the first launches (a memory-bound kernel of a few µs
  // pays for it; graph replay over rotated operands, as users chain calls, does not). GEMM sessions only.
  double chain_below_ms = 0.05;
  int max_chain = 8;                                          // 1: one launch per repeat
  int max_input_copies = 16;
  std::size_t rotation_bytes = std::size_t{128} << 20;        // extra scratch for the input copies
  std::size_t max_validation_elements = 1u << 20;  // sampled output elements compared per candidate
  int max_reference_tries = 3;
  std::size_t max_workspace_bytes = std::size_t{256} << 20;  // per tactic; larger needs are not measured
};

namespace detail {

// A measuring backend's per-device scratch, stream and events (GEMM and conv). One session at a time per
// device (the mutex).
struct ScratchPool {
  std::mutex mu;
  void* buf = nullptr;
  std::size_t bytes = 0;
  void* flush = nullptr;
  std::size_t flush_bytes = 0;
  void* host = nullptr;  // pinned: sampled rows, and the staging of input patterns
  std::size_t host_bytes = 0;
  bool buf_async = false, flush_async = false;  // stream-ordered allocations
  std::vector<void*> retired_host;              // outgrown pinned host buffers (freed by release_scratch)
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> events;
};

// Frees a pool's buffers (the caller holds pool.mu and has made the pool's device current).
inline void free_scratch(ScratchPool& pool) {
  if (pool.buf) (void)cudaFree(pool.buf);
  if (pool.flush) (void)cudaFree(pool.flush);
  if (pool.host) (void)cudaFreeHost(pool.host);
  for (void* r : pool.retired_host) (void)cudaFreeHost(r);
  pool.retired_host.clear();
  pool.buf = pool.flush = pool.host = nullptr;
  pool.bytes = pool.flush_bytes = pool.host_bytes = 0;
}

// Runs free_pool(pool) for every pool of a backend, on the pool's device, then trims ktune's
// stream-ordered memory pool.
template <class Pools, class Free>
void release_pools(std::mutex& pools_mu, Pools& pools, Free&& free_pool) {
  std::lock_guard lock(pools_mu);
  for (auto& [dev, pool] : pools) {
    std::lock_guard plock(pool->mu);
    int prev = -1;
    (void)cudaGetDevice(&prev);
    (void)cudaSetDevice(dev);
    free_pool(*pool);
    if (prev >= 0) (void)cudaSetDevice(prev);
    (void)cudaGetLastError();
  }
  ktune::detail::trim_private_mem_pools();
}

}  // namespace detail

class CudaBackend : public TuningBackend {
 public:
  explicit CudaBackend(CudaBackendOptions o = {}) : opt_(o) {}
  // Pools are deliberately not freed here: the default tuner lives until process exit, after which
  // the CUDA runtime may already be gone. Call release_scratch() to give memory back earlier.
  ~CudaBackend() override = default;

  Status current_device(int& ordinal) override { return cuda_status(cudaGetDevice(&ordinal), "cudaGetDevice"); }
  Status device_info(int ordinal, DeviceInfo& out) override { return query_device(ordinal, out); }

  bool is_capturing(cudaStream_t stream) override {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    const cudaError_t e = cudaStreamIsCapturing(stream, &st);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return true;  // e.g. the legacy stream while another stream captures: assume capture, never benchmark
    }
    return st != cudaStreamCaptureStatusNone;
  }

  Status begin(int device, const GemmDesc& desc, const GemmAlignment& al, std::span<const GemmKernelEntry* const> candidates,
               std::unique_ptr<TuningSession>& out) override;

  void release_scratch() override {
    detail::release_pools(pools_mu_, pools_, [](Pool& pool) {
      detail::free_scratch(pool);
      if (pool.work) (void)cudaFree(pool.work);
      pool.work = nullptr;
      pool.work_bytes = 0;
    });
  }

  const CudaBackendOptions& options() const { return opt_; }

  // Per-device scratch, stream and events, plus the workspace of tactics that need one.
  struct Pool : detail::ScratchPool {
    void* work = nullptr;
    std::size_t work_bytes = 0;
    bool work_async = false;  // stream-ordered allocation
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

namespace detail {

inline constexpr std::size_t pattern_period = 65521;  // prime: rows of a matrix never repeat in lockstep

// Reproducible pseudo-random grid values exactly representable in `t`.
inline std::vector<float> make_pattern(DType t, std::uint64_t seed) {
  std::vector<float> v(pattern_period);
  const int grid = t == DType::bf16 ? 128 : 1024;
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (auto& f : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int k = static_cast<int>(x % static_cast<std::uint64_t>(2 * grid - 1)) - (grid - 1);  // (-grid, grid)
    f = float(k == 0 ? 1 : k) / float(grid);  // never zero
  }
  return v;
}

struct Operand {
  DType type = DType::f32;
  std::int64_t rows = 0, cols = 0, ld = 0;  // storage rows × contiguous cols
  std::size_t offset = 0;                    // bytes from the pool start
  std::size_t elements = 0;                  // span in elements
  std::vector<float> pattern;
  void* ptr = nullptr;
  float at(std::int64_t linear) const { return pattern[static_cast<std::size_t>(linear) % pattern.size()]; }
};

inline std::size_t misalign_bytes(int vector_elems, int elem_bytes) {
  // An address ≡ v·es (mod 2·v·es) allows vectors of exactly v elements (v below the 16-byte maximum).
  return vector_elems * elem_bytes < 16 ? static_cast<std::size_t>(vector_elems * elem_bytes) : 0;
}

// A session's hold on its device's pool: the pool's mutex, the device made current and the thread's
// stream-capture mode relaxed (enter()); on destruction the pool's stream is drained and both restored.
class SessionHold {
 public:
  explicit SessionHold(ScratchPool& pool) : pool_(pool), lock_(pool.mu) {}
  SessionHold(const SessionHold&) = delete;
  SessionHold& operator=(const SessionHold&) = delete;
  ~SessionHold() {
    if (pool_.stream) (void)cudaStreamSynchronize(pool_.stream);
    if (mode_set_) (void)cudaThreadExchangeStreamCaptureMode(&prev_mode_);
    if (prev_device_ >= 0 && prev_device_ != device_) (void)cudaSetDevice(prev_device_);
  }

  Status enter(int device) {
    device_ = device;
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&prev_device_), "cudaGetDevice"));
    if (prev_device_ != device) KTUNE_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device), "cudaSetDevice"));
    prev_mode_ = cudaStreamCaptureModeRelaxed;
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaThreadExchangeStreamCaptureMode(&prev_mode_), "cudaThreadExchangeStreamCaptureMode"));
    mode_set_ = true;
    return {};
  }

 private:
  ScratchPool& pool_;
  std::unique_lock<std::mutex> lock_;
  int device_ = -1, prev_device_ = -1;
  bool mode_set_ = false;
  cudaStreamCaptureMode prev_mode_ = cudaStreamCaptureModeRelaxed;
};

// ---- Helpers shared by the GEMM and conv sessions ----------------------------------------------------

// Grow a device buffer of the pool to at least `need` bytes (rounded up to `granule`) in the order
// of the pool's stream, the only stream that uses it: the outgrown buffer is freed when the stream
// reaches this point, the new one allocated there (cudaFree would synchronize the whole device and
// so wait for other streams' work).
inline Status grow_device(ScratchPool& pool, void*& buf, std::size_t& bytes, bool& stream_ordered, std::size_t need, std::size_t granule,
                          const char* what) {
  if (need == 0 || bytes >= need) return {};
  if (buf) {
    if (ktune::detail::free_for_stream(buf, pool.stream, stream_ordered) != cudaSuccess) (void)cudaGetLastError();
    buf = nullptr;
    bytes = 0;
  }
  const std::size_t want = (need + granule - 1) / granule * granule;
  void* p = nullptr;
  if (ktune::detail::alloc_for_stream(&p, want, pool.stream, &stream_ordered) != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::cuda_error, "cannot allocate " + std::to_string((want + (1u << 20) - 1) >> 20) + " MiB for " + what);
  }
  buf = p;
  bytes = want;
  return {};
}

// The same for the pinned host buffer (cudaFreeHost, too, synchronizes the device: outgrown ones retire).
inline Status grow_host(ScratchPool& pool, std::size_t need, const char* purpose) {
  if (pool.host_bytes >= need) return {};
  const std::size_t want = (std::max(need, 2 * pool.host_bytes) + (1u << 20) - 1) / (1u << 20) * (1u << 20);
  void* p = nullptr;
  if (cudaHostAlloc(&p, want, cudaHostAllocDefault) != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::cuda_error, "cannot allocate " + std::to_string(want >> 20) + " MiB of pinned host memory for " + purpose);
  }
  if (pool.host) pool.retired_host.push_back(pool.host);
  pool.host = p;
  pool.host_bytes = want;
  return {};
}

inline Status ensure_events(ScratchPool& pool, std::size_t n) {
  const std::size_t have = pool.events.size();
  if (have >= n) return {};
  pool.events.resize(n, nullptr);
  for (std::size_t i = have; i < n; ++i)
    if (Status s = cuda_status(cudaEventCreate(&pool.events[i]), "cudaEventCreate"); !s.ok()) {
      pool.events.resize(i);
      return s;
    }
  return {};
}

// Run `launch` once between the pool's two events, then copy rows 0, stride, 2·stride, … (`rows` of
// them) of the output — and its last row `last_row` when `extra_last_row` — to the pinned buffer and
// return them as doubles (`cols` values per row). Rows are `row_bytes` long, `ld_bytes` apart.
template <class Launch>
Status launch_and_sample(ScratchPool& pool, Launch&& launch, const void* outp, DType type, std::int64_t cols, std::size_t ld_bytes,
                         std::int64_t stride, std::int64_t rows, bool extra_last_row, std::int64_t last_row,
                         std::vector<double>& out, double* ms) {
  KTUNE_RETURN_IF_ERROR(ensure_events(pool, 2));
  cudaEventRecord(pool.events[0], pool.stream);
  KTUNE_RETURN_IF_ERROR(launch());
  cudaEventRecord(pool.events[1], pool.stream);
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * static_cast<std::size_t>(size_of(type));
  auto* host = static_cast<unsigned char*>(pool.host);
  const auto* src = static_cast<const unsigned char*>(outp);
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpy2DAsync(host, row_bytes, src, static_cast<std::size_t>(stride) * ld_bytes, row_bytes,
                                                      static_cast<std::size_t>(rows), cudaMemcpyDeviceToHost, pool.stream),
                                    "copying sampled rows"));
  if (extra_last_row)
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(host + static_cast<std::size_t>(rows) * row_bytes,
                                                      src + static_cast<std::size_t>(last_row) * ld_bytes, row_bytes,
                                                      cudaMemcpyDeviceToHost, pool.stream),
                                      "copying the last row"));
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(pool.stream), "validation run"));
  float t = 0;
  if (cudaEventElapsedTime(&t, pool.events[0], pool.events[1]) != cudaSuccess) (void)cudaGetLastError();
  if (ms) *ms = t;
  const std::size_t n = static_cast<std::size_t>((rows + (extra_last_row ? 1 : 0)) * cols);
  out.resize(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = host_fp::load(type, host, i);
  return {};
}

// Write the operand's pattern once (through the pinned buffer), then replicate it by doubling device copies.
inline Status fill(ScratchPool& pool, Operand& o) {
  const int es = size_of(o.type);
  const std::size_t first = std::min(o.elements, o.pattern.size());
  // Through the pinned buffer (at least one pattern period, see open()): a true async copy.
  if (pool.host_bytes < first * static_cast<std::size_t>(es)) return error(StatusCode::internal, "pinned staging buffer too small");
  for (std::size_t i = 0; i < first; ++i) host_fp::store(o.type, pool.host, i, o.pattern[i]);
  auto* p = static_cast<char*>(o.ptr);
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(p, pool.host, first * static_cast<std::size_t>(es), cudaMemcpyHostToDevice, pool.stream), "cudaMemcpyAsync"));
  // The staging buffer is reused by the next operand: wait for this copy (on the pool's stream only).
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(pool.stream), "cudaStreamSynchronize"));
  std::size_t have = first;
  while (have < o.elements) {
    const std::size_t c = std::min(have, o.elements - have);
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(p + have * es, p, c * es, cudaMemcpyDeviceToDevice, pool.stream), "cudaMemcpyAsync"));
    have += c;
  }
  return {};
}

// Sampled output rows: stride (odd when > 1) so that at most max_elements of `cols`-wide rows are
// compared, plus the last row when the stride skips it.
struct SampledRows {
  std::int64_t stride = 1, rows = 0;
  bool extra_last = false;
};
inline SampledRows plan_sampled_rows(std::int64_t total_rows, std::int64_t cols, std::size_t max_elements) {
  const std::int64_t max_rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(max_elements) / std::max<std::int64_t>(1, cols));
  std::int64_t s = std::max<std::int64_t>(1, (total_rows + max_rows - 1) / max_rows);
  if (s > 1 && s % 2 == 0) ++s;
  SampledRows r;
  r.stride = s;
  r.rows = (total_rows - 1) / s + 1;
  r.extra_last = (total_rows - 1) % s != 0;
  return r;
}

// Relative Frobenius error of `got` against `ref` (NaN when got has a NaN).
inline double rel_error(const std::vector<double>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double dlt = got[i] - ref[i];
    num += dlt * dlt;
    den += ref[i] * ref[i];
  }
  if (std::isnan(num)) return std::numeric_limits<double>::quiet_NaN();
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// A reference candidate's host check: relative error on `samples` outputs of its sampled rows (`out`,
// rows × cols) against exact(sampled row index, column).
template <class Exact>
double host_check_error(const std::vector<double>& out, int samples, std::size_t rows, std::int64_t cols, Exact&& exact) {
  double num = 0, den = 0;
  for (int t = 0; t < samples; ++t) {
    const std::size_t rr = (static_cast<std::size_t>(t) * 7919u) % rows;
    const std::int64_t j = static_cast<std::int64_t>((static_cast<std::uint64_t>(t) * 2654435761u + static_cast<std::uint64_t>(t) * t) % static_cast<std::uint64_t>(cols));
    const double want = exact(rr, j);
    const double got = out[rr * static_cast<std::size_t>(cols) + static_cast<std::size_t>(j)];
    num += (got - want) * (got - want);
    den += want * want;
  }
  return std::isnan(num) ? std::numeric_limits<double>::quiet_NaN() : den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// A candidate's validation: the reference made on first use (make_ref), then the candidate's sampled
// output (run(out, &ms)) compared with it; the run's time is kept in first_ms[name] as the first estimate.
template <class MakeRef, class Run>
Validation validate_against(std::vector<double>& ref, Status& ref_status, MakeRef&& make_ref, Run&& run,
                            std::unordered_map<std::string, double>& first_ms, const std::string& name) {
  Validation v;
  if (ref.empty() && ref_status.ok()) (void)(ref_status = make_ref());
  if (!ref_status.ok()) {
    (void)(v.status = ref_status);
    return v;
  }
  std::vector<double> got;
  double ms = 0;
  (void)(v.status = run(got, &ms));
  if (!v.status.ok()) return v;
  first_ms[name] = ms;
  v.rel_error = rel_error(got, ref);
  return v;
}

// Try the reference candidates in order: the first whose sampled output (run(entry, out): `rows` sampled
// rows × cols) passes the host check (host_check_error against exact(sampled row index, column) ≤
// host_tol) becomes `ref`; else an error naming each one's failure. The host check samples fewer
// outputs the deeper the reduction (each exact value costs `reduction_depth` multiply-adds).
template <class Entry, class Run, class Exact>
Status choose_reference(const std::vector<const Entry*>& refs, double host_tol, std::int64_t reduction_depth, std::size_t rows,
                        std::int64_t cols, Run&& run, Exact&& exact, std::vector<double>& ref, std::string& ref_name, const char* what) {
  const int samples = static_cast<int>(std::clamp<std::int64_t>((std::int64_t{1} << 22) / std::max<std::int64_t>(1, reduction_depth), 8, 64));
  std::string why;
  for (const Entry* r : refs) {
    std::vector<double> out;
    Status s = run(*r, out);
    if (!s.ok()) {
      why += std::string(why.empty() ? "" : "; ") + std::string(r->name) + ": " + s.message();
      continue;
    }
    const double err = host_check_error(out, samples, rows, cols, exact);
    if (err <= host_tol) {
      ref = std::move(out);
      ref_name = std::string(r->name);
      return {};
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2e", err);
    why += std::string(why.empty() ? "" : "; ") + std::string(r->name) + " differs from the host check by " + buf;
  }
  return error(StatusCode::internal, "no trustworthy " + std::string(what) + " output (" + why + ")");
}

// The timing loop: batches of event → `chain` launches → event on the pool's stream (each repeat after
// a memset of the flush buffer when `flush`; launch(stream, i) runs the chain's i-th launch), each
// repeat's time divided by `chain`, until next_step() stops; `est` is the validation run's time (0:
// unknown), t0 when the measurement began. With req.exact_repeats > 0: one batch of exactly that many
// repeats, no adaptive stop (the tuner's interleaved final round).
template <class Launch>
Measurement time_repeats(ScratchPool& pool, bool flush, double est, const MeasureRequest& req, std::chrono::steady_clock::time_point t0,
                         Launch&& launch, int chain = 1) {
  chain = std::max(1, chain);
  Measurement m;
  if (est > req.max_launch_ms) {
    m.ms = est;
    m.repeats = 1;
    m.exceeded_bound = true;
    return m;
  }
  const int exact = std::max(0, req.exact_repeats);
  const int batch_max = std::max(1, exact > 0 ? exact : req.repeats.batch);
  if (Status s = ensure_events(pool, static_cast<std::size_t>(2 * batch_max)); !s.ok()) {
    (void)(m.status = s);
    return m;
  }
  std::vector<double> samples;
  for (;;) {
    int n = batch_max;
    // A slow kernel under a tight budget: fewer repeats per batch (at least one).
    if (exact == 0 && est > 0 && req.budget_ms > 0) n = std::clamp(static_cast<int>(req.budget_ms / (est * chain)), 1, batch_max);
    for (int r = 0; r < n; ++r) {
      if (flush && pool.flush)
        if (Status s = cuda_status(cudaMemsetAsync(pool.flush, (r + static_cast<int>(samples.size())) & 0xff, pool.flush_bytes, pool.stream), "L2 flush"); !s.ok()) {
          (void)(m.status = s);
          return m;
        }
      cudaEventRecord(pool.events[static_cast<std::size_t>(2 * r)], pool.stream);
      for (int i = 0; i < chain; ++i)
        if (Status s = launch(pool.stream, i); !s.ok()) {
          (void)(m.status = s);
          return m;
        }
      cudaEventRecord(pool.events[static_cast<std::size_t>(2 * r + 1)], pool.stream);
    }
    if (Status s = cuda_status(cudaEventSynchronize(pool.events[static_cast<std::size_t>(2 * n - 1)]), "timing run"); !s.ok()) {
      (void)(m.status = s);
      return m;
    }
    for (int r = 0; r < n; ++r) {
      float ms = 0;
      if (Status s = cuda_status(cudaEventElapsedTime(&ms, pool.events[static_cast<std::size_t>(2 * r)], pool.events[static_cast<std::size_t>(2 * r + 1)]), "cudaEventElapsedTime"); !s.ok()) {
        (void)(m.status = s);
        return m;
      }
      ms /= static_cast<float>(chain);
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
    const RepeatDecision dec = exact > 0 ? RepeatDecision::max_repeats : next_step(samples, req.repeats, spent, req.budget_ms, req.best_ms);
    if (dec != RepeatDecision::more) {
      m.ms = st.median;
      m.repeats = st.n;
      m.spread = st.rel_spread();
      m.stop = dec;
      return m;
    }
  }
}

}  // namespace detail

class CudaSession : public TuningSession {
 public:
  CudaSession(CudaBackend::Pool& pool, const CudaBackendOptions& opt) : pool_(pool), hold_(pool), opt_(opt) {}

  Status open(int device, const GemmDesc& desc, const GemmAlignment& al, std::span<const GemmKernelEntry* const> candidates) {
    d_ = resolved(desc);
    al_ = al;
    KTUNE_RETURN_IF_ERROR(hold_.enter(device));
    KTUNE_RETURN_IF_ERROR(query_device(device, dev_));

    // References: most conservative first (narrowest vectors, smallest tile, name).
    refs_.assign(candidates.begin(), candidates.end());
    std::stable_sort(refs_.begin(), refs_.end(), [](const GemmKernelEntry* a, const GemmKernelEntry* b) {
      const long long ta = 1LL * a->config.tile.m * a->config.tile.n, tb = 1LL * b->config.tile.m * b->config.tile.n;
      if (a->config.align != b->config.align) return a->config.align < b->config.align;
      if (ta != tb) return ta < tb;
      return a->name < b->name;
    });
    if (refs_.size() > static_cast<std::size_t>(std::max(1, opt_.max_reference_tries))) refs_.resize(static_cast<std::size_t>(std::max(1, opt_.max_reference_tries)));

    // Operand layout in the pool.
    const DType ab = d_.ab_type, dt = d_.d_type;
    const int ed = size_of(dt);
    std::size_t cursor = 0;
    auto place = [&](detail::Operand& o, DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld, int vec, std::uint64_t seed) {
      o.type = t;
      o.rows = rows;
      o.cols = cols;
      o.ld = ld;
      o.elements = static_cast<std::size_t>((rows - 1) * ld + cols);
      cursor = (cursor + 255) / 256 * 256;
      o.offset = cursor + detail::misalign_bytes(vec, size_of(t));
      cursor = o.offset + o.elements * static_cast<std::size_t>(size_of(t));
      o.pattern = detail::make_pattern(t, seed);
    };
    const bool a_row = d_.a_layout == Layout::row, b_row = d_.b_layout == Layout::row;
    place(a_, ab, a_row ? d_.m : d_.k, a_row ? d_.k : d_.m, d_.lda, al.a, 1);
    place(b_, ab, b_row ? d_.k : d_.n, b_row ? d_.n : d_.k, d_.ldb, al.b, 2);
    has_c_ = d_.epilogue.beta != 0.0f;
    if (has_c_) place(c_, dt, d_.m, d_.n, d_.ldc, al.d, 3);
    if (d_.epilogue.bias) place(bias_, dt, 1, d_.n, d_.n, al.d, 4);
    if (d_.epilogue.residual) place(res_, dt, d_.m, d_.n, d_.ldr, al.d, 5);
    const std::size_t inputs_end = cursor;
    place(out_, dt, d_.m, d_.n, d_.ldd, al.d, 6);
    out_.pattern.clear();
    // Copies 1 .. sets_-1 of the inputs [0, inputs_end) for chained timing, after the output; each at a
    // multiple of 256 bytes from the first, so their pointers keep the key's alignment class.
    const std::size_t inputs_stride = (inputs_end + 255) / 256 * 256;
    rotation_base_ = (cursor + 256 + 255) / 256 * 256;
    rotation_stride_ = inputs_stride;
    sets_ = opt_.max_chain > 1 && inputs_stride > 0
                ? 1 + static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(0, opt_.max_input_copies - 1)), opt_.rotation_bytes / inputs_stride))
                : 1;
    copies_evict_l2_ = static_cast<double>(sets_) * static_cast<double>(inputs_stride) >= 1.5 * static_cast<double>(std::max(dev_.l2_bytes, 1 << 20));
    const std::size_t need = rotation_base_ + static_cast<std::size_t>(sets_ - 1) * inputs_stride;

    // Sampled output rows: stride s (odd when > 1), plus the last row.
    const detail::SampledRows sampled = detail::plan_sampled_rows(d_.m, d_.n, opt_.max_validation_elements);
    sample_stride_ = sampled.stride;
    sample_rows_ = sampled.rows;
    extra_last_row_ = sampled.extra_last;
    const std::size_t sample_elems = static_cast<std::size_t>((sample_rows_ + (extra_last_row_ ? 1 : 0)) * d_.n);
    const std::size_t host_need = sample_elems * static_cast<std::size_t>(ed);

    // Grow the pool.
    if (pool_.stream == nullptr)
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&pool_.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
    KTUNE_RETURN_IF_ERROR(detail::grow_device(pool_, pool_.buf, pool_.bytes, pool_.buf_async, need, std::size_t{2} << 20, "tuning scratch"));
    const std::size_t flush_need = opt_.flush_l2 ? static_cast<std::size_t>(std::max(dev_.l2_bytes, 1 << 20)) * 2 : 0;
    KTUNE_RETURN_IF_ERROR(detail::grow_device(pool_, pool_.flush, pool_.flush_bytes, pool_.flush_async, flush_need, std::size_t{1} << 20, "the L2 flush buffer"));
    // The pinned buffer also stages the input patterns (fill).
    KTUNE_RETURN_IF_ERROR(detail::grow_host(pool_, std::max(host_need, detail::pattern_period * sizeof(float)), "tuning"));
    scratch_bytes_ = need + flush_need;
    auto* base = static_cast<char*>(pool_.buf);
    for (detail::Operand* o : {&a_, &b_, &c_, &bias_, &res_, &out_})
      if (o->elements > 0) o->ptr = base + o->offset;
    ops_.a = a_.ptr;
    ops_.b = b_.ptr;
    ops_.c = has_c_ ? c_.ptr : nullptr;
    ops_.bias = bias_.ptr;
    ops_.residual = res_.ptr;
    ops_.d = out_.ptr;

    // Fill inputs: the pattern once, then doubling device copies.
    for (detail::Operand* o : {&a_, &b_, &c_, &bias_, &res_})
      if (o->elements > 0) KTUNE_RETURN_IF_ERROR(detail::fill(pool_, *o));
    for (int i = 1; i < sets_; ++i)
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(base + set_offset(i), base, inputs_end, cudaMemcpyDeviceToDevice, pool_.stream),
                                        "copying the tuning inputs"));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(pool_.stream), "filling tuning scratch"));
    return {};
  }

  Validation validate(const GemmTactic& t) override {
    return detail::validate_against(
        ref_, ref_status_, [&] { return make_reference(); },
        [&](std::vector<double>& got, double* ms) { return run_and_sample(*t.entry, t.launch, got, ms); }, first_ms_, t.name);
  }

  Measurement measure(const GemmTactic& t, const MeasureRequest& req) override {
    const GemmKernelEntry& e = *t.entry;
    const auto t0 = std::chrono::steady_clock::now();
    double est = 0;
    if (auto it = first_ms_.find(t.name); it != first_ms_.end()) est = it->second;
    if (Status s = bind_workspace(e, t.launch); !s.ok()) {
      Measurement m;
      (void)(m.status = s);
      return m;
    }
    auto chain_for = [&](double ms) {
      return ms > 0 && ms < opt_.chain_below_ms && opt_.max_chain > 1
                 ? std::clamp(static_cast<int>(std::ceil(opt_.chain_below_ms / ms)), 2, opt_.max_chain)
                 : 1;
    };
    auto time_chains = [&](int chain) {
      const bool flush = opt_.flush_l2 && !(chain > 1 && copies_evict_l2_);
      Measurement m = detail::time_repeats(
          pool_, flush, est, req, t0,
          [&](cudaStream_t stream, int) {
            next_set_ = (next_set_ + 1) % sets_;
            return e.launch(d_, ops_of_set(next_set_), t.launch, stream);
          },
          chain);
      m.chain = chain;
      return m;
    };
    if (req.exact_repeats > 0) {
      // The final round: exactly req.exact_repeats repeats with the chain this tactic's adaptive
      // measurement settled on (not re-decided: the rivals it is interleaved with were timed that way).
      auto it = chain_of_.find(t.name);
      return time_chains(it != chain_of_.end() ? it->second : chain_for(est));
    }
    Measurement m = time_chains(chain_for(est));
    // The validation run's time includes a kernel's first-launch cost (lazy module loading: up to
    // milliseconds), so a short kernel may have been timed alone; time it again the way its rivals were.
    if (m.status.ok() && !m.exceeded_bound && m.chain == 1 && chain_for(m.ms) > 1) {
      est = m.ms;
      m = time_chains(chain_for(m.ms));
    }
    if (m.status.ok()) chain_of_[t.name] = m.chain;
    return m;
  }

  std::size_t scratch_bytes() const override { return scratch_bytes_ + workspace_high_; }

  std::string describe() const override {
    std::string s = "synthetic inputs, ";
    s += opt_.flush_l2 ? "L2 flushed before each repeat" : "L2 not flushed";
    if (opt_.max_chain > 1) {
      char buf[200];
      std::snprintf(buf, sizeof buf, ", runs under %.0f µs timed in chains of up to %d back-to-back launches over %d input cop%s%s",
                    opt_.chain_below_ms * 1e3, opt_.max_chain, sets_, sets_ == 1 ? "y" : "ies",
                    copies_evict_l2_ && opt_.flush_l2 ? " (> L2: chains not flushed)" : "");
      s += buf;
    }
    s += ", median of adaptive repeats, reference ";
    s += ref_name_.empty() ? std::string("(none)") : ref_name_;
    if (workspace_high_ > 0) s += ", workspace up to " + std::to_string((workspace_high_ + 1023) / 1024) + " KiB";
    return s;
  }

 private:
  CudaBackend::Pool& pool_;
  detail::SessionHold hold_;  // the pool's mutex, device and capture mode (see SessionHold)
  CudaBackendOptions opt_;
  DeviceInfo dev_;
  GemmDesc d_;
  GemmAlignment al_;
  GemmOperands ops_;
  detail::Operand a_, b_, c_, bias_, res_, out_;
  bool has_c_ = false;
  std::int64_t sample_stride_ = 1, sample_rows_ = 0;
  bool extra_last_row_ = false;
  std::size_t scratch_bytes_ = 0;
  std::vector<const GemmKernelEntry*> refs_;
  std::vector<double> ref_;
  Status ref_status_;
  std::string ref_name_;
  std::unordered_map<std::string, double> first_ms_;  // validation run's time, by tactic name
  std::unordered_map<std::string, int> chain_of_;      // chain length of the last adaptive measurement (final round)
  std::size_t workspace_high_ = 0;
  int sets_ = 1;                                   // input copies for chained timing (open())
  int next_set_ = 0;                               // the copy the last timed launch read
  bool copies_evict_l2_ = false;                   // the copies together are ≥ 1.5× L2
  std::size_t rotation_base_ = 0, rotation_stride_ = 0;

  std::size_t set_offset(int i) const { return i == 0 ? 0 : rotation_base_ + static_cast<std::size_t>(i - 1) * rotation_stride_; }

  // ops_ with the inputs of copy i (the output and workspace are shared).
  GemmOperands ops_of_set(int i) const {
    GemmOperands o = ops_;
    const std::size_t off = set_offset(i);
    if (off == 0) return o;
    auto shift = [off](const void* p) { return p == nullptr ? p : static_cast<const void*>(static_cast<const char*>(p) + off); };
    o.a = shift(o.a);
    o.b = shift(o.b);
    o.c = shift(o.c);
    o.bias = shift(o.bias);
    o.residual = shift(o.residual);
    return o;
  }

  // Point ops_.workspace at enough pooled scratch for this tactic (none when it needs none).
  Status bind_workspace(const GemmKernelEntry& e, const GemmLaunchOptions& lo) {
    ops_.workspace = nullptr;
    ops_.workspace_bytes = 0;
    const std::size_t need = workspace_bytes_for(e, d_, lo);
    if (need == 0) return {};
    if (need > opt_.max_workspace_bytes)
      return error(StatusCode::unsupported, "needs " + std::to_string(need >> 20) + " MiB of workspace, over the tuning bound of " +
                                                std::to_string(opt_.max_workspace_bytes >> 20) + " MiB");
    KTUNE_RETURN_IF_ERROR(detail::grow_device(pool_, pool_.work, pool_.work_bytes, pool_.work_async, need, std::size_t{1} << 20, "tuning workspace"));
    workspace_high_ = std::max(workspace_high_, need);
    ops_.workspace = pool_.work;
    ops_.workspace_bytes = pool_.work_bytes;
    return {};
  }

  // Poison D, run once (timed), copy the sampled rows to `out` (as doubles).
  Status run_and_sample(const GemmKernelEntry& e, const GemmLaunchOptions& lo, std::vector<double>& out, double* ms) {
    const int ed = size_of(d_.d_type);
    KTUNE_RETURN_IF_ERROR(bind_workspace(e, lo));
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(out_.ptr, 0xff, out_.elements * static_cast<std::size_t>(ed), pool_.stream), "poisoning D"));
    return detail::launch_and_sample(
        pool_, [&] { return e.launch(d_, ops_, lo, pool_.stream); }, out_.ptr, d_.d_type, d_.n,
        static_cast<std::size_t>(d_.ldd) * static_cast<std::size_t>(ed), sample_stride_, sample_rows_, extra_last_row_, d_.m - 1, out, ms);
  }

  std::int64_t sampled_row(std::size_t r) const {
    return r < static_cast<std::size_t>(sample_rows_) ? static_cast<std::int64_t>(r) * sample_stride_ : d_.m - 1;
  }

  // The exact value (double accumulation) of D[i][j] from the synthetic inputs.
  double host_value(std::int64_t i, std::int64_t j) const {
    const bool a_row = d_.a_layout == Layout::row, b_row = d_.b_layout == Layout::row;
    double acc = 0;
    for (std::int64_t k = 0; k < d_.k; ++k) {
      const double a = a_.at(a_row ? i * d_.lda + k : k * d_.lda + i);
      const double b = b_.at(b_row ? k * d_.ldb + j : j * d_.ldb + k);
      acc += a * b;
    }
    return host_fp::epilogue_value(
        d_.epilogue, acc, has_c_, [&] { return c_.at(i * d_.ldc + j); }, [&] { return bias_.at(j); },
        [&] { return res_.at(i * d_.ldr + j); });
  }

  Status make_reference() {
    // Loose bars: this catches a broken reference (wrong indices, missing tiles give O(1) errors),
    // not rounding differences.
    const MathOp math = required_math(d_);
    const double host_tol = d_.d_type != DType::f32 || math == MathOp::mma_f16 || math == MathOp::mma_bf16 ? 2e-2
                            : math == MathOp::mma_tf32                                                      ? 1e-3
                                                                                                             : 1e-4;
    return detail::choose_reference(
        refs_, host_tol, d_.k, static_cast<std::size_t>(sample_rows_ + (extra_last_row_ ? 1 : 0)), d_.n,
        [&](const GemmKernelEntry& r, std::vector<double>& out) { return run_and_sample(r, GemmLaunchOptions{}, out, nullptr); },
        [&](std::size_t rr, std::int64_t j) { return host_value(sampled_row(rr), j); },
        ref_, ref_name_, "reference");
  }
};

inline Status CudaBackend::begin(int device, const GemmDesc& desc, const GemmAlignment& al,
                                 std::span<const GemmKernelEntry* const> candidates, std::unique_ptr<TuningSession>& out) {
  if (candidates.empty()) return error(StatusCode::no_instance, "no candidates to tune");
  auto s = std::make_unique<CudaSession>(pool(device), opt_);
  KTUNE_RETURN_IF_ERROR(s->open(device, desc, al, candidates));
  out = std::move(s);
  return {};
}

}  // namespace ktune::tuner
