// GPU tests of conv2d fprop: every conv instance, run by name, against a float64 CPU reference on small
// problems (padding/stride/dilation corners, H or W smaller than the filter, 1x1, 3x3, 7x7, C not a
// multiple of the tile or vector, odd K) with random non-zero data and poisoned, guarded outputs; every
// epilogue and output type through the one-call API; misaligned pointers; residual aliasing y; bad input
// launching nothing; ResNet-50 layer shapes at batch 1; the conv register model against the compiler.
// On an H200 the Hopper routes (gemm1x1, tma_im2col) run every problem they accept, including ones
// with more output tiles than resident CTAs (the persistent grid's later laps), and their split-K
// launches (every split count and mode, serial == parallel bitwise, refusals).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "gpu/conv_util.cuh"
#include "conv_problem.hpp"

using namespace ktconv;

namespace {

// The problems below, spelled shortly.
template <class... A>
Conv2dDesc P(A... a) {
  return ktune::test::conv_problem(a...);
}

using Named = ktune::test::NamedConvProblem;

// Small problems; each instance runs every one its iterator accepts.
const std::vector<Named>& problems() {
  static const std::vector<Named> v = {
      {"1x1, odd K", P(2, 7, 7, 64, 13, 1, 1, 0, 0)},
      {"3x3 same padding, M and K not tile multiples", P(2, 9, 11, 64, 40, 3, 3, 1, 1)},
      {"3x3 stride 2", P(3, 10, 9, 16, 24, 3, 3, 1, 1, 2, 2)},
      {"3x3 dilation 2", P(2, 12, 12, 8, 16, 3, 3, 2, 2, 1, 1, 2, 2)},
      {"H and W smaller than the 5x5 filter, padding 2", P(2, 2, 3, 8, 8, 5, 5, 2, 2)},
      {"asymmetric pad/stride/dilation, 2x3 filter", P(2, 9, 10, 24, 20, 2, 3, 0, 2, 1, 3, 1, 2)},
      {"C=128, many k-tiles, K=136", P(1, 16, 16, 128, 136, 3, 3, 1, 1)},
      {"1x1 stride 2 (downsample)", P(2, 14, 14, 32, 72, 1, 1, 0, 0, 2, 2)},
      {"7x7 filter on a 5x5 image, C=40", P(1, 5, 5, 40, 32, 7, 7, 3, 3)},
      {"C=5 (scalar)", P(2, 8, 8, 5, 9, 3, 3, 1, 1)},
      {"C=12 (4-element vectors)", P(2, 8, 8, 12, 20, 3, 3, 1, 1)},
      {"C=6 (2-element vectors)", P(2, 7, 7, 6, 10, 3, 3, 1, 1)},
      {"C=3 7x7 stride 2 (stem)", P(2, 17, 19, 3, 13, 7, 7, 3, 3, 2, 2)},
      {"C=4 7x7 stride 2 (stem)", P(2, 20, 20, 4, 64, 7, 7, 3, 3, 2, 2)},
      {"C=1, dilation 2 by 1", P(2, 6, 5, 1, 7, 3, 3, 2, 1, 1, 1, 2, 1)},
      {"valid padding, no halo", P(2, 6, 6, 16, 8, 3, 3, 0, 0)},
      // Hopper routes (TMA: C % 8 == 0): channel blocks of 64 partly past C, K = 8·odd, more output
      // tiles than CTAs (the persistent grid's second lap), 1x1 with C < one k-tile
      {"1x1, C=8 < one k-tile, K=24", P(3, 5, 7, 8, 24, 1, 1, 0, 0)},
      {"3x3 stride 2, C=72 (second channel block partial), K=56", P(2, 11, 10, 72, 56, 3, 3, 1, 1, 2, 2)},
      {"1x1, 32768 pixels (persistent second lap), K=24", P(8, 64, 64, 16, 24, 1, 1, 0, 0)},
      {"3x3, 25600 pixels (persistent second lap), C=8", P(16, 40, 40, 8, 16, 3, 3, 1, 1)},
      {"1x3 filter, pad 0/1, stride 2/1, dil 1/3, C=32", P(2, 9, 13, 32, 8, 1, 3, 0, 1, 2, 1, 1, 3)},
  };
  return v;
}

std::vector<EpilogueSpec> epilogues() {
  std::vector<EpilogueSpec> v;
  v.push_back(bias_activation(Activation::relu));
  v.push_back(bias_activation(Activation::gelu_tanh));
  v.push_back(bias_activation(Activation::silu));
  EpilogueSpec e;
  e.residual = true;
  v.push_back(e);
  e.bias = true;
  e.activation = Activation::relu;
  v.push_back(e);  // bias + residual + relu (ResNet block output)
  v.push_back(linear_combination(0.5f, 0.75f));
  v.push_back(EpilogueSpec{});
  e = bias_activation(Activation::gelu_erf);
  v.push_back(e);
  e = EpilogueSpec{};
  e.alpha = 2.0f;
  e.clamp = true;
  e.clamp_lo = -0.5f;
  e.clamp_hi = 0.25f;
  v.push_back(e);
  return v;
}

const DeviceInfo& this_device() {
  static const DeviceInfo dev = [] {
    DeviceInfo d;
    REQUIRE(current_device(d).ok());
    return d;
  }();
  return dev;
}

// Instances that can run on this GPU at all (sm90 ones need cc 9.0).
bool runs_here(const ConvKernelEntry& e) {
  return e.resources.smem_bytes <= this_device().smem_optin_bytes &&
         (is_wgmma(e.config.gemm.math) ? this_device().cc == 90 : this_device().cc >= e.config.gemm.arch_cc);
}

// The table's instances that run on this GPU and pass keep(entry), in table order.
template <class Keep>
std::vector<const ConvKernelEntry*> entries_here(Keep keep) {
  std::vector<const ConvKernelEntry*> out;
  for (const auto& e : conv_table().entries())
    if (keep(e) && runs_here(e)) out.push_back(&e);
  return out;
}

bool accepts(const ConvKernelEntry& e, const Conv2dDesc& d, const ConvCase& c) {
  Conv2dOperands o;
  o.x = c.x.data();
  o.w = c.w.data();
  return can_implement(e, d, alignment_of(d, o), &this_device()).ok();
}

// outs[first % 3], or the next one (cyclically) instance e takes for d: the swap-AB gemm1x1 instances
// write 16-bit y only (can_implement refuses f32 y, unsupported); every other instance takes every type.
DType out_taken(const ConvKernelEntry& e, Conv2dDesc d, const ConvCase& c, const DType (&outs)[3], std::size_t first) {
  Conv2dOperands o;
  o.x = c.x.data();
  o.w = c.w.data();
  for (std::size_t i = 0; i < 3; ++i) {
    d.out_type = outs[(first + i) % 3];
    if (can_implement(e, d, alignment_of(d, o), &this_device()).code() != StatusCode::unsupported) return d.out_type;
  }
  return outs[first % 3];
}

// An instance and the launches of it a test runs.
struct InstanceLaunches {
  const ConvKernelEntry* entry;
  std::vector<ConvLaunchOptions> launches;
};

// Every operand type (f16, bf16) × problem × instance (of that type, accepting the problem) × its launches,
// against float64 with poisoned y and guard bands: the epilogue and y's type rotate over `eps` and
// f16/bf16/f32 with the run count. With `bias_relu_too` each launch runs once more with bias + ReLU into
// the operand type (the fragment epilogue and the TMA store on the Hopper routes). Each (type, problem)
// draws its tensors from seed++. Returns the number of (rotating) runs, and of those with cluster_k > 1.
struct RotatingRuns {
  int all = 0, cluster_k = 0;
};
RotatingRuns check_rotating(const std::vector<Named>& problems, const std::vector<InstanceLaunches>& table,
                   const std::vector<EpilogueSpec>& eps, std::uint64_t seed, bool bias_relu_too) {
  const DType outs[] = {DType::f16, DType::bf16, DType::f32};
  RotatingRuns count;
  int& runs = count.all;
  for (DType t : {DType::f16, DType::bf16})
    for (const Named& p : problems) {
      Conv2dDesc d = p.d;
      d.type = t;
      const ConvCase c(d, seed++);
      for (const auto& [entry, launches] : table) {
        if (entry->config.operand() != t || !accepts(*entry, d, c)) continue;
        for (const ConvLaunchOptions& lo : launches) {
          const EpilogueSpec& ep = eps[(seed + runs) % eps.size()];
          const DType out = out_taken(*entry, d, c, outs, static_cast<std::size_t>((seed + 2 * runs) % 3));
          ++runs;
          count.cluster_k += lo.cluster_k > 1;
          const Check chk = run_and_check(c, ep, out, entry->name.data(), seed * 100 + runs, nullptr, false, lo);
          Conv2dDesc shown = d;
          shown.epilogue = ep;
          shown.out_type = out;
          INFO(conv_tactic_name(entry->name, lo) << " on " << p.what << ": " << describe(shown) << ": " << chk.summary());
          CHECK(chk.ok(tolerance(out)));
          if (!bias_relu_too) continue;
          const Check fast = run_and_check(c, bias_activation(Activation::relu), t, entry->name.data(), seed * 100 + runs + 50, nullptr, false, lo);
          INFO(conv_tactic_name(entry->name, lo) << " bias+relu on " << p.what << ": " << fast.summary());
          CHECK(fast.ok(tolerance(t)));
        }
      }
    }
  return count;
}

// Residual aliasing y under `launch` (@mc2, @pk2) on each instance of c.d.type that runs here and accepts
// c, and the refusals: on the instances in `taking` the run is checked and each of `excluded` (the option
// with one it excludes) is an invalid argument, elsewhere `launch` alone is unsupported; no refusal writes y.
void check_residual_and_refusals(const ConvCase& c, const ConvLaunchOptions& launch,
                                 const std::vector<const ConvKernelEntry*>& taking,
                                 const std::vector<ConvLaunchOptions>& excluded, std::uint64_t seed) {
  EpilogueSpec ea = bias_activation(Activation::relu);
  ea.residual = true;
  Tensor y(c.d.type, conv_shape(c.d).y_elems);
  Conv2dOperands o;
  o.x = c.x.data();
  o.w = c.w.data();
  o.y = y.data();
  for (const auto& entry : conv_table().entries()) {
    if (!runs_here(entry) || entry.config.operand() != c.d.type || !accepts(entry, c.d, c)) continue;
    ConvOptions opt;
    opt.instance = entry.name.data();
    opt.launch = launch;
    if (std::find(taking.begin(), taking.end(), &entry) != taking.end()) {
      const Check chk = run_and_check(c, ea, c.d.type, entry.name.data(), seed, nullptr, true, launch);
      INFO(conv_tactic_name(entry.name, launch) << ", residual aliasing y: " << chk.summary());
      CHECK(chk.ok(tolerance(c.d.type)));
      for (const ConvLaunchOptions& bad : excluded) {
        opt.launch = bad;
        CHECK(conv2d(c.d, o, nullptr, opt).code() == StatusCode::invalid_argument);
      }
    } else {
      INFO(conv_tactic_name(entry.name, launch));
      CHECK(conv2d(c.d, o, nullptr, opt).code() == StatusCode::unsupported);
    }
  }
  KTCONV_CUDA(cudaDeviceSynchronize());
  CHECK(y.download() == y.image);
}

}  // namespace

