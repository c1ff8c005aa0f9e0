// ktune/device.hpp — query the current CUDA device (host code, CUDA runtime API only).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "ktune/arch.hpp"
#include "ktune/status.hpp"

namespace ktune {

inline Status cuda_status(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return {};
  return error(StatusCode::cuda_error,
               std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

// The bit of device ordinal `dev` in a 64-bit "done once per device" set (launch-path caches: shared-memory
// limits, image checks, cluster fits); 0 for ordinals outside [0, 64), whose callers then check every time
// instead of aliasing another device's bit.
constexpr std::uint64_t device_bit(int dev) { return dev >= 0 && dev < 64 ? std::uint64_t{1} << dev : 0; }

// Number of visible CUDA devices; 0 when there is no device or no driver.
inline int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

// Device facts are cached per ordinal: cudaGetDeviceProperties costs tens of µs, the dispatch path
// must not pay it on every call.
inline Status query_device(int ordinal, DeviceInfo& out) {
  static std::mutex mu;
  static std::vector<DeviceInfo> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (ordinal >= 0 && ordinal < static_cast<int>(cache.size()) && cache[ordinal].ordinal == ordinal) {
    out = cache[ordinal];
    return {};
  }
  cudaDeviceProp p{};
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties"));
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = p.name;
  d.cc = p.major * 10 + p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.smem_optin_bytes = static_cast<int>(p.sharedMemPerBlockOptin);
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  if (static_cast<int>(cache.size()) <= ordinal) cache.resize(ordinal + 1);
  cache[ordinal] = d;
  out = d;
  return {};
}

inline Status current_device(DeviceInfo& out) {
  int dev = 0;
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
  return query_device(dev, out);
}

}  // namespace ktune
