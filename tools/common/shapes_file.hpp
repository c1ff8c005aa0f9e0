// tools/common/shapes_file.hpp — the problem lines of `ktune-profile --tune <shapes file>` and
// `ktune-profile --explain <problem>`: parsing with clear errors (line numbers), and the GEMM
// description, alignment class and tuning key each line stands for. Host-only, header-only: no CUDA
// calls, so the host tests cover it.
//
// One problem per line:
//
//   <precision> <layout> <MxNxK> [epilogue] [out=TYPE] [align=A/B/D]
//
//   precision  f16 | bf16 | f32 (exact fp32, SIMT) | tf32 (fp32 operands on tf32 tensor cores)
//   layout     tn | nn | nt | tt: A's letter first, 't' = row-major, 'n' = column-major
//   MxNxK      positive sizes, at most 2^31 - 257 each ('x', 'X' or ',' between them)
//   epilogue   identity (default), or the tuning key's tag: [ab|alpha][_bias][_res][_ACT][_clamp] in
//              that order, ACT one of relu, gelu_tanh, gelu_erf, silu; e.g. bias_relu, ab, res_silu
//              (alpha/beta/clamp values do not enter the key: representative ones are tuned)
//   out=TYPE   element type of C, D, bias and residual (default: the operand type)
//   align=A/B/D  vector widths in elements that A, B and the outputs allow (the key's alignment class);
//              default: packed leading dimensions and 256-byte aligned pointers (cudaMalloc)
//
// or, for a conv2d problem (fprop, NHWC x, KRSC w, NPQK y), a line that starts with `conv`:
//
//   conv <f16|bf16> <NxHxWxC,KxRxS[,stride=S][,pad=P][,dil=D]> [epilogue] [out=TYPE] [stride=S] [pad=P] [dil=D]
//
//   sizes      as ktune-profile --conv (tools/common/conv_presets.hpp: conv_spec_syntax), or the numbers
//              "N H W C K R S [stride [pad]]"; stride=, pad= and dil= may also follow as fields of their own
//   epilogue   identity (default) or a tag as above without ab/res (a conv tuning key's tag), e.g. bias_relu
//   out=TYPE   element type of y and the bias (default: the operand type)
//
// '#' starts a comment (to the end of the line); blank lines are skipped. Lines with the same tuning
// key as an earlier line are reported and tuned once.
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "conv_presets.hpp"
#include "ktune/problem.hpp"
#include "ktune/tuner/key.hpp"
#include "problem_spec.hpp"

namespace ktune::tools {

// The grammar, for error messages and --help.
inline constexpr std::string_view shape_line_syntax = "<precision> <layout> <MxNxK> [epilogue] [out=TYPE] [align=A/B/D]";
inline constexpr std::string_view epilogue_syntax =
    "identity, or [ab|alpha][_bias][_res][_relu|_gelu_tanh|_gelu_erf|_silu][_clamp] in this order, e.g. bias_relu";

// Largest M, N or K a GEMM call accepts (validate(): kernels index with 32-bit integers).
inline constexpr std::int64_t max_gemm_dim = (std::int64_t{1} << 31) - 257;

struct ShapeProblem {
  int line = 0;  // 1-based line of the shapes file; 0 when it came from the command line
  Precision precision = Precision::bf16;
  Layout a_layout = Layout::row;
  Layout b_layout = Layout::col;
  std::int64_t m = 0, n = 0, k = 0;
  std::optional<DType> out;                 // output type; default: the operand type
  std::uint8_t epi_flags = 0;               // tuner::epi flags
  Activation activation = Activation::none;
  std::optional<GemmAlignment> align;       // explicit alignment class; default: natural_alignment()

  DType operand_type() const { return operand_type_of(precision); }
  DType output_type() const { return out.value_or(operand_type()); }
  std::string epilogue_name() const { return tuner::epilogue_tag(epi_flags, activation); }
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }

