// test/fuzz/fuzz_support.hpp — what the fuzz targets share: a dispatch table holding every surviving
// configuration of the default families (metadata only: no kernel, nothing can be launched), a few
// fake devices, a tuning backend that never measures, and a reader that turns fuzz bytes into values.
// Built with clang's libFuzzer (scripts/fuzz.sh) and, for the corpus replay tests, with g++ (ctest
// label `sanitize`), so it uses nothing compiler-specific.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/dispatch.hpp"
#include "ktune/family.hpp"
#include "ktune/gemm/families.hpp"
#include "ktune/tuner/backend.hpp"

namespace ktune_fuzz {

using namespace ktune;

// Fail loudly: the fuzzer records the input as a crash, the replay test fails.
[[noreturn]] inline void fail(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "ktune fuzz invariant violated: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}
#define KTUNE_FUZZ_CHECK(cond, ...)                                  \
  do {                                                               \
    if (!(cond)) ::ktune_fuzz::fail(#cond, std::string(__VA_ARGS__)); \
  } while (0)

// ---- The table ----------------------------------------------------------------------------------------

template <class F>
void add_family(GemmTable& t) {
  static std::deque<std::string> names;  // entries hold string_views: the names need a stable home
  for (const GemmConfig& c : valid_configs<F>()) {
    names.emplace_back(instance_name(c).view());
    GemmKernelEntry e;
    e.name = names.back();
    e.family = F::name;
    e.config = c;
    e.resources = estimate_resources(c);
    t.add(e);  // launch and attributes stay null: nothing here ever launches
  }
}

// Every default family's survivors (the sm90 wgmma family included), as src/instances/ would register
// them, in a table of its own (the process-wide gemm_table() stays empty).
inline const GemmTable& fake_table() {
  static const GemmTable* t = [] {
    auto* x = new GemmTable;
    add_family<families::Sm80MmaF16>(*x);
    add_family<families::Sm80MmaF16Small>(*x);
    add_family<families::Sm80MmaF16Unaligned>(*x);
    add_family<families::Sm80MmaTf32>(*x);
    add_family<families::Sm80MmaTf32Unaligned>(*x);
    add_family<families::Sm80SimtF32>(*x);
    add_family<families::Sm90WgmmaF16>(*x);
    add_family<families::Sm90WgmmaF16Small>(*x);
    add_family<families::Sm90WgmmaF16PingPong>(*x);
    return x;
  }();
  return *t;
}

inline DeviceInfo make_device(int ordinal, const char* name, int cc, int sms, int smem_optin) {
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = name;
  d.cc = cc;
  d.sm_count = sms;
  d.l2_bytes = 50 << 20;
  d.smem_optin_bytes = smem_optin;
  d.driver_version = 13000;
  d.runtime_version = 13000;
  return d;
}

// H200 (sm90, 227 KB), A100 (sm80, 163 KB), an sm86 part (99 KB), a Turing part no instance runs on.
inline const std::vector<DeviceInfo>& fake_devices() {
  static const std::vector<DeviceInfo> d = {
      make_device(0, "Fake H200", 90, 132, 227 * 1024),
      make_device(1, "Fake A100", 80, 108, 163 * 1024),
      make_device(2, "Fake RTX A6000", 86, 84, 99 * 1024),
      make_device(3, "Fake T4", 75, 40, 64 * 1024),
  };
  return d;
}

// A backend that knows the fake devices and never measures (the fuzz targets use Policy::cache_only).
class NoMeasureBackend : public tuner::TuningBackend {
 public:
  int device = 0;
  Status current_device(int& ordinal) override {
    ordinal = device;
    return {};
  }
  Status device_info(int ordinal, DeviceInfo& out) override {
    if (ordinal < 0 || ordinal >= static_cast<int>(fake_devices().size()))
      return error(StatusCode::no_device, "fake device " + std::to_string(ordinal) + " does not exist");
    out = fake_devices()[static_cast<std::size_t>(ordinal)];
    return {};
  }
  bool is_capturing(cudaStream_t) override { return false; }
  Status begin(int, const GemmDesc&, const GemmAlignment&, std::span<const GemmKernelEntry* const>,
               std::unique_ptr<tuner::TuningSession>&) override {
    fail("the fuzz tuner must never start measuring");
  }
};

// ---- Bytes -> values --------------------------------------------------------------------------------------

// Reads little-endian values off the input; past the end every read is 0 (so short inputs still decode).
class Bytes {
 public:
  Bytes(const std::uint8_t* p, std::size_t n) : p_(p), n_(n) {}
  std::uint8_t u8() { return pos_ < n_ ? p_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (unsigned(u8()) << 8)); }
  std::uint32_t u32() { return u16() | (std::uint32_t(u16()) << 16); }
  std::uint64_t u64() { return u32() | (std::uint64_t(u32()) << 32); }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  bool flag() { return (u8() & 1) != 0; }
  float f32() {
    const std::uint32_t b = u32();
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }
  std::size_t left() const { return pos_ < n_ ? n_ - pos_ : 0; }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
  std::size_t pos_ = 0;
};

}  // namespace ktune_fuzz
