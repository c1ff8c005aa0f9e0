// GPU tests of the first-layer stem conv family (conv/stem.hpp, kernel/stem.cuh): every stem instance,
// run by name, against a float64 CPU reference on small stems (C = 3 and 4, K = 64 and K < 64, odd H and
// W, tiles spanning several output rows from any column, the last tile of an image partial, padding
// and stride corners, filters 1x1 to 8x8, dilation in H, images smaller than the filter, more tiles than
// resident CTAs) with random non-zero data, NaN-poisoned outputs and guard bands, every epilogue and
// output type; the full ResNet-50 stem (N = 32, 224x224, C = 4 and 3) against the few-channels
// instances; the reasons a stem instance gives for problems it cannot run; no spills.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "conv_problem.hpp"
#include "gpu/conv_util.cuh"

using namespace ktconv;

namespace {

using ktune::test::conv_problem;
using ktune::test::NamedConvProblem;

// The ResNet-50 stem's filter (7x7, stride 2, pad 3, K = 64) on n images of h x w with c channels.
Conv2dDesc resnet_stem(int n, int h, int w, int c) { return conv_problem(n, h, w, c, 64, 7, 7, 3, 3, 2, 2); }

// Problem d for stem instance e: its channels and operand type.
Conv2dDesc for_instance(Conv2dDesc d, const ConvKernelEntry& e) {
  d.c = e.config.channels;
  d.type = e.config.operand();
  return d;
}

// (C is set per instance.) conv_problem's arguments: N, H, W, C, K, R, S, pad_h, pad_w, stride_h,
// stride_w, dil_h, dil_w.
const std::vector<NamedConvProblem>& stem_problems() {
  static const std::vector<NamedConvProblem> v = {
      {"7x7/2 pad 3, odd 17x23, K=64", resnet_stem(2, 17, 23, 4)},
      {"7x7/2 pad 3, 40x50: 2 tiles per image, rows spanned from column 6", resnet_stem(3, 40, 50, 4)},
      {"7x7/2 pad 3, K=13 (odd, partial epilogue)", conv_problem(2, 17, 19, 4, 13, 7, 7, 3, 3, 2, 2)},
      {"7x7/2 pad 3, K=40", conv_problem(1, 21, 21, 4, 40, 7, 7, 3, 3, 2, 2)},
      {"3x3/2 pad 1, K=64", conv_problem(2, 15, 16, 4, 64, 3, 3, 1, 1, 2, 2)},
      {"5x5 stride 1x2, no padding", conv_problem(2, 13, 18, 4, 64, 5, 5, 0, 0, 1, 2)},
      {"8x8/2 pad 0/3 (S = 8: no masked tap)", conv_problem(2, 16, 22, 4, 64, 8, 8, 0, 3, 2, 2)},
      {"1x1 stride 3x2", conv_problem(2, 11, 12, 4, 24, 1, 1, 0, 0, 3, 2)},
      {"2x7, pad 1/5, stride 2, dilation 3 in H", conv_problem(2, 19, 17, 4, 64, 2, 7, 1, 5, 2, 2, 3, 1)},
      {"image 3x3 smaller than the 7x7 filter", resnet_stem(2, 3, 3, 4)},
      {"64x64 image: a tile is 8 whole output rows", resnet_stem(2, 64, 64, 4)},
      {"300 tiny images: more tiles than resident CTAs", resnet_stem(300, 8, 8, 4)},
      {"6x7 filter, asymmetric pad 2/1, stride 3", conv_problem(2, 23, 21, 4, 64, 6, 7, 2, 1, 3, 2)},
      // W a multiple of 8 (C = 3: 16-byte image rows: per-thread raw segments, two row buffers)
      {"7x7/2 pad 3, 41x48: 3 tiles per image, W % 8 = 0", resnet_stem(3, 41, 48, 4)},
      {"5x5 stride 3x2 pad 2, 30x40, K=48, W % 8 = 0", conv_problem(2, 30, 40, 4, 48, 5, 5, 2, 2, 3, 2)},
  };
  return v;
}

std::vector<EpilogueSpec> stem_epilogues() {
  std::vector<EpilogueSpec> v;
  v.push_back(bias_activation(Activation::relu));  // the headline (fast store path)
  v.push_back(bias_activation(Activation::gelu_tanh));
  v.push_back(bias_activation(Activation::silu));
  v.push_back(bias_activation(Activation::gelu_erf));
  v.push_back(EpilogueSpec{});
  EpilogueSpec e;
  e.alpha = 0.5f;
  e.bias = true;
  v.push_back(e);  // alpha + bias, no activation (fp32 staging: alpha != 1)
  v.push_back(bias_activation(Activation::none));  // bias, no activation (register epilogue, identity floor)
  e = EpilogueSpec{};
  e.alpha = 2.0f;
  e.clamp = true;
  e.clamp_lo = -0.5f;
  e.clamp_hi = 0.25f;
  v.push_back(e);  // alpha + clamp (fast path)
  e = EpilogueSpec{};
  e.residual = true;
  e.bias = true;
  e.activation = Activation::relu;
  v.push_back(e);  // bias + residual + relu (general path)
  v.push_back(linear_combination(0.5f, 0.75f));  // beta reads y (general path)
  return v;
}

const DeviceInfo& stem_device() {
  static const DeviceInfo dev = [] {
    DeviceInfo d;
    REQUIRE(current_device(d).ok());
    return d;
  }();
  return dev;
}

std::vector<const ConvKernelEntry*> stem_instances() {
  std::vector<const ConvKernelEntry*> v;
  for (const auto& e : conv_table().entries())
    if (e.config.iterator == ConvIterator::stem && stem_device().cc >= e.config.gemm.arch_cc) v.push_back(&e);
  return v;
}

}  // namespace