  // The (resolved) description: packed leading dimensions, and for the epilogue the representative
  // values tuner::desc_of uses (alpha 1.5 / beta 0.5 when the tag asks for them, clamp [-4, 4]).
  GemmDesc desc() const {
    GemmDesc d = precision_desc(m, n, k, precision, a_layout, b_layout, output_type());
    EpilogueSpec& e = d.epilogue;
    if (epi_flags & tuner::epi::alpha) e.alpha = 1.5f;
    if (epi_flags & tuner::epi::beta) {
      e.alpha = 1.5f;
      e.beta = 0.5f;
    }
    e.bias = (epi_flags & tuner::epi::bias) != 0;
    e.residual = (epi_flags & tuner::epi::residual) != 0;
    e.clamp = (epi_flags & tuner::epi::clamp) != 0;
    if (e.clamp) {
      e.clamp_lo = -4.0f;
      e.clamp_hi = 4.0f;
    }
    e.activation = activation;
    return resolved(d);
  }

  // The alignment class of this shape with packed leading dimensions and 256-byte aligned pointers:
  // the widest any call with these sizes can have.
  GemmAlignment natural_alignment() const {
    const void* p = reinterpret_cast<const void*>(std::uintptr_t{1} << 20);
    GemmOperands ops;
    ops.a = ops.b = ops.c = ops.bias = ops.residual = p;
    ops.d = const_cast<void*>(p);
    return alignment_of(desc(), ops);
  }
  GemmAlignment alignment() const { return align.value_or(natural_alignment()); }

  tuner::ProblemKey key(tuner::MBucketing b = tuner::MBucketing::exact) const { return tuner::make_key(desc(), alignment(), b); }

  // Canonical text: "bf16 tn 4096x4096x4096" [+ " bias_relu"] [+ " out=f32"] [+ " align=2/2/2"]; out= and
  // align= only when they differ from the defaults. Parsing it gives the same problem.
  std::string name() const {
    std::string s = std::string(to_string(precision)) + " " + layout_letter(a_layout) + layout_letter(b_layout) + " " +
                    std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    if (epi_flags != 0 || activation != Activation::none) s += " " + epilogue_name();
    if (output_type() != operand_type()) s += " out=" + std::string(to_string(output_type()));
    if (align) {
      const GemmAlignment nat = natural_alignment();
      if (align->a != nat.a || align->b != nat.b || align->d != nat.d)
        s += " align=" + std::to_string(align->a) + "/" + std::to_string(align->b) + "/" + std::to_string(align->d);
    }
    return s;
  }
};

namespace detail {

inline std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f')) ++i;
    std::size_t j = i;
    while (j < s.size() && !(s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\v' || s[j] == '\f')) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

inline std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "f16" || s == "fp16" || s == "half") return DType::f16;
  if (s == "bf16") return DType::bf16;
  if (s == "f32" || s == "fp32" || s == "float") return DType::f32;
  return std::nullopt;
}

// "8/8/8" → three widths (each 1..99).
inline bool parse_align_triple(std::string_view s, int (&v)[3]) {
  int i = 0;
  std::size_t digits = 0;
  v[0] = v[1] = v[2] = 0;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      if (++digits > 2) return false;
      v[i] = v[i] * 10 + (c - '0');
    } else if (c == '/' && digits > 0 && i < 2) {
      ++i;
      digits = 0;
    } else {
      return false;
    }
  }
  return i == 2 && digits > 0;
}

inline bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

inline std::string squote(std::string_view s) { return "'" + std::string(s) + "'"; }

// A line's epilogue field `t` (one per line) into flags and activation; a conv line's tag has no ab/res.
inline bool take_epilogue_field(std::string_view t, std::optional<std::string_view>& seen, std::uint8_t& flags, Activation& act,
                                bool conv, std::string& why) {
  if (seen) {
    why = "unexpected " + squote(t) + ": the epilogue is already " + squote(*seen) + " (one epilogue tag per line)";
    return false;
  }
  if (!tuner::parse_epilogue_tag(t, flags, act) || (conv && (flags & (tuner::epi::beta | tuner::epi::residual)) != 0)) {
    why = conv ? "unknown conv epilogue " + squote(t) + " (identity, or [alpha][_bias][_relu|_gelu_tanh|_gelu_erf|_silu][_clamp], e.g. bias_relu)"
               : "unknown epilogue " + squote(t) + " (" + std::string(epilogue_syntax) + ")";
    return false;
  }
  seen = t;
  return true;
}

}  // namespace detail

