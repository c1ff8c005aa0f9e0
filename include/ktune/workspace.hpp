// ktune/workspace.hpp — the workspace pool behind ktune::gemm() when the caller passes none.
//
// One slot per (device, stream) — per (device, stream, host thread) for the default streams, whose
// handle means a different stream per thread under per-thread default-stream semantics — so launches
// on different streams never share scratch, and launches on one stream are ordered by the stream.
// Slots only grow, by stream-ordered allocation on their stream (ktune's memory pool, detail::
// private_mem_pool: no device-wide synchronization, no waiting for other streams). A buffer that is
// outgrown is kept (not freed) until release_gemm_workspaces(): work already queued, or a CUDA graph
// captured earlier, may still use it.
// Growing while the stream is capturing a graph is refused (the allocation would belong to the graph):
// run the call once before capture, or pass GemmOperands::workspace. Thread-safe.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "ktune/device.hpp"
#include "ktune/status.hpp"

namespace ktune {

namespace detail {
// ktune's own stream-ordered memory pool on `device` (created once, never destroyed; null where memory
// pools are missing). Unlike the device's default pool it never reuses a block that another stream
// freed but has not yet reached (cudaMemPoolReuseAllowInternalDependencies off): such reuse makes the
// allocating stream wait for the freeing one, so growing a buffer could wait for unrelated work (a
// cudaFreeAsync queued behind a long kernel elsewhere). Blocks whose free has completed, or that an
// event already orders, are still reused; freed memory goes back to the system at synchronizations
// (release threshold 0, the default).
struct PrivateMemPools {
  std::mutex mu;
  std::map<int, cudaMemPool_t> by_device;  // null: no pool on that device
};
inline PrivateMemPools& private_mem_pools() {
  static PrivateMemPools* const p = new PrivateMemPools;  // never destroyed (used from static destructors)
  return *p;
}

inline cudaMemPool_t private_mem_pool(int device) {
  PrivateMemPools& all = private_mem_pools();
  std::lock_guard<std::mutex> lock(all.mu);
  auto& pools = all.by_device;
  if (auto it = pools.find(device); it != pools.end()) return it->second;
  cudaMemPool_t pool = nullptr;
  int supported = 0;
  if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) == cudaSuccess && supported != 0) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    if (cudaMemPoolCreate(&pool, &props) == cudaSuccess) {
      int no = 0;
      if (cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no) != cudaSuccess) {
        (void)cudaMemPoolDestroy(pool);
        pool = nullptr;
      }
    } else {
      pool = nullptr;
    }
  }
  (void)cudaGetLastError();
  pools[device] = pool;
  return pool;
}

// Device memory for use on `stream` (of the current device): stream-ordered from ktune's pool, so
// growing a buffer never waits for, or synchronizes with, work on other streams; plain cudaMalloc
// where memory pools are missing. `*stream_ordered` (optional) says which it was: free_for_stream
// needs to know.
inline cudaError_t alloc_for_stream(void** p, std::size_t bytes, cudaStream_t stream, bool* stream_ordered = nullptr) {
  if (stream_ordered) *stream_ordered = true;
  int dev = 0;
  if (cudaGetDevice(&dev) == cudaSuccess)
    if (cudaMemPool_t pool = private_mem_pool(dev))
      if (cudaMallocFromPoolAsync(p, bytes, pool, stream) == cudaSuccess) return cudaSuccess;
  (void)cudaGetLastError();
  if (stream_ordered) *stream_ordered = false;
  return cudaMalloc(p, bytes);
}

// Give the free memory of ktune's pools back to the system now (after releasing buffers).
inline void trim_private_mem_pools() {
  PrivateMemPools& all = private_mem_pools();
  std::lock_guard<std::mutex> lock(all.mu);
  for (auto& [dev, pool] : all.by_device)
    if (pool != nullptr && cudaMemPoolTrimTo(pool, 0) != cudaSuccess) (void)cudaGetLastError();
}

// Free `p` from alloc_for_stream once `stream` reaches this point: stream-ordered (no device-wide
// synchronization) when it was allocated so; otherwise cudaFree, which synchronizes the device (only
// where memory pools are missing, and there cudaMalloc does as well).
inline cudaError_t free_for_stream(void* p, cudaStream_t stream, bool stream_ordered) {
  if (p == nullptr) return cudaSuccess;
  return stream_ordered ? cudaFreeAsync(p, stream) : cudaFree(p);
}
}  // namespace detail