TEST_CASE("conv stem: every stem instance on small stems vs float64, every epilogue and output type") {
  const auto stems = stem_instances();
  REQUIRE(stems.size() >= 4);  // f16 and bf16, C = 4 and 3
  const auto eps = stem_epilogues();
  const DType outs[] = {DType::f16, DType::bf16, DType::f32};
  std::uint64_t seed = 7000;
  auto check_run = [&](const ConvKernelEntry& e, const ConvCase& c, const char* what, const EpilogueSpec& ep, DType out) {
    const Check chk = run_and_check(c, ep, out, e.name.data(), seed++);
    Conv2dDesc shown = c.d;
    shown.out_type = out;
    shown.epilogue = ep;
    INFO(e.name << " on " << what << ": " << describe(shown) << ": " << chk.summary());
    CHECK(chk.ok(tolerance(out)));
  };
  for (const ConvKernelEntry* e : stems) {
    for (const NamedConvProblem& p : stem_problems()) {
      const Conv2dDesc d = for_instance(p.d, *e);
      const ConvCase c(d, seed++);
      Conv2dOperands o;
      o.x = c.x.data();
      o.w = c.w.data();
      const Status can = can_implement(*e, d, alignment_of(d, o), &stem_device());
      INFO(e->name << " on " << p.what << ": " << can.to_string());
      REQUIRE(can.ok());
      // bias + ReLU in every output type, then the other epilogues in turn
      for (DType out : outs) check_run(*e, c, p.what, eps[0], out);
      check_run(*e, c, p.what, eps[1 + seed % (eps.size() - 1)], outs[seed % 3]);
    }
    // Every epilogue x output type on one stem shape per instance.
    const ConvCase c(for_instance(resnet_stem(2, 17, 23, 4), *e), seed++);
    for (const EpilogueSpec& ep : eps)
      for (DType out : outs) check_run(*e, c, "the 17x23 stem", ep, out);
  }
}