TEST_CASE("conv2d: every instance on every problem its iterator accepts, vs float64") {
  REQUIRE(conv_table().size() > 0);
  const auto eps = epilogues();
  const DType outs[] = {DType::f16, DType::bf16, DType::f32};
  std::vector<std::string> ran_nothing;
  for (const auto& e : conv_table().entries())
    if (runs_here(e)) ran_nothing.push_back(std::string(e.name));
  std::uint64_t seed = 1;
  for (DType t : {DType::f16, DType::bf16}) {
    for (const Named& p : problems()) {
      Conv2dDesc d = p.d;
      d.type = t;
      const ConvCase c(d, seed++);
      int i = 0;
      for (const auto& e : conv_table().entries()) {
        if (e.config.operand() != t || !accepts(e, d, c)) continue;
        ++i;
        const EpilogueSpec& ep = eps[(seed + i) % eps.size()];
        const DType out = out_taken(e, d, c, outs, static_cast<std::size_t>((seed + 2 * i) % 3));
        const Check chk = run_and_check(c, ep, out, e.name.data(), seed * 100 + i);
        Conv2dDesc shown = d;
        shown.epilogue = ep;
        shown.out_type = out;
        INFO(e.name << " on " << p.what << ": " << describe(shown) << ": " << chk.summary());
        CHECK(chk.ok(tolerance(out)));
        std::erase(ran_nothing, std::string(e.name));
      }
    }
  }
  INFO("instances no test problem reached: " << ran_nothing.size());
  CHECK(ran_nothing.empty());
}

