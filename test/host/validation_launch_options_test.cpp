// Host tests: launch options a caller passes to the one-call APIs (GemmOptions::launch,
// ConvOptions::launch) out of their ranges are invalid arguments, reported before anything is tuned,
// launched or even looked up on a device (so these run without a GPU). Pointers are fake addresses.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ktune/conv.hpp"
#include "ktune/gemm.hpp"

using namespace ktune;

namespace {

constexpr int kIntMax = std::numeric_limits<int>::max(), kIntMin = std::numeric_limits<int>::min();

GemmDesc gemm_desc() {
  GemmDesc d;
  d.m = 512;
  d.n = 384;
  d.k = 256;
  d.ab_type = DType::f16;
  d.d_type = DType::f16;
  d.a_layout = Layout::row;
  d.b_layout = Layout::col;
  return d;
}

GemmOperands gemm_ops() {
  GemmOperands o;
  o.a = reinterpret_cast<const void*>(std::uintptr_t{1} << 40);
  o.b = reinterpret_cast<const void*>(std::uintptr_t{2} << 40);
  o.d = reinterpret_cast<void*>(std::uintptr_t{3} << 40);
  return o;
}

Conv2dDesc conv_desc() {
  Conv2dDesc d;
  d.n = 2;
  d.h = 28;
  d.w = 28;
  d.c = 64;
  d.k = 64;
  d.r = 3;
  d.s = 3;
  d.pad_h = 1;
  d.pad_w = 1;
  return d;
}

Conv2dOperands conv_ops() {
  Conv2dOperands o;
  o.x = reinterpret_cast<const void*>(std::uintptr_t{1} << 40);
  o.w = reinterpret_cast<const void*>(std::uintptr_t{2} << 40);
  o.y = reinterpret_cast<void*>(std::uintptr_t{3} << 40);
  return o;
}

}  // namespace

TEST_CASE("gemm(): launch options out of range are invalid arguments before anything is tuned or launched") {
  struct Case {
    std::string what;
    GemmLaunchOptions o;
    const char* fragment;
  };
  std::vector<Case> cases;
  for (int rg : {0, -1, -8, max_raster_group + 1, 1 << 20, kIntMax, kIntMin}) {
    GemmLaunchOptions o;
    o.raster_group = rg;
    cases.push_back({"raster_group " + std::to_string(rg), o, "raster_group must be in [1, 1024]"});
  }
  for (int sk : {0, -1, max_split_k + 1, kIntMax, kIntMin}) {
    GemmLaunchOptions o;
    o.split_k = sk;
    cases.push_back({"split_k " + std::to_string(sk), o, "split_k must be in [1, 256]"});
  }
  {
    GemmLaunchOptions o;
    o.split_k = 2;
    o.split_mode = static_cast<SplitKMode>(7);
    cases.push_back({"split_mode 7", o, "unknown split_mode"});
  }
  for (int cl : {-1, 3, kIntMax}) {
    GemmLaunchOptions o;
    o.cluster = cl;
    cases.push_back({"cluster " + std::to_string(cl), o, "cluster must be 0"});
  }
  for (int mc : {-1, kIntMin}) {
    GemmLaunchOptions o;
    o.max_ctas = mc;
    cases.push_back({"max_ctas " + std::to_string(mc), o, "max_ctas must not be negative"});
  }
  for (int pdl : {3, -1}) {
    GemmLaunchOptions o;
    o.pdl = static_cast<PdlChoice>(pdl);
    cases.push_back({"pdl " + std::to_string(pdl), o, "unknown pdl"});
  }
  for (const Case& c : cases)
    for (bool heuristic : {false, true})
      for (const char* instance : {static_cast<const char*>(nullptr), "ktune_gemm_sm80_f16_tn_128x128x32_w32x64_s3_a1"}) {
        CAPTURE(c.what);
        CAPTURE(heuristic);
        CAPTURE(instance != nullptr);
        GemmOptions opt;
        opt.launch = c.o;
        opt.heuristic = heuristic;
        opt.instance = instance;
        const Status s = gemm(gemm_desc(), gemm_ops(), nullptr, opt);
        CAPTURE(s.to_string());
        CHECK(s.code() == StatusCode::invalid_argument);
        CHECK(s.message().find(c.fragment) != std::string::npos);
      }
  // In range (the extremes included) passes this check: on a machine without a GPU the next answer is no_device.
  for (int rg : {1, max_raster_group}) {
    GemmOptions opt;
    opt.launch.raster_group = rg;
    CHECK(check_launch_option_ranges(opt.launch).ok());
    if (cuda_device_count() == 0) CHECK(gemm(gemm_desc(), gemm_ops(), nullptr, opt).code() == StatusCode::no_device);
  }
  for (PdlChoice pdl : {PdlChoice::rule, PdlChoice::on, PdlChoice::off}) {
    GemmOptions opt;
    opt.launch.pdl = pdl;
    CHECK(check_launch_option_ranges(opt.launch).ok());
    if (cuda_device_count() == 0) CHECK(gemm(gemm_desc(), gemm_ops(), nullptr, opt).code() == StatusCode::no_device);
  }
}

TEST_CASE("conv2d(): a raster group out of range is an invalid argument before anything is tuned or launched") {
  for (int rg : {0, -1, -8, max_raster_group + 1, 1 << 20, kIntMax, kIntMin})
    for (const char* instance : {static_cast<const char*>(nullptr), "ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w64x32_s4_a8"}) {
      CAPTURE(rg);
      CAPTURE(instance != nullptr);
      ConvOptions opt;
      opt.launch.raster_group = rg;
      opt.instance = instance;
      CHECK(check_conv_launch_options(opt.launch).code() == StatusCode::invalid_argument);
      const Status s = conv2d(conv_desc(), conv_ops(), nullptr, opt);
      CAPTURE(s.to_string());
      CHECK(s.code() == StatusCode::invalid_argument);
      CHECK(s.message().find("conv raster_group must be in [1, 1024], got " + std::to_string(rg)) != std::string::npos);
    }
  // A bad problem is still reported as such first (validate runs before the options are looked at).
  Conv2dDesc bad = conv_desc();
  bad.stride_h = 0;
  ConvOptions opt;
  opt.launch.raster_group = -1;
  CHECK(conv2d(bad, conv_ops(), nullptr, opt).code() == StatusCode::invalid_argument);
  for (int rg : {1, 8, 64, max_raster_group}) {
    ConvOptions ok;
    ok.launch.raster_group = rg;
    CHECK(check_conv_launch_options(ok.launch).ok());
    if (cuda_device_count() == 0) CHECK(conv2d(conv_desc(), conv_ops(), nullptr, ok).code() == StatusCode::no_device);
  }
}