TEST_CASE("conv stem: x at every 2-byte offset from 16-byte alignment (C < 4: ragged raw-row copies)") {
  for (const ConvKernelEntry* e : stem_instances()) {
    if (e->config.channels == 4) continue;  // C = 4 needs 8-byte aligned x (a reason, tested below)
    for (std::int64_t off : {1, 2, 3, 5, 7}) {
      for (const Conv2dDesc& base : {resnet_stem(2, 17, 23, e->config.channels),
                                     resnet_stem(3, 40, 50, e->config.channels),
                                     resnet_stem(2, 25, 48, e->config.channels),
                                     conv_problem(2, 5, 1, e->config.channels, 64, 3, 3, 1, 1, 1, 2)}) {
        Conv2dDesc d = base;
        d.type = e->config.operand();
        const ConvCase c(d, 50 + off, off);
        const Check chk = run_and_check(c, bias_activation(Activation::relu), d.type, e->name.data(), 60 + off);
        INFO(e->name << " with x " << off << " elements past 16-byte alignment, " << describe(d) << ": " << chk.summary());
        CHECK(chk.ok(tolerance(d.type)));
      }
    }
  }
}

TEST_CASE("conv stem: residual aliasing y, and y not 16-byte aligned") {
  for (const ConvKernelEntry* e : stem_instances()) {
    Conv2dDesc d = resnet_stem(2, 17, 23, e->config.channels);
    d.type = e->config.operand();
    const ConvCase c(d, 31);
    EpilogueSpec ep = bias_activation(Activation::relu);
    ep.residual = true;
    const Check chk = run_and_check(c, ep, d.type, e->name.data(), 32, nullptr, true);
    INFO(e->name << ": " << describe(d) << ": " << chk.summary());
    CHECK(chk.ok(tolerance(d.type)));
  }
  // y 2 bytes past 16-byte alignment: the general store path with scalar stores.
  for (const ConvKernelEntry* e : stem_instances()) {
    Conv2dDesc d = resnet_stem(2, 17, 23, e->config.channels);
    d.type = d.out_type = e->config.operand();
    d.epilogue = bias_activation(Activation::relu);
    const ConvCase c(d, 41);
    Rng rng(42);
    Tensor bias = random_tensor(d.out_type, d.k, rng);
    Tensor y(d.out_type, conv_shape(d).y_elems, 1);
    run_with_bias(d, c.x, c.w, bias, y, e->name);
    const Check chk = check_output(y, reference_epilogue(d, c.acc, nullptr, &bias.vals, nullptr));
    INFO(e->name << " with y misaligned: " << chk.summary());
    CHECK(chk.ok(tolerance(d.out_type)));
  }
}

// Taps >= S read as zero in the A fragments (not only zero weights: 0 x Inf = NaN would spread a
// non-finite pixel to an output whose window ends just before it). S = 7 (only taps 6/7 masked) and
// S = 5 (every k-step masked); the Inf pixel is column 10: tap 7 of output column 3 for the 7x7/2 pad 3
// stem, taps 5..7 of output column 3 for the 5x5/2 pad 2 one. Every output whose window does not cover
// it must match the reference of the finite input.
TEST_CASE("conv stem: a non-finite input pixel reaches only the outputs whose window covers it") {
  for (const ConvKernelEntry* e : stem_instances()) {
    const int ch = e->config.channels;
    for (const Conv2dDesc& base : {resnet_stem(1, 17, 23, ch), conv_problem(1, 15, 21, ch, 64, 5, 5, 2, 2, 2, 2)}) {
      Conv2dDesc d = base;
      d.type = d.out_type = e->config.operand();
      d.epilogue = bias_activation(Activation::relu);
      ConvCase c(d, 1234);  // acc: the finite input's
      constexpr std::int64_t h0 = 8, w0 = 10;
      for (std::int64_t k = 0; k < d.c; ++k) c.x.set((h0 * d.w + w0) * d.c + k, INFINITY);
      c.x.upload();
      const ConvShape s = conv_shape(d);
      Rng rng(1235);
      Tensor bias = random_tensor(d.out_type, d.k, rng);
      Tensor y(d.out_type, s.y_elems);
      run_with_bias(d, c.x, c.w, bias, y, e->name);
      const std::vector<double> ref = reference_epilogue(d, c.acc, nullptr, &bias.vals, nullptr);
      const std::vector<unsigned char> img = y.download();
      auto covers = [&](std::int64_t p, std::int64_t q) {
        bool row = false, col = false;
        for (std::int64_t r = 0; r < d.r; ++r) row |= p * d.stride_h - d.pad_h + r * d.dil_h == h0;
        for (std::int64_t t = 0; t < d.s; ++t) col |= q * d.stride_w - d.pad_w + t * d.dil_w == w0;
        return row && col;
      };
      std::int64_t bad = 0, covered = 0;
      std::string first;
      for (std::int64_t p = 0; p < s.p; ++p)
        for (std::int64_t q = 0; q < s.q; ++q) {
          if (covers(p, q)) {
            ++covered;
            continue;
          }
          for (std::int64_t k = 0; k < d.k; ++k) {
            const std::size_t i = static_cast<std::size_t>((p * s.q + q) * d.k + k);
            const double v = decode(d.out_type, img.data() + (y.first() + i) * 2), r = ref[i];
            if (!(std::fabs(v - r) <= 0.05 * std::max(1.0, std::fabs(r)))) {
              if (first.empty()) first = "y(" + std::to_string(p) + ", " + std::to_string(q) + ", " + std::to_string(k) +
                                         ") = " + std::to_string(v) + ", expected " + std::to_string(r);
              ++bad;
            }
          }
        }
      INFO(e->name << " " << describe(d) << ": " << covered << " outputs cover the Inf pixel; first mismatch: " << first);
      CHECK(covered > 0);
      CHECK(bad == 0);
    }
  }
}