// The mma.sync kernels' register epilogue (gemm_kernel.cuh store_tile fast path: act(alpha·acc + bias)
// from the accumulators, D in the operand type): every mma.sync instance on problems with whole tiles
// inside y and partial ones around them, y rows 16-byte aligned (K % 8 == 0: the 16-byte stores) or only
// 8-byte aligned (K % 8 == 4: the 4-byte pair stores), with bias + ReLU, bias alone, alpha + ReLU without
// bias and a plain alpha; each against float64 with poisoned y and guard bands. The staged path's
// epilogues (C, residual, clamp, other activations, f32 y) run in the case above.
TEST_CASE("conv2d: mma.sync register epilogue (bias, ReLU, alpha) on whole and partial tiles vs float64") {
  std::vector<EpilogueSpec> eps;
  eps.push_back(bias_activation(Activation::relu));
  eps.push_back(bias_activation(Activation::none));
  EpilogueSpec e;
  e.alpha = 1.5f;
  e.activation = Activation::relu;
  eps.push_back(e);
  eps.push_back(linear_combination(0.5f, 0.0f));
  std::uint64_t seed = 7000;
  int ran = 0;
  for (DType t : {DType::f16, DType::bf16})
    for (const Conv2dDesc& base : {P(1, 16, 17, 64, 264, 1, 1, 0, 0), P(2, 9, 10, 64, 260, 3, 3, 1, 1),
                                   P(2, 16, 16, 32, 136, 3, 3, 1, 1)}) {
      Conv2dDesc d = base;
      d.type = t;
      const ConvCase c(d, seed++);
      for (const auto& en : conv_table().entries()) {
        if (is_wgmma(en.config.gemm.math) || en.config.iterator == ConvIterator::stem) continue;
        if (en.config.operand() != t || !runs_here(en) || !accepts(en, d, c)) continue;
        for (const EpilogueSpec& ep : eps) {
          ++ran;
          const Check chk = run_and_check(c, ep, t, en.name.data(), seed++);
          Conv2dDesc shown = d;
          shown.epilogue = ep;
          shown.out_type = t;
          INFO(en.name << ": " << describe(shown) << ": " << chk.summary());
          CHECK(chk.ok(tolerance(t)));
        }
      }
    }
  CHECK(ran > 0);
}

