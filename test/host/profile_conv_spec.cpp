// ktune-profile's conv2d problems: the --conv SPEC (tools/common/conv_presets.hpp: parse_conv_spec, its
// text and name), the shapes file's conv lines (tools/common/shapes_file.hpp), the built-in conv
// problems, and the float64 CPU reference that checks cuDNN (tools/common/conv_reference.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/conv_reference.hpp"
#include "common/shapes_file.hpp"

using namespace ktune;
using ktune::tools::ConvShapeProblem;

namespace {

Conv2dDesc spec_ok(std::string_view text, DType t = DType::f16, EpilogueSpec e = bias_activation(Activation::relu)) {
  Conv2dDesc d;
  std::string why;
  const bool ok = tools::parse_conv_spec(text, t, e, d, why);
  INFO("spec: ", text, " error: ", why);
  REQUIRE(ok);
  CHECK(why.empty());
  return d;
}

std::string spec_error(std::string_view text) {
  Conv2dDesc d;
  d.n = 77;  // untouched on failure
  std::string why;
  const bool ok = tools::parse_conv_spec(text, DType::f16, EpilogueSpec{}, d, why);
  INFO("spec: ", text);
  CHECK_FALSE(ok);
  CHECK_FALSE(why.empty());
  CHECK(d.n == 77);
  return why;
}

ConvShapeProblem conv_line_ok(std::string_view line) {
  ConvShapeProblem p;
  std::string why;
  const bool ok = tools::parse_conv_shape_line(line, p, why);
  INFO("line: ", line, " error: ", why);
  REQUIRE(ok);
  return p;
}

std::string conv_line_error(std::string_view line) {
  ConvShapeProblem p;
  std::string why;
  const bool ok = tools::parse_conv_shape_line(line, p, why);
  INFO("line: ", line);
  CHECK_FALSE(ok);
  CHECK_FALSE(why.empty());
  return why;
}

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("conv spec: NxHxWxC,KxRxS with the defaults") {
  const Conv2dDesc d = spec_ok("32x56x56x64,64x3x3");
  CHECK(d.n == 32);
  CHECK(d.h == 56);
  CHECK(d.w == 56);
  CHECK(d.c == 64);
  CHECK(d.k == 64);
  CHECK(d.r == 3);
  CHECK(d.s == 3);
  CHECK(d.stride_h == 1);
  CHECK(d.stride_w == 1);
  CHECK(d.pad_h == 1);  // 'same' for an odd filter
  CHECK(d.pad_w == 1);
  CHECK(d.dil_h == 1);
  CHECK(d.dil_w == 1);
  CHECK(d.groups == 1);
  CHECK(d.type == DType::f16);
  CHECK(d.out_type == DType::f16);
  CHECK(d.epilogue.bias);
  CHECK(d.epilogue.activation == Activation::relu);
  CHECK(tools::conv_spec_text(d) == "32x56x56x64,64x3x3");
  CHECK(tools::conv_problem_name(d) == "conv f16 32x56x56x64,64x3x3 bias_relu");
}

TEST_CASE("conv spec: stride, pad and dilation, one value or HxW, any order") {
  const Conv2dDesc stem = spec_ok("32x224x224x4,64x7x7,stride=2", DType::bf16, EpilogueSpec{});
  CHECK(stem.stride_h == 2);
  CHECK(stem.stride_w == 2);
  CHECK(stem.pad_h == 3);
  CHECK(stem.pad_w == 3);
  CHECK(stem.type == DType::bf16);
  CHECK(stem.out_type == DType::bf16);
  CHECK_FALSE(stem.epilogue.bias);
  CHECK(tools::conv_problem_name(stem) == "conv bf16 32x224x224x4,64x7x7,stride=2 identity");
  CHECK(conv_shape(stem).p == 112);

  const Conv2dDesc d = spec_ok("2x17x23x8,16x3x5,dil=2x1,pad=0x2,stride=1x3");
  CHECK(d.stride_h == 1);
  CHECK(d.stride_w == 3);
  CHECK(d.pad_h == 0);
  CHECK(d.pad_w == 2);
  CHECK(d.dil_h == 2);
  CHECK(d.dil_w == 1);
  CHECK(tools::conv_spec_text(d) == "2x17x23x8,16x3x5,stride=1x3,pad=0x2,dil=2x1");

  // The default padding follows the dilation: dil * floor(R/2).
  const Conv2dDesc dil = spec_ok("1x20x20x8,8x3x3,dil=2");
  CHECK(dil.pad_h == 2);
  CHECK(dil.pad_w == 2);
  CHECK(tools::conv_spec_text(dil) == "1x20x20x8,8x3x3,dil=2");  // default padding: not spelled out
  const Conv2dDesc pad0 = spec_ok("1x20x20x8,8x3x3,pad=0");
  CHECK(tools::conv_spec_text(pad0) == "1x20x20x8,8x3x3,pad=0");
}

TEST_CASE("conv spec: the text round-trips") {
  for (const char* text : {"32x56x56x64,64x3x3", "1x7x9x3,5x2x4,stride=2x1,pad=1x0,dil=1x2", "4x224x224x4,64x7x7,stride=2",
                           "8x14x14x1024,256x1x1", "3x11x13x24,40x5x5,pad=0"}) {
    const Conv2dDesc d = spec_ok(text);
    CHECK(tools::conv_spec_text(d) == text);
    const Conv2dDesc again = spec_ok(tools::conv_spec_text(d));
    CHECK(tools::conv_problem_name(again) == tools::conv_problem_name(d));
  }
}

TEST_CASE("conv spec: the shapes-file line form N H W C K R S [stride [pad]]") {
  const Conv2dDesc a = spec_ok("32 56 56 64 64 3 3");
  CHECK(tools::conv_spec_text(a) == "32x56x56x64,64x3x3");
  const Conv2dDesc b = spec_ok("  32 224 224 4 64 7 7 2  ");
  CHECK(tools::conv_spec_text(b) == "32x224x224x4,64x7x7,stride=2");
  const Conv2dDesc c = spec_ok("1 9 9 8 8 3 3 1 0");
  CHECK(c.pad_h == 0);
  CHECK(c.pad_w == 0);
  CHECK(has(spec_error("32 56 56 64 64 3"), "7 to 9 numbers"));
  CHECK(has(spec_error("32 56 56 64 64 3 3 1 1 1"), "7 to 9 numbers"));
  CHECK(has(spec_error("32 56 56 64 64 3 3 f16"), "'f16' is not a size"));
}

TEST_CASE("conv spec: bad input says what is wrong") {
  CHECK(has(spec_error(""), "expected"));
  CHECK(has(spec_error("32x56x56x64"), "e.g. 32x56x56x64,64x3x3"));
  CHECK(has(spec_error("32x56x56,64x3x3"), "expected"));
  CHECK(has(spec_error("32x56x56x64,64x3"), "bad filter '64x3'"));
  CHECK(has(spec_error("32x56x56x64,64x3x3x3"), "bad filter"));
  CHECK(has(spec_error("0x56x56x64,64x3x3"), "expected"));
  CHECK(has(spec_error("32x56x56x64,64x3x3,stride=0"), "bad stride=0"));
  CHECK(has(spec_error("32x56x56x64,64x3x3,dil=0"), "positive"));
  CHECK(has(spec_error("32x56x56x64,64x3x3,pad=-1"), "non-negative"));
  CHECK(has(spec_error("32x56x56x64,64x3x3,pad=1x2x3"), "bad pad"));
  CHECK(has(spec_error("32x56x56x64,64x3x3,stride=2,stride=1"), "stride= given twice"));
  CHECK(has(spec_error("32x56x56x64,64x3x3,groups=2"), "unknown option 'groups=2'"));
  CHECK(has(spec_error("32x56x56x64,64x3x3,stride"), "unknown option"));
  CHECK(has(spec_error("32x56x56x64,64x3x3,"), "unknown option ''"));
  CHECK(has(spec_error("32x56x56x64,64x3x3 extra"), "is not a size"));
  CHECK(has(spec_error("32x56x56x64,64x99999999999x3"), "bad filter"));  // too many digits: no overflow
  // A filter larger than the padded input: an empty output, as validate() says.
  const std::string empty = spec_error("1x4x4x8,8x9x9,pad=0");
  CHECK(has(empty, "conv problem '1x4x4x8,8x9x9,pad=0'"));
  // Sizes validate() refuses (the 32-bit index limits).
  CHECK_FALSE(spec_error("2147483648x2x2x8,8x1x1").empty());
}

TEST_CASE("conv shapes-file lines") {
  const ConvShapeProblem a = conv_line_ok("conv f16 32x56x56x64,64x3x3 bias_relu");
  CHECK(a.desc.c == 64);
  CHECK(a.desc.epilogue.bias);
  CHECK(a.desc.epilogue.activation == Activation::relu);
  CHECK(a.name() == "conv f16 32x56x56x64,64x3x3 bias_relu");
  CHECK(a.key() == tuner::make_conv_key(a.desc, alignment_of(a.desc, tools::placeholder_conv_operands())));
  CHECK(a.key().align_x == 8);
  CHECK(a.flops() == doctest::Approx(2.0 * 32 * 56 * 56 * 64 * 576));

  // Identity by default (as GEMM lines); fields after the sizes in any order; out=.
  const ConvShapeProblem b = conv_line_ok("conv bf16 32x224x224x4,64x7x7 out=f32 stride=2 bias_relu");
  CHECK(b.desc.type == DType::bf16);
  CHECK(b.desc.out_type == DType::f32);
  CHECK(b.desc.stride_h == 2);
  CHECK(b.name() == "conv bf16 32x224x224x4,64x7x7,stride=2 bias_relu out=f32");
  const ConvShapeProblem c = conv_line_ok("conv f16 8x14x14x256,256x3x3");
  CHECK(c.desc.epilogue.tag() == "identity");
  CHECK(c.name() == "conv f16 8x14x14x256,256x3x3 identity");
  // The line form's numbers, as in bench_conv's shapes files.
  const ConvShapeProblem d = conv_line_ok("conv f16 32 56 56 64 64 3 3 1 1 bias_relu");
  CHECK(d.name() == "conv f16 32x56x56x64,64x3x3 bias_relu");
  // Epilogue tags of a conv key: representative values (as the tuner's conv_desc_of).
  const ConvShapeProblem e = conv_line_ok("conv f16 8x14x14x64,64x1x1 alpha_bias_silu_clamp");
  CHECK(e.desc.epilogue.alpha == 1.5f);
  CHECK(e.desc.epilogue.clamp);
  CHECK(e.key() == tuner::make_conv_key(tuner::conv_desc_of(e.key()), e.alignment()));
  // Every name is a line that parses to the same key.
  for (const ConvShapeProblem* p : {&a, &b, &c, &d, &e}) CHECK(conv_line_ok(p->name()).key() == p->key());
  // The alignment class follows the sizes: C = 4 allows 4-element vectors of x.
  CHECK(b.alignment().x == 4);
}

TEST_CASE("conv shapes-file lines: errors") {
  CHECK(has(conv_line_error("conv"), "expected 'conv <f16|bf16>"));
  CHECK(has(conv_line_error("conv f16"), "expected"));
  CHECK(has(conv_line_error("conv f32 32x56x56x64,64x3x3"), "unknown conv precision 'f32'"));
  CHECK(has(conv_line_error("conv tf32 32x56x56x64,64x3x3"), "unknown conv precision"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64"), "expected"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3 bias_relu relu"), "one epilogue tag per line"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3 ab_relu"), "unknown conv epilogue 'ab_relu'"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3 res"), "unknown conv epilogue"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3 relu_bias"), "unknown conv epilogue"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3 out=f64"), "unknown output type 'f64'"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3 out=f32 out=f16"), "out= given twice"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3 align=8/8/8"), "align= is not supported on conv lines"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3 layout=tn"), "unknown option 'layout=tn'"));
  CHECK(has(conv_line_error("conv f16 32x56x56x64,64x3x3,stride=2 stride=1"), "stride= given twice"));
  CHECK(has(conv_line_error("conv f16 32 56 56 64 64 3 3 stride=2"), "line form"));
  CHECK(has(conv_line_error("conv f16 32 56 56 64 64 3"), "7 to 9 numbers"));
}