// Small, for compute-sanitizer (racecheck, synccheck; gpu-requests/stem.sh): a grid with second laps
// (300 tiles > 2 CTAs x 132 multiprocessors on an H200) through the fast store path, and a multi-tile
// problem through the general one.
TEST_CASE("conv stem: multi-lap grid, fast and general epilogues (sanitizer workload)") {
  for (const ConvKernelEntry* e : stem_instances()) {
    Conv2dDesc d = resnet_stem(300, 8, 8, e->config.channels);
    d.type = e->config.operand();
    const ConvCase c(d, 80);
    Check chk = run_and_check(c, bias_activation(Activation::relu), d.type, e->name.data(), 81);
    INFO(e->name << " " << describe(d) << ": " << chk.summary());
    CHECK(chk.ok(tolerance(d.type)));
    Conv2dDesc d2 = resnet_stem(3, 40, 50, e->config.channels);
    d2.type = e->config.operand();
    const ConvCase c2(d2, 82);
    EpilogueSpec ep = bias_activation(Activation::silu);
    ep.residual = true;
    chk = run_and_check(c2, ep, DType::f32, e->name.data(), 83);
    INFO(e->name << " " << describe(d2) << " residual, f32 out: " << chk.summary());
    CHECK(chk.ok(tolerance(DType::f32)));
  }
}

TEST_CASE("conv stem: what a stem instance cannot run, and why") {
  for (const ConvKernelEntry* e : stem_instances()) {
    const int ch = e->config.channels;
    auto why = [&](Conv2dDesc d, std::int64_t x_offset_elems = 0) {
      d.type = e->config.operand();
      Conv2dOperands o;
      o.x = reinterpret_cast<const void*>(std::uintptr_t{4096} + 2 * x_offset_elems);
      o.w = reinterpret_cast<const void*>(std::uintptr_t{1 << 20});
      return can_implement(*e, d, alignment_of(d, o), &stem_device());
    };
    CAPTURE(e->name);
    CHECK(why(resnet_stem(2, 17, 23, ch)).ok());
    Status s = why(conv_problem(2, 17, 23, ch + 1, 64, 7, 7, 3, 3, 2, 2));
    CHECK(s.code() == StatusCode::unsupported);
    CHECK(s.message().find("specialized for C = " + std::to_string(ch)) != std::string::npos);
    s = why(conv_problem(2, 17, 23, ch, 64, 7, 7, 3, 3, 2, 1));
    CHECK(s.message().find("stride_w = 2") != std::string::npos);
    s = why(conv_problem(2, 17, 23, ch, 64, 7, 7, 3, 3, 2, 2, 1, 2));
    CHECK(s.message().find("dil_w = 1") != std::string::npos);
    s = why(conv_problem(2, 17, 23, ch, 64, 9, 7, 3, 3, 2, 2));
    CHECK(s.message().find("filters up to 8x8") != std::string::npos);
    s = why(conv_problem(2, 17, 23, ch, 65, 7, 7, 3, 3, 2, 2));
    CHECK(s.message().find("up to 64 output channels") != std::string::npos);
    s = why(conv_problem(1, 8, 40000, ch, 64, 7, 7, 3, 3, 2, 2));  // rows of 20000 output pixels do not fit
    CHECK(s.code() == StatusCode::unsupported);
    CHECK(s.message().find("shared memory") != std::string::npos);
    if (ch == 4) {  // 8-byte pixel copies: x must be 8-byte aligned
      s = why(resnet_stem(2, 17, 23, ch), 1);
      CHECK(s.code() == StatusCode::misaligned);
    }
  }
}