TEST_CASE("conv2d: every epilogue and output type through the one-call API") {
  const auto eps = epilogues();
  std::uint64_t seed = 1000;
  for (DType t : {DType::f16, DType::bf16})
    for (const Conv2dDesc& base : {P(2, 9, 11, 64, 40, 3, 3, 1, 1), P(2, 17, 19, 3, 13, 7, 7, 3, 3, 2, 2),
                                   P(2, 8, 8, 5, 9, 3, 3, 1, 1), P(2, 20, 20, 4, 64, 7, 7, 3, 3, 2, 2),
                                   P(2, 9, 11, 64, 40, 1, 1, 0, 0), P(3, 7, 5, 24, 13, 1, 1, 0, 0, 2, 2)}) {
      Conv2dDesc d = base;
      d.type = t;
      const ConvCase c(d, seed++);
      for (const EpilogueSpec& ep : eps)
        for (DType out : {DType::f16, DType::bf16, DType::f32}) {
          const Check chk = run_and_check(c, ep, out, nullptr, seed++);
          Conv2dDesc shown = d;
          shown.epilogue = ep;
          shown.out_type = out;
          INFO(describe(shown) << ": " << chk.summary());
          CHECK(chk.ok(tolerance(out)));
        }
    }
}

TEST_CASE("conv2d: residual aliasing y (in-place shortcut add)") {
  for (DType t : {DType::f16, DType::bf16})
    for (const Conv2dDesc& base : {P(2, 9, 9, 32, 32, 3, 3, 1, 1), P(2, 9, 9, 32, 32, 1, 1, 0, 0)}) {
      Conv2dDesc d = base;
      d.type = t;
      const ConvCase c(d, 77);
      EpilogueSpec e = bias_activation(Activation::relu);
      e.residual = true;
      const Check chk = run_and_check(c, e, t, nullptr, 78, nullptr, true);
      INFO(describe(d) << ": " << chk.summary());
      CHECK(chk.ok(tolerance(t)));
    }
}

TEST_CASE("conv2d: misaligned activations fall back to narrower vectors and stay correct") {
  for (std::int64_t off : {1, 2, 4}) {  // x data 2, 4 or 8 bytes past 16-byte alignment
    Conv2dDesc d = P(2, 9, 9, 64, 24, 3, 3, 1, 1);
    const ConvCase c(d, 90 + off, off);
    Conv2dOperands o;
    o.x = c.x.data();
    o.w = c.w.data();
    o.y = c.x.data();  // only for selection below; not launched
    const ConvAlignment al = alignment_of(d, o);
    CHECK(al.x == (off == 1 ? 1 : off == 2 ? 2 : 4));
    const Check chk = run_and_check(c, bias_activation(Activation::relu), DType::f16, nullptr, 91);
    INFO("x offset " << off << " elements: " << chk.summary());
    CHECK(chk.ok(tolerance(DType::f16)));
  }
}

TEST_CASE("conv2d: bad input launches nothing and leaves y untouched") {
  Conv2dDesc d = P(1, 8, 8, 16, 16, 3, 3, 1, 1);
  const ConvCase c(d, 5);
  Tensor y(DType::f16, conv_shape(d).y_elems);
  Conv2dOperands o;
  o.x = c.x.data();
  o.w = c.w.data();
  o.y = y.data();
  Conv2dDesc bad = d;
  bad.groups = 2;
  CHECK(conv2d(bad, o).code() == StatusCode::unsupported);
  bad = d;
  bad.stride_w = 0;
  CHECK(conv2d(bad, o).code() == StatusCode::invalid_argument);
  bad = d;
  bad.epilogue = bias_activation(Activation::relu);  // bias pointer missing
  CHECK(conv2d(bad, o).code() == StatusCode::invalid_argument);
  // Raster groups out of range: rejected before anything is tuned or launched, never clamped.
  for (int rg : {0, -1, max_raster_group + 1, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()}) {
    CAPTURE(rg);
    ConvOptions opt;
    opt.launch.raster_group = rg;
    const Status s = conv2d(d, o, nullptr, opt);
    CHECK(s.code() == StatusCode::invalid_argument);
    CHECK(s.message().find("raster_group") != std::string::npos);
  }
  o.y = const_cast<void*>(c.x.data());
  CHECK(conv2d(d, o).code() == StatusCode::invalid_argument);  // y overlaps x
  KTCONV_CUDA(cudaDeviceSynchronize());
  CHECK(y.download() == y.image);
}

TEST_CASE("conv2d: ResNet-50 layer shapes at batch 1 (the instance the heuristic picks)") {
  std::uint64_t seed = 500;
  for (const Conv2dDesc& base : {P(1, 56, 56, 64, 64, 3, 3, 1, 1), P(1, 224, 224, 4, 64, 7, 7, 3, 3, 2, 2),
                                 P(1, 224, 224, 3, 64, 7, 7, 3, 3, 2, 2), P(1, 28, 28, 128, 512, 1, 1, 0, 0),
                                 P(1, 14, 14, 256, 256, 3, 3, 1, 1), P(1, 7, 7, 2048, 512, 1, 1, 0, 0),
                                 P(1, 56, 56, 256, 128, 1, 1, 0, 0, 2, 2)}) {
    const ConvCase c(base, seed++);
    EpilogueSpec e = bias_activation(Activation::relu);
    const Check chk = run_and_check(c, e, DType::f16, nullptr, seed++);
    INFO(describe(base) << ": " << chk.summary());
    CHECK(chk.ok(tolerance(DType::f16)));
  }
}