// Parse one problem (no comment, not blank). On failure `why` says what is wrong and returns false.
inline bool parse_shape_line(std::string_view text, ShapeProblem& out, std::string& why) {
  using detail::squote;
  const std::vector<std::string_view> tok = detail::split_ws(text);
  if (tok.size() < 3) {
    std::string got;
    for (std::string_view t : tok) got += (got.empty() ? "" : " ") + std::string(t);
    why = "expected '" + std::string(shape_line_syntax) + "', got " + (tok.empty() ? std::string("nothing") : squote(got));
    return false;
  }
  ShapeProblem p;
  p.line = out.line;
  const auto prec = parse_precision(tok[0]);
  if (!prec) {
    why = "unknown precision " + squote(tok[0]) + " (f16, bf16, f32, tf32)";
    return false;
  }
  p.precision = *prec;
  if (!parse_layouts(tok[1], p.a_layout, p.b_layout)) {
    why = "unknown layout " + squote(tok[1]) + " (tn, nn, nt, tt: A's letter first, t = row-major, n = column-major)";
    return false;
  }
  if (!parse_mnk(tok[2], p.m, p.n, p.k)) {
    why = "bad shape " + squote(tok[2]) + ": expected MxNxK with positive integers, e.g. 4096x4096x4096";
    return false;
  }
  if (p.m > max_gemm_dim || p.n > max_gemm_dim || p.k > max_gemm_dim) {
    why = "shape " + squote(tok[2]) + ": M, N and K must be at most " + std::to_string(max_gemm_dim) + " (2^31 - 257)";
    return false;
  }
  std::optional<std::string_view> epilogue, align_text;
  for (std::size_t i = 3; i < tok.size(); ++i) {
    const std::string_view t = tok[i];
    const std::size_t eq = t.find('=');
    if (eq == std::string_view::npos) {
      if (!detail::take_epilogue_field(t, epilogue, p.epi_flags, p.activation, /*conv=*/false, why)) return false;
      continue;
    }
    const std::string_view name = t.substr(0, eq), value = t.substr(eq + 1);
    if (name == "out") {
      if (p.out) {
        why = "out= given twice";
        return false;
      }
      p.out = detail::parse_dtype(value);
      if (!p.out) {
        why = "unknown output type " + squote(value) + " in " + squote(t) + " (f16, bf16, f32)";
        return false;
      }
    } else if (name == "align") {
      if (align_text) {
        why = "align= given twice";
        return false;
      }
      align_text = value;
    } else {
      why = "unknown option " + squote(t) + " (out=TYPE, align=A/B/D)";
      return false;
    }
  }
  if (align_text) {
    int v[3];
    if (!detail::parse_align_triple(*align_text, v)) {
      why = "bad align " + squote(*align_text) + ": expected the vector widths (elements) of A, B and the outputs, e.g. align=8/8/8";
      return false;
    }
    const char* what[3] = {"A", "B", "D"};
    const DType types[3] = {p.operand_type(), p.operand_type(), p.output_type()};
    const GemmAlignment nat = p.natural_alignment();
    const int nat_v[3] = {nat.a, nat.b, nat.d};
    for (int i = 0; i < 3; ++i) {
      const int most = 16 / size_of(types[i]);
      if (!detail::is_pow2(v[i]) || v[i] > most) {
        why = "align=" + std::string(*align_text) + ": " + what[i] + "'s vector width " + std::to_string(v[i]) +
              " is not a power of two from 1 to " + std::to_string(most) + " (16 bytes of " + std::string(to_string(types[i])) + ")";
        return false;
      }
      if (v[i] > nat_v[i]) {
        // With packed leading dimensions the contiguous extent is what limits the vectors.
        const std::int64_t extent[3] = {p.a_layout == Layout::row ? p.k : p.m, p.b_layout == Layout::row ? p.n : p.k, p.n};
        why = "align=" + std::string(*align_text) + ": " + what[i] + " of " + p.name() + " allows at most " +
              std::to_string(nat_v[i]) + "-element vectors (its contiguous extent " + std::to_string(extent[i]) +
              " is not a multiple of " + std::to_string(2 * nat_v[i]) + ")";
        return false;
      }
    }
    p.align = GemmAlignment{v[0], v[1], v[2]};
  }
  out = p;
  return true;
}