TEST_CASE("conv stem: the ResNet-50 stem at N = 32 (C = 4 and 3) matches the few-channels instances") {
  for (int ch : {4, 3}) {
    Conv2dDesc d = resnet_stem(32, 224, 224, ch);
    d.epilogue = bias_activation(Activation::relu);
    const ConvShape s = conv_shape(d);
    Rng rng(900 + ch);
    Tensor x = random_tensor(d.type, s.x_elems, rng);
    Tensor w = random_tensor(d.type, s.w_elems, rng);
    Tensor bias = random_tensor(d.out_type, d.k, rng);
    const ConvKernelEntry* few = nullptr;
    for (const auto& e : conv_table().entries())
      if (e.config.iterator == ConvIterator::few_channels && e.config.channels == ch && e.config.operand() == d.type) few = &e;
    REQUIRE(few != nullptr);
    auto run = [&](const ConvKernelEntry& e, Tensor& y) { run_with_bias(d, x, w, bias, y, e.name); };
    Tensor y_ref(d.out_type, s.y_elems);
    run(*few, y_ref);
    const std::vector<unsigned char> ref_img = y_ref.download();
    std::vector<double> ref(static_cast<std::size_t>(s.y_elems));
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = decode(d.out_type, ref_img.data() + (y_ref.first() + i) * 2);
    for (const ConvKernelEntry* e : stem_instances()) {
      if (e->config.channels != ch || e->config.operand() != d.type) continue;
      Tensor y(d.out_type, s.y_elems);
      run(*e, y);
      const Check chk = check_output(y, ref);
      INFO(e->name << " vs " << few->name << " on the N=32 224x224 C=" << ch << " stem: " << chk.summary());
      CHECK(chk.ok(tolerance(d.out_type)));
      CHECK(chk.err < 2e-3);  // both accumulate in fp32: only the f16 rounding of y differs
    }
  }
}

TEST_CASE("conv stem: the heuristic picks the stem for the ResNet-50 first layer") {
  for (int ch : {4, 3}) {
    Conv2dDesc d = resnet_stem(32, 224, 224, ch);
    d.epilogue = bias_activation(Activation::relu);
    Conv2dOperands o;
    o.x = reinterpret_cast<const void*>(std::uintptr_t{4096});
    o.w = reinterpret_cast<const void*>(std::uintptr_t{1 << 24});
    o.y = reinterpret_cast<void*>(std::uintptr_t{1} << 32);
    o.bias = reinterpret_cast<const void*>(std::uintptr_t{1 << 20});
    const ConvKernelEntry* e = nullptr;
    ConvOptions opt;
    opt.heuristic = true;
    REQUIRE(select_conv(d, o, conv_table(), stem_device(), opt, e).ok());
    CHECK(e->config.iterator == ConvIterator::stem);
    CHECK(e->config.channels == ch);
  }
}

TEST_CASE("conv stem: no spills, no local memory") {
  for (const ConvKernelEntry* e : stem_instances()) {
    cudaFuncAttributes a{};
    KTCONV_CUDA(e->attributes(&a));
    INFO(e->name << ": " << a.numRegs << " registers, " << a.localSizeBytes << " B local");
    CHECK(a.localSizeBytes == 0);
    CHECK(a.maxThreadsPerBlock >= e->config.gemm.threads());
  }
}