TEST_CASE("conv model vs compiler: no spills, registers within the limit") {
  int device = 0, major = 0, minor = 0;
  KTCONV_CUDA(cudaGetDevice(&device));
  KTCONV_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  KTCONV_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  for (const auto& e : conv_table().entries()) {
    // Hopper instances are built for sm_90a only: on other devices there is no image to query.
    if (is_wgmma(e.config.gemm.math) && major * 10 + minor != 90) continue;
    cudaFuncAttributes a{};
    KTCONV_CUDA(e.attributes(&a));
    INFO(e.name << ": " << a.numRegs << " registers (model " << e.resources.registers << "), " << a.localSizeBytes
                << " B local");
    CHECK(a.localSizeBytes == 0);
    CHECK(a.numRegs <= 255);
    CHECK(a.maxThreadsPerBlock >= e.config.gemm.threads());
  }
}

// Split-K on the Hopper routes (ConvLaunchOptions::split_k > 1: tma_im2col slices its (tap, channel
// block) k-tiles, gemm1x1 is the sm90 GEMM's split-K; since session 8 also the mma.sync optimized 128x128
// tile, whose kernel runs the sm80 GEMM's split-K tail): every split-capable instance × split counts
// {2, 3, 5, 8, 13, 37} × parallel and (where the instance has it) serial mode, on problems with 1 to 72
// k-tiles (so K-tiles < splits too: empty slices store zeros), M not a tile multiple, more (tile,
// slice) units than resident CTAs, a channel block partly past C; every epilogue kind in turn (bias +
// ReLU, bias + residual + ReLU, residual, beta, clamp, none) into f16/bf16/f32 y; float64 reference,
// poisoned y, guard bands. Then: serial and parallel sums give the same bits; residual aliasing y;
// refusals (serial on a 128-accumulator warpgroup tile, split on an mma.sync instance, cluster_k past an
// instance's limit or with split_k) write nothing. Cluster split-K (cluster_k 2..limit) on the same problems.
TEST_CASE("conv2d: split-K on the Hopper routes, every split count and mode vs float64") {
  const std::vector<const ConvKernelEntry*> split_capable =
      entries_here([](const ConvKernelEntry& e) { return conv_supports_split_k(e.config); });
  if (split_capable.empty()) {
    MESSAGE("no split-capable conv instance runs on this device (Hopper routes need cc 9.0): skipped");
    return;
  }
  const std::vector<Named> split_problems = {
      {"3x3 pad 1, C=72 (2 channel blocks: 18 k-tiles), K=40", P(2, 9, 11, 72, 40, 3, 3, 1, 1)},
      {"1x1, C=8: 1 k-tile (every split > k-tiles)", P(3, 5, 7, 8, 24, 1, 1, 0, 0)},
      {"3x3 stride 2, C=64, K=56", P(2, 11, 10, 64, 56, 3, 3, 1, 1, 2, 2)},
      {"3x3, 12800 pixels: more units than CTAs, C=16", P(8, 40, 40, 16, 24, 3, 3, 1, 1)},
      {"7x7 map 3x3, C=512 (72 k-tiles), K=72 (ResNet stage 5 shape)", P(1, 7, 7, 512, 72, 3, 3, 1, 1)},
      {"1x1, C=512 (8 k-tiles), K=136", P(2, 7, 7, 512, 136, 1, 1, 0, 0)},
  };
  std::vector<EpilogueSpec> eps;
  eps.push_back(bias_activation(Activation::relu));
  EpilogueSpec e;
  e.bias = e.residual = true;
  e.activation = Activation::relu;
  eps.push_back(e);  // the ResNet block output
  e = EpilogueSpec{};
  e.residual = true;
  eps.push_back(e);
  eps.push_back(linear_combination(0.5f, 0.75f));  // beta: y's prior contents
  e = EpilogueSpec{};
  e.alpha = 2.0f;
  e.clamp = true;
  e.clamp_lo = -0.5f;
  e.clamp_hi = 0.25f;
  eps.push_back(e);
  eps.push_back(EpilogueSpec{});
  // Every split count × parallel and (where the instance has it) serial mode, then cluster split-K
  // (tma_im2col): every cluster size the instance takes.
  std::vector<InstanceLaunches> table;
  for (const ConvKernelEntry* entry : split_capable) {
    InstanceLaunches& row = table.emplace_back(InstanceLaunches{entry, {}});
    for (int splits : {2, 3, 5, 8, 13, 37})
      for (SplitKMode mode : {SplitKMode::parallel, SplitKMode::serial}) {
        if (mode == SplitKMode::serial && !supports_serial_split_k(entry->config.gemm)) continue;
        ConvLaunchOptions lo;
        lo.split_k = splits;
        lo.split_mode = mode;
        row.launches.push_back(lo);
      }
    for (int ck = 2; ck <= conv_cluster_k_limit(entry->config); ++ck) {
      ConvLaunchOptions lo;
      lo.cluster_k = ck;
      row.launches.push_back(lo);
    }
  }
  const RotatingRuns runs = check_rotating(split_problems, table, eps, 7000, false);
  MESSAGE(runs.all << " split-K runs, " << runs.cluster_k << " of them cluster split-K");
  CHECK(runs.cluster_k > 0);
  CHECK(runs.all > 0);

  // Serial and parallel mode add the same partials in the same order: the same bits, and residual
  // aliasing y (the in-place shortcut) works in both.
  Conv2dDesc d = P(2, 9, 11, 72, 40, 3, 3, 1, 1);
  const ConvCase c(d, 7100);
  for (const ConvKernelEntry* entry : split_capable) {
    if (entry->config.operand() != d.type || !accepts(*entry, d, c) || !supports_serial_split_k(entry->config.gemm)) continue;
    Conv2dDesc de = d;
    de.epilogue = linear_combination(0.9f, 0.0f);
    de.epilogue.bias = true;
    de.epilogue.activation = Activation::relu;
    Rng rng(7101);
    Tensor bias = random_tensor(d.type, d.k, rng);
    std::vector<std::vector<unsigned char>> images;
    for (SplitKMode mode : {SplitKMode::parallel, SplitKMode::serial}) {
      Tensor y(d.type, conv_shape(d).y_elems);
      Conv2dOperands o;
      o.x = c.x.data();
      o.w = c.w.data();
      o.y = y.data();
      o.bias = bias.data();
      ConvOptions opt;
      opt.instance = entry->name.data();
      opt.launch.split_k = 5;
      opt.launch.split_mode = mode;
      const Status st = conv2d(de, o, nullptr, opt);
      REQUIRE_MESSAGE(st.ok(), entry->name << ": " << st.to_string());
      KTCONV_CUDA(cudaDeviceSynchronize());
      images.push_back(y.download());
    }
    INFO(entry->name << " @split5: serial vs parallel");
    CHECK(images[0] == images[1]);
    for (int ck = 2; ck <= conv_cluster_k_limit(entry->config); ++ck) {  // cluster split-K: in place shortcut too
      ConvLaunchOptions lo;
      lo.cluster_k = ck;
      const Check chk = run_and_check(c, bias_activation(Activation::relu), d.type, entry->name.data(), 7103, nullptr, false, lo);
      INFO(conv_tactic_name(entry->name, lo) << ": " << chk.summary());
      CHECK(chk.ok(tolerance(d.type)));
    }
    EpilogueSpec ea = bias_activation(Activation::relu);
    ea.residual = true;
    for (SplitKMode mode : {SplitKMode::parallel, SplitKMode::serial}) {
      ConvLaunchOptions lo;
      lo.split_k = 3;
      lo.split_mode = mode;
      const Check chk = run_and_check(c, ea, d.type, entry->name.data(), 7102, nullptr, true, lo);
      INFO(conv_tactic_name(entry->name, lo) << ", residual aliasing y: " << chk.summary());
      CHECK(chk.ok(tolerance(d.type)));
    }
  }

  // Refusals: nothing launched, y untouched.
  Tensor y(d.type, conv_shape(d).y_elems);
  Conv2dOperands o;
  o.x = c.x.data();
  o.w = c.w.data();
  o.y = y.data();
  int refused = 0;
  for (const auto& entry : conv_table().entries()) {
    if (!runs_here(entry) || entry.config.operand() != d.type || !accepts(entry, d, c)) continue;
    ConvOptions opt;
    opt.instance = entry.name.data();
    opt.launch.split_k = 4;
    opt.launch.split_mode = SplitKMode::serial;
    const bool ok = conv_supports_split_k(entry.config) && supports_serial_split_k(entry.config.gemm);
    if (ok) continue;
    INFO(entry.name << " @split4s");
    CHECK(conv2d(d, o, nullptr, opt).code() == StatusCode::unsupported);
    ++refused;
  }
  for (const auto& entry : conv_table().entries()) {  // cluster split-K past the instance's limit
    if (!runs_here(entry) || entry.config.operand() != d.type || !accepts(entry, d, c)) continue;
    ConvOptions opt;
    opt.instance = entry.name.data();
    opt.launch.cluster_k = conv_cluster_k_limit(entry.config) + 1;
    INFO(entry.name << " @ck" << opt.launch.cluster_k);
    const StatusCode code = conv2d(d, o, nullptr, opt).code();
    CHECK((code == StatusCode::unsupported || (opt.launch.cluster_k > conv_max_cluster_k && code == StatusCode::invalid_argument)));
    opt.launch.cluster_k = 2;
    opt.launch.split_k = 2;
    CHECK(conv2d(d, o, nullptr, opt).code() == StatusCode::invalid_argument);
  }
  KTCONV_CUDA(cudaDeviceSynchronize());
  CHECK(refused > 0);
  CHECK(y.download() == y.image);
}

