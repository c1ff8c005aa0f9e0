// ktune/arch.hpp — per-architecture limits used by the constraint model (compile time), and the
// fingerprint of the device a process actually runs on (run time).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ktune {

struct ArchTraits {
  std::string_view name;     // "sm80"
  int cc;                    // compute capability × 10
  int smem_optin_bytes;      // max dynamic shared memory per block after cudaFuncSetAttribute
  int smem_per_sm_bytes;     // shared memory per multiprocessor
  int regs_per_sm;           // 32-bit registers per multiprocessor
  int max_regs_per_thread;
  int max_threads_per_block;
  int max_threads_per_sm;
  bool has_cp_async;         // sm_80+: cp.async global→shared
  bool has_wgmma;            // sm_90a
};

// Values from the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability".
inline constexpr ArchTraits sm80{"sm80", 80, 163 * 1024, 164 * 1024, 65536, 255, 1024, 2048, true, false};
inline constexpr ArchTraits sm86{"sm86", 86, 99 * 1024, 100 * 1024, 65536, 255, 1024, 1536, true, false};
inline constexpr ArchTraits sm89{"sm89", 89, 99 * 1024, 100 * 1024, 65536, 255, 1024, 1536, true, false};
inline constexpr ArchTraits sm90{"sm90", 90, 227 * 1024, 228 * 1024, 65536, 255, 1024, 2048, true, true};

inline constexpr ArchTraits known_archs[] = {sm80, sm86, sm89, sm90};

// Closest known traits for a compute capability (major*10+minor); nullptr below sm_80.
constexpr const ArchTraits* arch_for_cc(int cc) {
  const ArchTraits* best = nullptr;
  for (const auto& a : known_archs)
    if (a.cc <= cc && (best == nullptr || a.cc > best->cc)) best = &a;
  return best;
}

// What the tuner and cache need to know about the GPU a call runs on.
struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  int cc = 0;                  // major*10+minor
  int sm_count = 0;
  int l2_bytes = 0;
  int smem_optin_bytes = 0;
  int driver_version = 0;
  int runtime_version = 0;

  // Stable identity used to key tuning caches: a cache never applies to another GPU or stack.
  std::string fingerprint() const {
    return name + "|cc" + std::to_string(cc) + "|sm" + std::to_string(sm_count) + "|l2:" +
           std::to_string(l2_bytes) + "|drv" + std::to_string(driver_version) + "|rt" +
           std::to_string(runtime_version);
  }
};

}  // namespace ktune