// A conv line: `conv <type> <sizes> [epilogue] [out=TYPE] [stride=S] [pad=P] [dil=D]`.
inline constexpr std::string_view conv_line_syntax =
    "conv <f16|bf16> <NxHxWxC,KxRxS[,stride=S][,pad=P][,dil=D]> [epilogue] [out=TYPE]";

struct ConvShapeProblem {
  int line = 0;     // 1-based line of the shapes file; 0 when it came from the command line
  Conv2dDesc desc;  // the epilogue holds representative values (tuner::representative_epilogue)

  std::string name() const { return conv_problem_name(desc); }  // a valid conv line
  // Packed tensors in cudaMalloc'd buffers: the widest alignment class these sizes allow.
  ConvAlignment alignment() const { return alignment_of(desc, placeholder_conv_operands()); }
  tuner::ConvKey key() const { return tuner::make_conv_key(desc, alignment()); }
  double flops() const { return conv_flops(desc); }
};

// Parse one conv line (starting with the word `conv`); false with `why` on failure.
inline bool parse_conv_shape_line(std::string_view text, ConvShapeProblem& out, std::string& why) {
  using detail::squote;
  const std::vector<std::string_view> tok = detail::split_ws(text);
  if (tok.size() < 3 || tok[0] != "conv") {
    why = "expected '" + std::string(conv_line_syntax) + "'";
    return false;
  }
  const std::optional<DType> type = detail::parse_dtype(tok[1]);
  if (!type || *type == DType::f32) {
    why = "unknown conv precision " + squote(tok[1]) + " (f16, bf16)";
    return false;
  }
  // The sizes: one SPEC field, or the line form's numbers ("N H W C K R S [stride [pad]]").
  auto is_number = [](std::string_view t) { return !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos; };
  std::string sizes(tok[2]);
  std::size_t first_option = 3;
  if (is_number(tok[2])) {
    for (; first_option < tok.size() && is_number(tok[first_option]); ++first_option) sizes += " " + std::string(tok[first_option]);
  }
  std::optional<std::string_view> epilogue;
  std::optional<DType> out_type;
  std::uint8_t flags = 0;
  Activation act = Activation::none;
  for (std::size_t i = first_option; i < tok.size(); ++i) {
    const std::string_view t = tok[i];
    const std::size_t eq = t.find('=');
    if (eq == std::string_view::npos) {
      if (!detail::take_epilogue_field(t, epilogue, flags, act, /*conv=*/true, why)) return false;
      continue;
    }
    const std::string_view name = t.substr(0, eq), value = t.substr(eq + 1);
    if (name == "out") {
      if (out_type) {
        why = "out= given twice";
        return false;
      }
      out_type = detail::parse_dtype(value);
      if (!out_type) {
        why = "unknown output type " + squote(value) + " in " + squote(t) + " (f16, bf16, f32)";
        return false;
      }
    } else if (name == "stride" || name == "pad" || name == "dil") {
      if (is_number(tok[2])) {
        why = squote(t) + ": the line form 'N H W C K R S [stride [pad]]' gives stride and pad as numbers (use the "
              "NxHxWxC,KxRxS form for " + std::string(name) + "=)";
        return false;
      }
      sizes += "," + std::string(t);  // parse_conv_spec checks them (and repeats)
    } else if (name == "align") {
      why = "align= is not supported on conv lines (the alignment class of packed tensors in cudaMalloc'd buffers is used)";
      return false;
    } else {
      why = "unknown option " + squote(t) + " (out=TYPE, stride=S, pad=P, dil=D)";
      return false;
    }
  }
  Conv2dDesc d;
  if (!parse_conv_spec(sizes, *type, tuner::representative_epilogue(flags, act), d, why)) return false;
  d.out_type = out_type.value_or(*type);
  if (const Status st = validate(d, placeholder_conv_operands()); !st.ok()) {
    why = "conv problem '" + sizes + "': " + st.message();
    return false;
  }
  ConvShapeProblem p;
  p.line = out.line;
  p.desc = d;
  out = p;
  return true;
}