class WorkspacePool {
 public:
  // A buffer of at least `bytes` for use on `stream` of the current device.
  Status acquire(cudaStream_t stream, std::size_t bytes, void*& out, std::size_t& out_bytes) {
    out = nullptr;
    out_bytes = 0;
    int dev = 0;
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    const bool per_thread = stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
    const Key key{dev, stream, per_thread ? std::this_thread::get_id() : std::thread::id{}};
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[key];
    if (s.bytes < bytes) {
      cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess) (void)cudaGetLastError();
      if (cap != cudaStreamCaptureStatusNone)
        return error(StatusCode::invalid_argument,
                     "GEMM workspace must grow to " + std::to_string(bytes) +
                         " bytes while the stream is capturing a graph: run the call once before capture, or pass "
                         "GemmOperands::workspace (size: gemm_workspace_size)");
      constexpr std::size_t granule = std::size_t{1} << 16;  // round up to 64 KiB, no more
      const std::size_t want = (bytes + granule - 1) / granule * granule;
      void* p = nullptr;
      KTUNE_RETURN_IF_ERROR(cuda_status(detail::alloc_for_stream(&p, want, stream), "allocating the GEMM workspace"));
      if (s.ptr != nullptr) retired_.push_back(s.ptr);
      s.ptr = p;
      s.bytes = want;
    }
    out = s.ptr;
    out_bytes = s.bytes;
    return {};
  }

  // Free every buffer (after the device finished all work that might use them).
  Status release() {
    std::lock_guard<std::mutex> lock(mu_);
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    for (auto& [k, s] : slots_) (void)cudaFree(s.ptr);
    for (void* p : retired_) (void)cudaFree(p);
    slots_.clear();
    retired_.clear();
    detail::trim_private_mem_pools();
    return {};
  }

  std::size_t bytes_held() {
    std::lock_guard<std::mutex> lock(mu_);
    std::size_t n = 0;
    for (auto& [k, s] : slots_) n += s.bytes;
    return n;
  }

 private:
  using Key = std::tuple<int, cudaStream_t, std::thread::id>;
  struct Slot {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  };
  std::mutex mu_;
  std::map<Key, Slot> slots_;
  std::vector<void*> retired_;
};

// Serial split-K's per-tile arrival counters, owned by ktune: one zero-filled array per (device,
// stream) (keyed like WorkspacePool), which every serial split-K kernel leaves zero again, so launches
// need no memset. get() returns null when it cannot provide one now (growing while the stream
// captures a graph, or an allocation failure): the launcher then keeps the counters in the caller's
// workspace and zeroes them in-stream. A CUDA graph captured on one stream uses that stream's array:
// do not replay it concurrently with other serial split-K work of that stream.
class SplitKCounterPool {
 public:
  int* get(cudaStream_t stream, std::int64_t count) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    const bool per_thread = stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
    const Key key{dev, stream, per_thread ? std::this_thread::get_id() : std::thread::id{}};
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[key];
    if (s.count >= count) return s.ptr;
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError();
      return nullptr;
    }
    constexpr std::int64_t min_count = 16384;  // 64 KiB: every split-K problem worth splitting
    const std::int64_t want = count > min_count ? count : min_count;
    int* p = nullptr;
    void* raw = nullptr;
    bool ordered = false;
    if (detail::alloc_for_stream(&raw, static_cast<std::size_t>(want) * sizeof(int), stream, &ordered) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    p = static_cast<int*>(raw);
    // Zeroed in stream order: every kernel later queued on `stream` sees zeros.
    if (cudaMemsetAsync(p, 0, static_cast<std::size_t>(want) * sizeof(int), stream) != cudaSuccess) {
      (void)cudaGetLastError();
      (void)detail::free_for_stream(p, stream, ordered);
      (void)cudaGetLastError();
      return nullptr;
    }
    if (s.ptr != nullptr) retired_.push_back(s.ptr);  // work already queued may still use it
    s.ptr = p;
    s.count = want;
    return p;
  }

 private:
  using Key = std::tuple<int, cudaStream_t, std::thread::id>;
  struct Slot {
    int* ptr = nullptr;
    std::int64_t count = 0;
  };
  std::mutex mu_;
  std::map<Key, Slot> slots_;
  std::vector<int*> retired_;
};

inline SplitKCounterPool& split_k_counter_pool() {
  static SplitKCounterPool* const pool = new SplitKCounterPool;
  return *pool;
}

// The process-wide pool (never destroyed, so calls from static destructors stay safe).
inline WorkspacePool& gemm_workspace_pool() {
  static WorkspacePool* const pool = new WorkspacePool;
  return *pool;
}

// Free ktune's cached GEMM workspaces (synchronizes the current device first; the buffers of other
// devices are freed as well, which may synchronize implicitly).
inline Status release_gemm_workspaces() { return gemm_workspace_pool().release(); }

}  // namespace ktune