// A small target for compute-sanitizer (racecheck, synccheck: the cluster barriers and the distributed
// shared-memory exchange; memcheck: the split partials): each split-capable instance once with
// cluster_k 2 (where it has it; also in multicast pairs, @ck2@mc2), @split3p and @split3s, on one problem,
// checked against float64.
//   compute-sanitizer --tool racecheck build-gpu/ktune_gpu_tests -tc='conv2d: split-K sanitizer target'
TEST_CASE("conv2d: split-K sanitizer target") {
  const ConvCase c(P(2, 9, 11, 72, 40, 3, 3, 1, 1), 7200);
  int runs = 0;
  for (const auto& e : conv_table().entries()) {
    if (!conv_supports_split_k(e.config) || !runs_here(e) || e.config.operand() != c.d.type || !accepts(e, c.d, c)) continue;
    std::vector<ConvLaunchOptions> launches;
    ConvLaunchOptions lo;
    if (conv_cluster_k_limit(e.config) >= 2) {
      lo.cluster_k = 2;
      launches.push_back(lo);
      if (conv_multicast_limit(e.config) >= 2) {  // pairs that split K together: a cluster of 4
        lo.multicast = 2;
        launches.push_back(lo);
      }
    }
    if (is_sm90_iterator(e.config.iterator)) {
      lo = ConvLaunchOptions{};
      lo.multicast = 2;  // multicast pairs: the peer's TMA writes into this CTA's ring
      launches.push_back(lo);
      if (conv_multicast_limit(e.config) >= 8) {  // and clusters of 8: seven peers do
        lo.multicast = 8;
        launches.push_back(lo);
      }
    }
    lo = ConvLaunchOptions{};
    lo.split_k = 3;
    lo.split_mode = SplitKMode::parallel;
    launches.push_back(lo);
    if (supports_serial_split_k(e.config.gemm)) {
      lo.split_mode = SplitKMode::serial;
      launches.push_back(lo);
    }
    for (const ConvLaunchOptions& l : launches) {
      const Check chk = run_and_check(c, bias_activation(Activation::relu), DType::f16, e.name.data(), 7201, nullptr, false, l);
      INFO(conv_tactic_name(e.name, l) << ": " << chk.summary());
      CHECK(chk.ok(tolerance(DType::f16)));
      ++runs;
    }
  }
  if (runs == 0) MESSAGE("no split-capable conv instance runs on this device: skipped");
}