struct ShapesFile {
  std::vector<ShapeProblem> problems;  // in file order, duplicates of an earlier key left out
  std::vector<ConvShapeProblem> convs; // conv lines, likewise
  std::vector<std::string> errors;     // "origin:LINE: message", or "origin: message" for the whole file
  std::vector<std::string> warnings;   // e.g. a line repeating an earlier line's key
  std::size_t bad_lines = 0;           // errors that belong to a line
  bool ok() const { return errors.empty() && (!problems.empty() || !convs.empty()); }
};

// Parse a whole shapes file's text. `origin` (the path) prefixes every message. Every bad line is
// reported, not only the first. A file without any problem line is an error.
inline ShapesFile parse_shapes_text(std::string_view text, std::string_view origin) {
  ShapesFile f;
  const std::string where(origin);
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  std::vector<tuner::ProblemKey> keys;
  std::vector<tuner::ConvKey> conv_keys;
  // A line repeating an earlier line's key is reported and left out; `kept` are the problems of `keys`.
  auto is_new_key = [&](auto& seen, const auto& key, const auto& kept, const std::string& name, int lineno) {
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] == key) {
        f.warnings.push_back(where + ":" + std::to_string(lineno) + ": " + name + " has the same tuning key as line " +
                             std::to_string(kept[i].line) + "; tuned once");
        return false;
      }
    seen.push_back(key);
    return true;
  };
  int lineno = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    if (detail::split_ws(line).empty()) continue;
    auto bad_line = [&](const std::string& why) {
      f.errors.push_back(where + ":" + std::to_string(lineno) + ": " + why);
      ++f.bad_lines;
    };
    if (line.find('\0') != std::string_view::npos) {
      bad_line("contains a NUL byte (not a text file?)");
      continue;
    }
    std::string why;
    if (const std::vector<std::string_view> tok = detail::split_ws(line); tok.front() == "conv") {
      ConvShapeProblem c;
      c.line = lineno;
      if (!parse_conv_shape_line(line, c, why)) bad_line(why);
      else if (is_new_key(conv_keys, c.key(), f.convs, c.name(), lineno)) f.convs.push_back(c);
      continue;
    }
    ShapeProblem p;
    p.line = lineno;
    if (!parse_shape_line(line, p, why)) bad_line(why);
    else if (is_new_key(keys, p.key(), f.problems, p.name(), lineno)) f.problems.push_back(p);
  }
  if (f.errors.empty() && f.problems.empty() && f.convs.empty())
    f.errors.push_back(where +
                       ": no problem lines (every line is blank or a comment); expected lines like 'bf16 tn 4096x4096x4096' "
                       "or 'conv f16 32x56x56x64,64x3x3 bias_relu'");
  return f;
}

inline constexpr std::size_t max_shapes_file_bytes = 16u << 20;

// Read and parse a shapes file; an unreadable file is one error.
inline ShapesFile read_shapes_file(const std::string& path) {
  ShapesFile f;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    f.errors.push_back(path + ": is a directory, not a shapes file");
    return f;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    f.errors.push_back(path + ": cannot open (" + (err != 0 ? std::string(std::strerror(err)) : std::string("unknown error")) + ")");
    return f;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    f.errors.push_back(path + ": read error");
    return f;
  }
  const std::string text = ss.str();
  if (text.size() > max_shapes_file_bytes) {
    f.errors.push_back(path + ": " + std::to_string(text.size()) + " bytes, larger than the " +
                       std::to_string(max_shapes_file_bytes >> 20) + " MiB a shapes file may have");
    return f;
  }
  return parse_shapes_text(text, path);
}

}  // namespace ktune::tools