TEST_CASE("shapes file: GEMM and conv lines together, every bad line, duplicates by key") {
  const std::string text =
      "# mixed\n"
      "bf16 tn 4096x4096x4096\n"
      "conv f16 32x56x56x64,64x3x3 bias_relu   # a ResNet layer\n"
      "conv f16 32 56 56 64 64 3 3 1 1 bias_relu\n"   // line 4: the same key as line 3
      "conv f16 32x56x56x64,64x3x3 identity\n"        // another epilogue: another key
      "conv f32 32x56x56x64,64x3x3\n"                 // line 6: bad
      "conv f16 32x56x56x64,64x3\n"                   // line 7: bad
      "f16 nn 64x64x64\n";
  const tools::ShapesFile f = tools::parse_shapes_text(text, "mixed.txt");
  REQUIRE(f.errors.size() == 2);
  CHECK(f.bad_lines == 2);
  CHECK(has(f.errors[0], "mixed.txt:6: unknown conv precision"));
  CHECK(has(f.errors[1], "mixed.txt:7: bad filter"));
  REQUIRE(f.problems.size() == 2);
  REQUIRE(f.convs.size() == 2);
  CHECK(f.convs[0].line == 3);
  CHECK(f.convs[1].line == 5);
  REQUIRE(f.warnings.size() == 1);
  CHECK(has(f.warnings[0], "mixed.txt:4: conv f16 32x56x56x64,64x3x3 bias_relu has the same tuning key as line 3"));
  CHECK_FALSE(f.ok());

  const tools::ShapesFile only_conv = tools::parse_shapes_text("conv bf16 8x14x14x256,256x3x3 bias_relu\n", "c.txt");
  CHECK(only_conv.ok());
  CHECK(only_conv.problems.empty());
  CHECK(only_conv.convs.size() == 1);

  const tools::ShapesFile none = tools::parse_shapes_text("# nothing\n\n", "e.txt");
  REQUIRE(none.errors.size() == 1);
  CHECK(has(none.errors[0], "conv f16 32x56x56x64,64x3x3 bias_relu"));
}