// Multicast (ConvLaunchOptions::multicast) on both Hopper routes: clusters of 2 CTAs on adjacent tiles,
// each loading half of the box they share (tma_im2col: half the filters or half the pixels of the im2col
// box; gemm1x1: the GEMM's pairs), and on tma_im2col clusters of 4 and 8 (a quarter, an eighth each) and
// multicast groups that split K (@ck2@mc2, @ck2@mc4, @ck4@mc2). Problems with an odd number of tiles along the paired
// dimension (the partner of the last tile computes nothing), a single tile there, more pairs than fit
// (the persistent walk), channel blocks partly past C, and every epilogue kind in turn, vs float64.
TEST_CASE("conv2d: multicast pairs on the Hopper routes vs float64") {
  // (The swap-AB gemm1x1 instances run no clusters: they are among the refusals below.)
  const std::vector<const ConvKernelEntry*> hopper =
      entries_here([](const ConvKernelEntry& e) { return is_sm90_iterator(e.config.iterator) && !is_swap_ab(e.config.gemm); });
  if (hopper.empty()) {
    MESSAGE("no Hopper conv instance runs on this device (cc 9.0 needed): skipped");
    return;
  }
  const std::vector<Named> mc_problems = {
      {"3x3 pad 1, C=72 (partial channel block), K=136 (odd tile columns)", P(2, 9, 11, 72, 136, 3, 3, 1, 1)},
      {"1x1, C=64, K=64: one tile column", P(3, 10, 10, 64, 64, 1, 1, 0, 0)},
      {"1x1, 12800 pixels, K=320: more pairs than fit", P(8, 40, 40, 64, 320, 1, 1, 0, 0)},
      {"7x7 map 3x3, C=512 (72 k-tiles), K=200", P(1, 7, 7, 512, 200, 3, 3, 1, 1)},
      {"3x3 stride 2, C=16, K=24, 5 images (odd tile rows)", P(5, 11, 10, 16, 24, 3, 3, 1, 1, 2, 2)},
  };
  ConvLaunchOptions pairs;
  pairs.multicast = 2;
  std::vector<InstanceLaunches> table;
  for (const ConvKernelEntry* entry : hopper) {
    InstanceLaunches il{entry, {pairs}};
    for (int mc = 4; mc <= conv_multicast_limit(entry->config); mc *= 2) {  // tma_im2col: clusters of 4 and 8
      ConvLaunchOptions lo;
      lo.multicast = mc;
      il.launches.push_back(lo);
    }
    // tma_im2col: multicast groups that split K (clusters of mc × ck: 2 × 2, 4 × 2, 2 × 4), rank r = k-slice ·
    // mc + tile; each group reduces its slices through distributed shared memory.
    for (const auto [mc, ck] : {std::pair{2, 2}, std::pair{4, 2}, std::pair{2, 4}}) {
      if (mc > conv_multicast_limit(entry->config) || ck > conv_cluster_k_limit(entry->config)) continue;
      ConvLaunchOptions lo;
      lo.multicast = mc;
      lo.cluster_k = ck;
      il.launches.push_back(lo);
    }
    table.push_back(il);
  }
  const int runs = check_rotating(mc_problems, table, epilogues(), 7300, true).all;
  MESSAGE(runs << " multicast runs");
  CHECK(runs > 0);
  // Residual aliasing y, and the refusals: with split_k or in clusters over 8 CTAs (2 × cluster_k 8), on
  // mma.sync instances.
  ConvLaunchOptions with_split = pairs, with_ck = pairs;
  with_split.split_k = 2;
  with_ck.cluster_k = 8;
  check_residual_and_refusals(ConvCase(P(2, 9, 11, 72, 136, 3, 3, 1, 1), 7390), pairs, hopper, {with_split, with_ck}, 7391);
  // Clusters of 8: the tma_im2col instances take them (residual aliasing y), the gemm1x1 route refuses.
  std::vector<const ConvKernelEntry*> eights;
  for (const ConvKernelEntry* entry : hopper)
    if (conv_multicast_limit(entry->config) >= 8) eights.push_back(entry);
  CHECK(!eights.empty());
  ConvLaunchOptions eight;
  eight.multicast = 8;
  ConvLaunchOptions eight_split = eight;
  eight_split.split_k = 2;
  check_residual_and_refusals(ConvCase(P(2, 9, 11, 72, 136, 3, 3, 1, 1), 7392), eight, eights, {eight_split}, 7393);
}

