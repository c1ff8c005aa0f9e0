// ktune-profile's problem lines (tools/common/shapes_file.hpp): the `--tune` shapes file and the
// `--explain` problem — fields, defaults, epilogue tags, out= and align=, the description and tuning
// key each line stands for, and an error message with the line number for every kind of bad line.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "common/shapes_file.hpp"

using namespace ktune;
using ktune::tools::ShapeProblem;
using ktune::tools::ShapesFile;

namespace {

ShapeProblem parse_ok(std::string_view line) {
  ShapeProblem p;
  std::string why;
  const bool ok = tools::parse_shape_line(line, p, why);
  INFO("line: ", line, " error: ", why);
  REQUIRE(ok);
  return p;
}

std::string parse_error(std::string_view line) {
  ShapeProblem p;
  std::string why;
  const bool ok = tools::parse_shape_line(line, p, why);
  INFO("line: ", line);
  CHECK_FALSE(ok);
  CHECK_FALSE(why.empty());
  return why;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("shapes: the issue's example line") {
  const ShapeProblem p = parse_ok("bf16 tn 4096x4096x4096");
  CHECK(p.precision == tools::Precision::bf16);
  CHECK(p.a_layout == Layout::row);
  CHECK(p.b_layout == Layout::col);
  CHECK(p.m == 4096);
  CHECK(p.n == 4096);
  CHECK(p.k == 4096);
  CHECK(p.epilogue_name() == "identity");
  CHECK(p.output_type() == DType::bf16);
  CHECK_FALSE(p.align.has_value());

  const GemmDesc d = p.desc();
  CHECK(d.ab_type == DType::bf16);
  CHECK(d.d_type == DType::bf16);
  CHECK(d.compute == Compute::f32);
  CHECK(d.lda == 4096);
  CHECK(d.ldb == 4096);
  CHECK(d.ldd == 4096);
  CHECK(d.epilogue.tag() == "identity");

  const GemmAlignment al = p.alignment();
  CHECK(al.a == 8);
  CHECK(al.b == 8);
  CHECK(al.d == 8);

  const tuner::ProblemKey k = p.key();
  CHECK(k.math == MathOp::mma_bf16);
  CHECK(k.align_a == 8);
  CHECK(tuner::to_string(k) == "gemm bf16->bf16 mma_bf16 tn identity m=4096 n=4096 k=4096 al=8/8/8");
  CHECK(p.name() == "bf16 tn 4096x4096x4096");
}

TEST_CASE("shapes: precisions, layouts, separators and whitespace") {
  CHECK(parse_ok("f16 nn 1x2x3").operand_type() == DType::f16);
  CHECK(parse_ok("fp16 nn 1x2x3").operand_type() == DType::f16);
  const ShapeProblem f32 = parse_ok("f32 nt 64x64x64");
  CHECK(f32.desc().compute == Compute::f32);
  CHECK(f32.key().math == MathOp::simt_f32);
  CHECK(f32.a_layout == Layout::col);
  CHECK(f32.b_layout == Layout::row);
  const ShapeProblem tf32 = parse_ok("tf32 tt 64x64x64");
  CHECK(tf32.desc().ab_type == DType::f32);
  CHECK(tf32.desc().compute == Compute::tf32);
  CHECK(tf32.key().math == MathOp::mma_tf32);
  CHECK(tf32.name() == "tf32 tt 64x64x64");

  const ShapeProblem spaced = parse_ok("  \tbf16\t TN   128,256X512 \r");
  CHECK(spaced.m == 128);
  CHECK(spaced.n == 256);
  CHECK(spaced.k == 512);
  CHECK(spaced.name() == "bf16 tn 128x256x512");
  CHECK(parse_ok("bf16 tn 2147483391x1x1").m == tools::max_gemm_dim);
}

TEST_CASE("shapes: epilogue tags give the key's flags and the tuner's representative values") {
  const ShapeProblem br = parse_ok("bf16 tn 4096x11008x4096 bias_relu");
  CHECK(br.desc().epilogue.bias);
  CHECK(br.desc().epilogue.activation == Activation::relu);
  CHECK(br.epilogue_name() == "bias_relu");
  CHECK(br.name() == "bf16 tn 4096x11008x4096 bias_relu");
  const ShapeProblem ab = parse_ok("f16 tn 256x256x256 ab");
  CHECK(ab.desc().epilogue.alpha == 1.5f);
  CHECK(ab.desc().epilogue.beta == 0.5f);

  // Every tag: same key flags as EpilogueSpec::tag(), and the epilogue tuner::desc_of would build.
  for (const char* tag : {"identity", "alpha", "ab", "bias", "res", "relu", "gelu_tanh", "gelu_erf", "silu", "clamp", "bias_relu",
                          "ab_bias_res_silu_clamp", "alpha_res_gelu_erf", "bias_clamp"}) {
    CAPTURE(tag);
    const ShapeProblem p = parse_ok(std::string("f16 tn 128x128x128 ") + tag);
    const GemmDesc d = p.desc();
    CHECK(d.epilogue.tag() == tag);
    const tuner::ProblemKey k = p.key();
    CHECK(tuner::epilogue_tag(k.epi_flags, k.activation) == tag);
    const GemmDesc back = tuner::desc_of(k);
    CHECK(back.epilogue.alpha == d.epilogue.alpha);
    CHECK(back.epilogue.beta == d.epilogue.beta);
    CHECK(back.epilogue.bias == d.epilogue.bias);
    CHECK(back.epilogue.residual == d.epilogue.residual);
    CHECK(back.epilogue.clamp == d.epilogue.clamp);
    CHECK(back.epilogue.clamp_lo == d.epilogue.clamp_lo);
    CHECK(back.epilogue.clamp_hi == d.epilogue.clamp_hi);
    CHECK(back.epilogue.activation == d.epilogue.activation);
    // The canonical name parses back to the same key.
    CHECK(parse_ok(p.name()).key() == k);
  }
}

TEST_CASE("shapes: out= sets the output type; align= sets the alignment class") {
  const ShapeProblem o = parse_ok("bf16 tn 4096x4096x4096 out=f32");
  CHECK(o.desc().d_type == DType::f32);
  CHECK(o.alignment().d == 4);  // 16 bytes of f32
  CHECK(o.key().d_type == DType::f32);
  CHECK(o.name() == "bf16 tn 4096x4096x4096 out=f32");
  CHECK(parse_ok("bf16 tn 64x64x64 out=bf16").name() == "bf16 tn 64x64x64");  // the default is not written

  const ShapeProblem a = parse_ok("bf16 tn 4096x4096x4096 align=2/8/4 bias_relu");
  REQUIRE(a.align.has_value());
  CHECK(a.alignment().a == 2);
  CHECK(a.alignment().b == 8);
  CHECK(a.alignment().d == 4);
  CHECK(a.key().align_a == 2);
  CHECK(a.key().align_d == 4);
  CHECK(a.name() == "bf16 tn 4096x4096x4096 bias_relu align=2/8/4");
  CHECK(parse_ok(a.name()).key() == a.key());
  // Given but equal to the natural class: the same key, not written in the name.
  CHECK(parse_ok("bf16 tn 4096x4096x4096 align=8/8/8").name() == "bf16 tn 4096x4096x4096");
  CHECK(parse_ok("bf16 tn 4096x4096x4096 align=8/8/8").key() == parse_ok("bf16 tn 4096x4096x4096").key());
}

TEST_CASE("shapes: the natural alignment class follows the contiguous extents") {
  // tn: A row-major (K contiguous), B column-major (K contiguous), D row-major (N contiguous).
  const GemmAlignment odd = parse_ok("bf16 tn 4095x4097x4093").alignment();
  CHECK(odd.a == 1);
  CHECK(odd.b == 1);
  CHECK(odd.d == 1);
  const GemmAlignment mixed = parse_ok("f16 tn 4096x4098x4100").alignment();
  CHECK(mixed.a == 4);  // K = 4100 = 4 * 1025
  CHECK(mixed.b == 4);
  CHECK(mixed.d == 2);  // N = 4098
  const GemmAlignment nn = parse_ok("f32 nn 4096x4096x4094").alignment();
  CHECK(nn.a == 4);  // column-major A: M contiguous
  CHECK(nn.b == 2);  // column-major B: K contiguous, 4094 = 2 * 2047
  CHECK(parse_ok("bf16 tn 4095x4097x4093 align=1/1/1").key() == parse_ok("bf16 tn 4095x4097x4093").key());
}

TEST_CASE("shapes: every kind of bad line gets a message that names the problem") {
  CHECK(contains(parse_error(""), "got nothing"));
  CHECK(contains(parse_error("bf16 tn"), "expected '<precision> <layout> <MxNxK>"));
  CHECK(contains(parse_error("bf16 tn"), "got 'bf16 tn'"));
  CHECK(contains(parse_error("bf61 tn 1x1x1"), "unknown precision 'bf61' (f16, bf16, f32, tf32)"));
  CHECK(contains(parse_error("bf16 tx 1x1x1"), "unknown layout 'tx'"));
  CHECK(contains(parse_error("bf16 tnn 1x1x1"), "unknown layout 'tnn'"));
  CHECK(contains(parse_error("bf16 tn 4096x4096"), "bad shape '4096x4096': expected MxNxK"));
  CHECK(contains(parse_error("bf16 tn 0x16x16"), "bad shape '0x16x16'"));
  CHECK(contains(parse_error("bf16 tn 16x-16x16"), "bad shape"));
  CHECK(contains(parse_error("bf16 tn 16x16x16x16"), "bad shape"));
  CHECK(contains(parse_error("bf16 tn 2147483392x1x1"), "at most 2147483391"));
  CHECK(contains(parse_error("bf16 tn 99999999999999999999x1x1"), "bad shape"));
  CHECK(contains(parse_error("bf16 tn 1x1x1 relu_bias"), "unknown epilogue 'relu_bias'"));
  CHECK(contains(parse_error("bf16 tn 1x1x1 relu_bias"), "bias_relu"));  // the grammar is shown
  CHECK(contains(parse_error("bf16 tn 1x1x1 bias_relu silu"), "the epilogue is already 'bias_relu'"));
  CHECK(contains(parse_error("bf16 tn 1x1x1 foo=1"), "unknown option 'foo=1' (out=TYPE, align=A/B/D)"));
  CHECK(contains(parse_error("bf16 tn 1x1x1 out=f64"), "unknown output type 'f64'"));
  CHECK(contains(parse_error("bf16 tn 1x1x1 out=f32 out=f16"), "out= given twice"));
  CHECK(contains(parse_error("bf16 tn 8x8x8 align=8/8/8 align=8/8/8"), "align= given twice"));
  CHECK(contains(parse_error("bf16 tn 8x8x8 align=8/8"), "bad align '8/8'"));
  CHECK(contains(parse_error("bf16 tn 8x8x8 align=a/8/8"), "bad align"));
  CHECK(contains(parse_error("bf16 tn 8x8x8 align=3/8/8"), "not a power of two from 1 to 8"));
  CHECK(contains(parse_error("bf16 tn 16x16x16 align=16/8/8"), "A's vector width 16 is not a power of two from 1 to 8"));
  CHECK(contains(parse_error("f32 tn 16x16x16 align=4/8/4"), "B's vector width 8 is not a power of two from 1 to 4"));
  CHECK(contains(parse_error("bf16 tn 4095x4097x4093 align=2/1/1"),
                 "A of bf16 tn 4095x4097x4093 allows at most 1-element vectors (its contiguous extent 4093 is not a multiple of 2)"));
  CHECK(contains(parse_error("bf16 tn 4096x4098x4096 align=8/8/8"),
                 "D of bf16 tn 4096x4098x4096 allows at most 2-element vectors (its contiguous extent 4098 is not a multiple of 4)"));
  CHECK(contains(parse_error("f16 nt 4095x4096x4096 align=8/8/8"), "A of f16 nt 4095x4096x4096 allows at most 1-element"));
}

TEST_CASE("shapes file: comments, blank lines, CRLF, BOM and line numbers") {
  const std::string text =
      "\xEF\xBB\xBF# offline tuning for the LLM service\n"
      "\n"
      "bf16 tn 4096x4096x4096\r\n"
      "   # indented comment\n"
      "bf16 tn 4096x11008x4096 bias_relu   # MLP up-projection\n"
      "\t\n"
      "f16 nn 4095x4097x4093";  // no final newline
  const ShapesFile f = tools::parse_shapes_text(text, "llm.shapes");
  CHECK(f.errors.empty());
  CHECK(f.warnings.empty());
  CHECK(f.ok());
  REQUIRE(f.problems.size() == 3);
  CHECK(f.problems[0].line == 3);
  CHECK(f.problems[0].name() == "bf16 tn 4096x4096x4096");
  CHECK(f.problems[1].line == 5);
  CHECK(f.problems[1].name() == "bf16 tn 4096x11008x4096 bias_relu");
  CHECK(f.problems[2].line == 7);
  CHECK(f.problems[2].alignment().a == 1);
}

TEST_CASE("shapes file: every bad line is reported with its line number, good lines are still parsed") {
  const std::string text =
      "bf16 tn 4096x4096x4096\n"
      "bf16 tn 4096x4096\n"
      "# fine\n"
      "f16 xx 1x1x1\n"
      "f16 nn 64x64x64 bias_gelu\n";
  const ShapesFile f = tools::parse_shapes_text(text, "s.txt");
  CHECK_FALSE(f.ok());
  CHECK(f.bad_lines == 3);
  REQUIRE(f.errors.size() == 3);
  CHECK(f.errors[0].rfind("s.txt:2: bad shape '4096x4096'", 0) == 0);
  CHECK(f.errors[1].rfind("s.txt:4: unknown layout 'xx'", 0) == 0);
  CHECK(f.errors[2].rfind("s.txt:5: unknown epilogue 'bias_gelu'", 0) == 0);
  REQUIRE(f.problems.size() == 1);
  CHECK(f.problems[0].line == 1);
}

TEST_CASE("shapes file: lines with the same tuning key are tuned once, with a warning") {
  const std::string text =
      "bf16 tn 4096x4096x4096\n"
      "bf16 TN 4096,4096,4096 identity   # same key, other spelling\n"
      "bf16 tn 4096x4096x4096 out=f32    # another output type: another key\n"
      "bf16 tn 4096x4096x4096 align=8/8/8\n"
      "bf16 tn 4096x4096x4096 align=4/8/8\n";
  const ShapesFile f = tools::parse_shapes_text(text, "dup.txt");
  CHECK(f.errors.empty());
  CHECK(f.ok());
  REQUIRE(f.problems.size() == 3);
  CHECK(f.problems[0].line == 1);
  CHECK(f.problems[1].line == 3);
  CHECK(f.problems[2].line == 5);
  REQUIRE(f.warnings.size() == 2);
  CHECK(f.warnings[0].rfind("dup.txt:2: bf16 tn 4096x4096x4096 has the same tuning key as line 1", 0) == 0);
  CHECK(f.warnings[1].rfind("dup.txt:4: ", 0) == 0);
}

TEST_CASE("shapes file: empty, comment-only and binary files are errors") {
  for (const char* text : {"", "\n\n", "# nothing to tune\n   \n# still nothing"}) {
    const ShapesFile f = tools::parse_shapes_text(text, "e.txt");
    CHECK_FALSE(f.ok());
    REQUIRE(f.errors.size() == 1);
    CHECK(contains(f.errors[0], "e.txt: no problem lines"));
    CHECK(f.bad_lines == 0);
  }
  const ShapesFile bin = tools::parse_shapes_text(std::string("bf16 tn 1x1x1\n\x7f" "ELF\0\x01\x02\n", 21), "a.out");
  CHECK_FALSE(bin.ok());
  REQUIRE(bin.errors.size() == 1);
  CHECK(contains(bin.errors[0], "a.out:2: contains a NUL byte"));
  CHECK(bin.bad_lines == 1);
}

TEST_CASE("shapes file: reading from disk") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ktune_shapes_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "shapes.txt";
  {
    std::ofstream out(file);
    out << "# two problems\nbf16 tn 4096x4096x4096\nf32 nn 512x512x512 bias\n";
  }
  const ShapesFile f = tools::read_shapes_file(file.string());
  CHECK(f.ok());
  CHECK(f.problems.size() == 2);

  const ShapesFile missing = tools::read_shapes_file((dir / "nope.txt").string());
  REQUIRE(missing.errors.size() == 1);
  CHECK(contains(missing.errors[0], "nope.txt: cannot open (No such file or directory)"));
  CHECK(missing.bad_lines == 0);

  const ShapesFile isdir = tools::read_shapes_file(dir.string());
  REQUIRE(isdir.errors.size() == 1);
  CHECK(contains(isdir.errors[0], "is a directory"));

  fs::remove_all(dir);
}