TEST_CASE("built-in conv problems: three valid ResNet-50 layers, N = 32, f16, bias + ReLU") {
  const std::vector<Conv2dDesc> probs = tools::default_conv_problems();
  REQUIRE(probs.size() == 3);
  std::vector<std::string> names;
  for (const Conv2dDesc& d : probs) {
    CHECK(validate(d, tools::placeholder_conv_operands()).ok());
    CHECK(d.n == 32);
    CHECK(d.type == DType::f16);
    CHECK(d.epilogue.tag() == "bias_relu");
    names.push_back(tools::conv_problem_name(d));
    // Each name is a shapes-file line for the same key.
    ConvShapeProblem p;
    std::string why;
    REQUIRE(tools::parse_conv_shape_line(names.back(), p, why));
    CHECK(p.key() == tuner::make_conv_key(d, alignment_of(d, tools::placeholder_conv_operands())));
  }
  CHECK(names[0] == "conv f16 32x56x56x256,64x1x1 bias_relu");
  CHECK(names[1] == "conv f16 32x28x28x128,128x3x3 bias_relu");
  CHECK(names[2] == "conv f16 32x224x224x4,64x7x7,stride=2 bias_relu");
}

TEST_CASE("f16 and bf16 bit patterns to float") {
  CHECK(tools::f16_bits_to_float(0x3c00) == 1.0f);
  CHECK(tools::f16_bits_to_float(0xc000) == -2.0f);
  CHECK(tools::f16_bits_to_float(0x3555) == doctest::Approx(0.333251953125));
  CHECK(tools::f16_bits_to_float(0x7bff) == 65504.0f);
  CHECK(tools::f16_bits_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(tools::f16_bits_to_float(0x8000) == 0.0f);
  CHECK(std::signbit(tools::f16_bits_to_float(0x8000)));
  CHECK(std::isinf(tools::f16_bits_to_float(0x7c00)));
  CHECK(std::isnan(tools::f16_bits_to_float(0xffff)));  // the poison pattern
  CHECK(tools::bf16_bits_to_float(0x3f80) == 1.0f);
  CHECK(tools::bf16_bits_to_float(0xc040) == -3.0f);
  CHECK(std::isnan(tools::bf16_bits_to_float(0xffff)));
  const std::uint16_t raw[2] = {0x3c00, 0xbc00};
  const std::vector<float> v = tools::to_float_vector(DType::f16, raw, 2);
  CHECK(v == std::vector<float>{1.0f, -1.0f});
}

TEST_CASE("float64 CPU conv reference: a hand-checked problem with padding, stride and dilation") {
  // x: 1x3x3x2, w: 2x2x2x2 (K=2, R=S=2), stride 2, pad 1, dil 1 → P = Q = 2.
  Conv2dDesc d = tools::conv_problem(1, 3, 3, 2, 2, 2, 2, 2, 1, 1, DType::f16);
  d.epilogue = bias_activation(Activation::relu);
  std::vector<float> x(18), w(16);
  for (int i = 0; i < 18; ++i) x[i] = float(i + 1);            // x[h][w][c] = (h*3 + w)*2 + c + 1
  for (int i = 0; i < 16; ++i) w[i] = (i % 3 == 0) ? 1.0f : -0.5f;
  const float bias[2] = {0.25f, -100.0f};
  const ConvShape sh = conv_shape(d);
  REQUIRE(sh.p == 2);
  REQUIRE(sh.q == 2);
  std::vector<double> out(static_cast<std::size_t>(sh.m * d.k));
  tools::conv_reference(d, x.data(), w.data(), bias, 0, sh.m, out.data());
  // Direct evaluation of the definition for every output.
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 2; ++q)
      for (int k = 0; k < 2; ++k) {
        double acc = 0;
        for (int r = 0; r < 2; ++r)
          for (int s = 0; s < 2; ++s) {
            const int h = p * 2 - 1 + r, wi = q * 2 - 1 + s;
            if (h < 0 || h >= 3 || wi < 0 || wi >= 3) continue;
            for (int c = 0; c < 2; ++c) acc += x[(h * 3 + wi) * 2 + c] * w[((k * 2 + r) * 2 + s) * 2 + c];
          }
        const double want = std::max(0.0, acc + bias[k]);
        CHECK(out[(p * 2 + q) * 2 + k] == doctest::Approx(want));
      }
  CHECK(out[1] == 0.0);  // channel 1's bias of -100 is cut by ReLU
  // Output pixel (0,0), channel 0 sees only x[0][0] (padding elsewhere): 1·w[0,1,1,0] + 2·w[0,1,1,1].
  CHECK(out[0] == doctest::Approx(1.0 * w[6] + 2.0 * w[7] + 0.25));

  // A sub-range gives the same values as the whole.
  std::vector<double> part(static_cast<std::size_t>(2 * d.k));
  tools::conv_reference(d, x.data(), w.data(), bias, 1, 3, part.data());
  for (int i = 0; i < 4; ++i) CHECK(part[i] == out[2 + i]);

  // Identity epilogue: no bias, no activation.
  d.epilogue = EpilogueSpec{};
  tools::conv_reference(d, x.data(), w.data(), nullptr, 0, 1, part.data());
  CHECK(part[0] == doctest::Approx(1.0 * w[6] + 2.0 * w[7]));
}

TEST_CASE("CPU reference pixel blocks: all when few, first/middle/last blocks when many") {
  CHECK(tools::conv_check_blocks(10) == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 10}});
  CHECK(tools::conv_check_blocks(3072) == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 3072}});
  const auto b = tools::conv_check_blocks(100352);
  REQUIRE(b.size() == 3);
  CHECK(b[0] == std::pair<std::int64_t, std::int64_t>{0, 1024});
  CHECK(b[1] == std::pair<std::int64_t, std::int64_t>{49664, 50688});
  CHECK(b[2] == std::pair<std::int64_t, std::int64_t>{99328, 100352});
}