// Persistent grid on the mma.sync 128-row tiles (ConvLaunchOptions::persistent, conv2d_fprop_persistent_kernel):
// every such instance × 1 CTA per multiprocessor and the most that fit (conv_max_persistent: capped at the
// occupancy), on problems with more tiles than resident CTAs (a CTA runs several: the next tile's prologue
// goes out under the register epilogue), partial tiles along M and K (the staged epilogue: prologue after it),
// 1 to 18 k-tiles; every epilogue kind in turn into f16/bf16/f32 y and bias + ReLU into the operand type, vs
// float64 with poisoned y and guard bands. Then: bit-equal to the one-tile kernel (the same per-tile sums),
// residual aliasing y, and the refusals (other instances; with split_k) write nothing.
TEST_CASE("conv2d: persistent grid on the mma.sync 128-row tiles vs float64 and the one-tile kernel") {
  const std::vector<const ConvKernelEntry*> pk =
      entries_here([](const ConvKernelEntry& e) { return conv_supports_persistent(e.config); });
  REQUIRE(!pk.empty());
  const std::vector<Named> pk_problems = {
      {"1x1, 12800 pixels, C=64, K=320 (partial last column of 128x128 / 128x256)", P(8, 40, 40, 64, 320, 1, 1, 0, 0)},
      {"3x3 pad 1, 4608 pixels, C=32, K=200", P(8, 24, 24, 32, 200, 3, 3, 1, 1)},
      {"3x3 pad 1, 6400 pixels, C=64 (18 k-tiles), K=136", P(16, 20, 20, 64, 136, 3, 3, 1, 1)},
      {"1x1 stride 2, 1633 pixels (partial last row), C=16, K=2056", P(1, 46, 142, 16, 2056, 1, 1, 0, 0, 2, 2)},
  };
  std::vector<InstanceLaunches> table;
  for (const ConvKernelEntry* entry : pk) {
    std::vector<ConvLaunchOptions> launches;
    for (int n : {1, conv_max_persistent}) {
      ConvLaunchOptions lo;
      lo.persistent = n;
      launches.push_back(lo);
    }
    table.push_back({entry, launches});
  }
  const int runs = check_rotating(pk_problems, table, epilogues(), 7400, true).all;
  MESSAGE(runs << " persistent runs");
  CHECK(runs > 0);

  // Bit-equal to the one-tile kernel (bias + ReLU into the operand type: the register epilogue).
  const ConvCase c(P(8, 40, 40, 64, 320, 1, 1, 0, 0), 7490);
  Conv2dDesc d = c.d;
  d.epilogue = bias_activation(Activation::relu);
  Rng rng(7491);
  Tensor bias = random_tensor(d.type, d.k, rng);
  const std::int64_t y_elems = conv_shape(d).y_elems;
  for (const ConvKernelEntry* entry : pk) {
    if (entry->config.operand() != d.type) continue;
    Tensor y1(d.type, y_elems), y2(d.type, y_elems);
    Conv2dOperands o;
    o.x = c.x.data();
    o.w = c.w.data();
    o.bias = bias.data();
    ConvOptions opt;
    opt.instance = entry->name.data();
    o.y = y1.data();
    REQUIRE(conv2d(d, o, nullptr, opt).ok());
    opt.launch.persistent = 1;
    o.y = y2.data();
    REQUIRE(conv2d(d, o, nullptr, opt).ok());
    KTCONV_CUDA(cudaDeviceSynchronize());
    INFO(entry->name << "@pk1 vs the one-tile launch");
    CHECK(y1.download() == y2.download());
  }

  // Residual aliasing y; refusals write nothing.
  ConvLaunchOptions pk2;
  pk2.persistent = 2;
  ConvLaunchOptions with_split = pk2;
  with_split.split_k = 2;
  with_split.split_mode = SplitKMode::parallel;
  check_residual_and_refusals(c, pk2, pk, {with_split}, 7492);
}
