// test/fuzz/make_corpus.cpp — writes the seed corpus of the fuzz targets (test/fuzz/corpus/<target>/):
// cache files written by the cache writer itself (to_line / CacheStore::serialize) for the fuzz
// tuner's identity, plus the malformed kinds the reader must reject; and encoded GEMM problems (valid
// ones of every kind, each kind of bad argument, and the inputs that found bugs). Not part of any build:
//
//   g++ -std=c++20 -Iinclude -Itest/fuzz -isystem /usr/local/cuda/include test/fuzz/make_corpus.cpp -o /tmp/mc
//   /tmp/mc test/fuzz/corpus
//
// The gemm_args encoding mirrors decode() in fuzz_gemm_args.cpp; keep the two in step.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "ktune/tuner/cache.hpp"
#include "ktune/tuner/key.hpp"

using namespace ktune;
using namespace ktune::tuner;
namespace fs = std::filesystem;

namespace {

fs::path g_root;

void write(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_root / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

// ---- cache ----------------------------------------------------------------------------------------------

CacheIdentity fuzz_identity() {
  return {ktune_fuzz::fake_devices()[0].fingerprint(), std::string(ktune_version), family_hash(ktune_fuzz::fake_table())};
}

CacheEntry entry(DType ab, DType dt, MathOp math, Layout a, Layout b, std::int64_t m, std::int64_t n, std::int64_t k,
                 int align, const std::string& instance, double ms, std::uint8_t epi = 0,
                 Activation act = Activation::none, MBucketing bucket = MBucketing::exact) {
  CacheEntry e;
  ProblemKey& key = e.key;
  key.ab_type = ab;
  key.d_type = dt;
  key.math = math;
  key.a_layout = a;
  key.b_layout = b;
  key.m = m;
  key.n = n;
  key.k = k;
  key.align_a = key.align_b = static_cast<std::uint8_t>(align);
  key.align_d = static_cast<std::uint8_t>(std::min(align, 16 / size_of(dt)));
  key.epi_flags = epi;
  key.activation = act;
  key.m_bucketing = bucket;
  e.id = fuzz_identity();
  e.instance = instance;
  e.ms = ms;
  e.tflops = 2.0 * double(m) * double(n) * double(k) / (ms * 1e9);
  return e;
}

std::string file_of(std::initializer_list<CacheEntry> es) {
  CacheStore s;
  for (const auto& e : es) s.insert(e);
  return s.serialize();
}

void cache_corpus() {
  using enum MathOp;
  using enum Layout;
  constexpr DType F32 = DType::f32, F16 = DType::f16, BF16 = DType::bf16;
  const std::string H = header_line() + "\n";
  const CacheEntry e_f16 = entry(F16, F16, mma_f16, row, col, 4096, 4096, 4096, 8, "ktune_gemm_sm80_f16_tn_128x256x32_w64x64_s4_a8", 0.21);
  const CacheEntry e_bf16 = entry(BF16, BF16, mma_bf16, row, col, 1024, 4096, 4096, 8, "ktune_gemm_sm80_bf16_tn_128x128x32_w64x64_s4_a8",
                                0.05, epi::bias, Activation::gelu_tanh);
  const CacheEntry e_wg = entry(BF16, BF16, mma_bf16, row, row, 8192, 8192, 8192, 8, "ktune_gemm_sm90_wgmma_bf16_tt_128x256x64_w64x256_s4_a8", 1.7);
  const CacheEntry e_odd = entry(F16, F32, mma_f16, row, col, 4095, 4097, 4093, 1, "ktune_gemm_sm80_f16_tn_128x128x32_w32x64_s3_a1", 0.9,
                               epi::beta | epi::residual | epi::clamp, Activation::silu);
  const CacheEntry e_tf32 = entry(F32, F32, mma_tf32, col, col, 2048, 2048, 2048, 4, "ktune_gemm_sm80_tf32_nn_128x128x32_w32x64_s3_a4", 0.3, epi::alpha);
  const CacheEntry e_simt = entry(F32, F32, simt_f32, row, row, 512, 512, 512, 1, "ktune_gemm_sm80_simt_f32_tt_128x128x16_w32x64_s3_a1", 0.4);
  const CacheEntry e_pow2 = entry(F16, F16, mma_f16, row, col, 2048, 4096, 4096, 8, "ktune_gemm_sm80_f16_tn_128x256x32_w64x64_s4_a8", 0.3, 0,
                                Activation::relu, MBucketing::pow2);
  const CacheEntry e_big = entry(F16, F16, mma_f16, row, col, std::int64_t{1} << 31, 8, 8, 8, "ktune_gemm_sm80_f16_tn_128x128x32_w64x64_s4_a8", 9.0,
                               0, Activation::none, MBucketing::pow2);  // the bucket of M > 2^30
  CacheEntry other_dev = e_f16;
  other_dev.id.device = "NVIDIA A100-SXM4-80GB|cc80|sm108|l2:41943040|drv13000|rt13000";
  CacheEntry other_ver = e_f16;
  other_ver.id.version = "0.0.9";
  CacheEntry missing = e_f16;
  missing.instance = "ktune_gemm_sm80_f16_tn_999x999x32_w64x64_s4_a8";  // not in the table
  CacheEntry wrong_layout = e_f16;
  wrong_layout.instance = "ktune_gemm_sm80_f16_nn_128x256x32_w64x64_s4_a8";  // exists, cannot run tn
  CacheEntry wrong_math = e_bf16;
  wrong_math.instance = "ktune_gemm_sm80_f16_tn_128x128x32_w64x64_s4_a8";  // an f16 instance for a bf16 key
  CacheEntry slower = e_f16;
  slower.ms = 0.25;
  slower.instance = "ktune_gemm_sm80_f16_tn_128x128x32_w64x64_s4_a8";

  write("cache", "empty", "");
  write("cache", "header_only", H);
  write("cache", "one_f16", file_of({e_f16}));
  write("cache", "kinds", file_of({e_f16, e_bf16, e_wg, e_odd, e_tf32, e_simt, e_pow2, e_big}));
  write("cache", "other_identities", file_of({e_f16, other_dev, other_ver}));
  write("cache", "not_applicable", file_of({missing, wrong_layout, wrong_math}));
  write("cache", "merge_same_key", file_of({e_f16}) + std::string(1, '\0') + file_of({slower, e_bf16}));
  write("cache", "merge_two_files", file_of({e_odd, e_tf32}) + std::string(1, '\0') + file_of({e_odd, e_simt, e_pow2}));
  write("cache", "crlf_bom", "\xEF\xBB\xBF" + header_line() + "\r\n" + to_line(e_bf16) + "\r\n\r\n");
  write("cache", "second_header", H + to_line(e_f16) + "\n" + H + to_line(e_tf32) + "\n");
  const std::string line = to_line(e_odd);
  write("cache", "truncated", H + to_line(e_f16) + "\n" + line.substr(0, line.size() / 2));
  write("cache", "foreign", "my important notes\n" + to_line(e_f16) + "\n");
  write("cache", "newer_format", "{\"format\":\"ktune-cache\",\"version\":2}\n" + to_line(e_f16) + "\n");
  write("cache", "bad_fields",
        H + "{\"op\":\"conv\"}\n" + "[1,2,3]\n" + "{\"a\":1,\"a\":2}\n" + "{\"s\":\"\\ud800\"}\n" + "{\"n\":1e999}\n" +
            "{\"deep\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}\n" + "{\"u\":\"\xC3\x28\"}\n");
  std::string bad_values = H;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"m\":4095", "\"m\":-1"},
           {"\"m\":4095", "\"m\":4095.0"},
           {"\"m\":4095", "\"m\":2147483648"},
           {"\"align_a\":1", "\"align_a\":3"},
           {"\"align_a\":1", "\"align_a\":16"},
           {"\"ms\":0.9", "\"ms\":0"},
           {"\"ms\":0.9", "\"ms\":-0.9"},
           {"\"math\":\"mma_f16\"", "\"math\":\"mma_bf16\""},
           {"\"math\":\"mma_f16\"", "\"math\":\"wgmma_f16\""},
           {"\"epilogue\":\"ab_res_silu_clamp\"", "\"epilogue\":\"res_ab\""},
           {"\"instance\":\"ktune_gemm_sm80_f16_tn_128x128x32_w32x64_s3_a1\"", "\"instance\":\"a b\""},
           {"\"device\":", "\"devic\":"},
       }) {
    std::string l = line;
    const auto at = l.find(from);
    if (at != std::string::npos) l.replace(at, from.size(), to);
    bad_values += l + "\n";
  }
  write("cache", "bad_values", bad_values);
  write("cache", "json_values", "{\"a\":[true,false,null,-0.5e-3,\"x\\n\\u00e9\\ud83d\\ude00\"],\"b\":{}}");
}

// ---- gemm_args -------------------------------------------------------------------------------------------

// Mirrors decode() in fuzz_gemm_args.cpp.
struct Enc {
  std::string b;
  Enc& u8(unsigned v) {
    b += static_cast<char>(v & 0xFF);
    return *this;
  }
  Enc& u16(unsigned v) { return u8(v).u8(v >> 8); }
  Enc& u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<unsigned>(v >> (8 * i)));
    return *this;
  }
  Enc& dim(unsigned v) { return u8(0).u16(v); }             // 0..65535
  Enc& dim_raw(std::int64_t v) { return u8(3).u64(static_cast<std::uint64_t>(v)); }
  Enc& dim_near_limit(int off) { return u8(2).u8(static_cast<unsigned>(off + 8)); }  // 2^31-257+off
  Enc& packed() { return u8(0); }
  Enc& ld_plus(int delta) { return u8(1).u8(static_cast<unsigned>(delta + 8)); }
  Enc& ld_raw(std::int64_t v) { return u8(2).u64(static_cast<std::uint64_t>(v)); }
  Enc& real(unsigned sel) { return u8(sel); }               // 0: 1, 1: 0, 2: 0.5, 3: -1, 4: NaN, 5: inf
  Enc& ptr_region() { return u8(2); }
  Enc& ptr_null() { return u8(0); }
  Enc& ptr_offset(unsigned bytes) { return u8(6).u8(bytes); }
  Enc& ptr_alias(unsigned j) { return u8(4).u8(j); }
  Enc& ptr_top() { return u8(7).u16(0); }
};

struct Problem {
  unsigned m = 1024, n = 1024, k = 1024;
  unsigned ab = 1, la = 0, lb = 1, dt = 1, compute = 0;  // f16, row, col, f16, f32
  unsigned alpha = 0, beta = 1, bias = 0, residual = 0, act = 0, clamp = 0, lo = 1, hi = 0;
  unsigned named = 0, devices = 0;
};

Enc encode_head(const Problem& p) {
  Enc e;
  e.dim(p.m).dim(p.n).dim(p.k);
  e.u8(p.ab).u8(p.la).u8(p.lb).u8(p.dt).u8(p.compute);
  return e;
}

Enc& encode_tail(Enc& e, const Problem& p) {
  e.real(p.alpha).real(p.beta).u8(p.bias).u8(p.residual).u8(p.act).u8(p.clamp).real(p.lo).real(p.hi);
  for (int i = 0; i < 6; ++i) e.ptr_region();
  e.u16(p.named).u8(p.devices);
  return e;
}

std::string encode(const Problem& p) {
  Enc e = encode_head(p);
  for (int i = 0; i < 5; ++i) e.packed();
  return encode_tail(e, p).b;
}

void gemm_corpus() {
  Problem p;
  write("gemm_args", "f16_tn_1024", encode(p));
  Problem q = p;
  q.ab = q.dt = 2;
  q.bias = 1;
  q.act = 2;
  write("gemm_args", "bf16_tn_bias_gelu", encode(q));
  q = p;
  q.la = 1;
  q.lb = 0;
  q.m = 8192;
  q.n = 8192;
  q.k = 8192;
  write("gemm_args", "f16_nt_8192", encode(q));
  q = p;
  q.ab = q.dt = 0;
  write("gemm_args", "f32_simt", encode(q));
  q.compute = 1;
  write("gemm_args", "f32_tf32", encode(q));
  q = p;
  q.m = 4095;
  q.n = 4097;
  q.k = 4093;
  q.dt = 0;
  write("gemm_args", "f16_odd_unaligned", encode(q));
  q = p;
  q.m = 16;
  q.n = 4096;
  q.k = 4096;
  write("gemm_args", "f16_decode_m16", encode(q));
  q = p;
  q.alpha = 2;
  q.beta = 2;
  q.residual = 1;
  q.clamp = 1;
  q.lo = 3;
  q.hi = 0;
  q.act = 4;
  write("gemm_args", "f16_full_epilogue", encode(q));
  q.lo = 0;
  q.hi = 3;
  write("gemm_args", "bad_empty_clamp", encode(q));
  q.lo = 4;
  write("gemm_args", "bad_nan_clamp", encode(q));
  q = p;
  q.named = 1;
  write("gemm_args", "named_first_instance", encode(q));
  q.named = 5000;
  write("gemm_args", "named_missing_instance", encode(q));
  q = p;
  q.devices = 0x8;
  write("gemm_args", "turing_device_only", encode(q));
  q = p;
  q.compute = 1;
  write("gemm_args", "bad_tf32_f16", encode(q));
  q = p;
  q.m = 0;
  write("gemm_args", "bad_zero_m", encode(q));
  // Leading dimensions: one too small, padded.
  {
    Enc e = encode_head(p);
    e.ld_plus(-1).packed().packed().packed().packed();
    write("gemm_args", "bad_lda_small", encode_tail(e, p).b);
    Enc f = encode_head(p);
    f.ld_plus(8).ld_plus(3).packed().ld_plus(0).packed();
    write("gemm_args", "ld_padded", encode_tail(f, p).b);
  }
  // Pointers: null, misaligned, D aliasing A, C aliasing D, D near the top of the address space.
  {
    Problem b = p;
    b.beta = 2;
    auto with_ptrs = [&](const Problem& pp, auto&& ptrs) {
      Enc e = encode_head(pp);
      for (int i = 0; i < 5; ++i) e.packed();
      e.real(pp.alpha).real(pp.beta).u8(pp.bias).u8(pp.residual).u8(pp.act).u8(pp.clamp).real(pp.lo).real(pp.hi);
      ptrs(e);
      e.u16(pp.named).u8(pp.devices);
      return e.b;
    };
    write("gemm_args", "bad_null_a", with_ptrs(p, [](Enc& e) { e.ptr_null().ptr_region().ptr_region().ptr_region().ptr_region().ptr_region(); }));
    write("gemm_args", "bad_misaligned_b", with_ptrs(p, [](Enc& e) { e.ptr_region().ptr_offset(1).ptr_region().ptr_region().ptr_region().ptr_region(); }));
    write("gemm_args", "vec2_aligned_b", with_ptrs(p, [](Enc& e) { e.ptr_region().ptr_offset(4).ptr_region().ptr_region().ptr_region().ptr_region(); }));
    write("gemm_args", "bad_d_aliases_a", with_ptrs(p, [](Enc& e) { e.ptr_region().ptr_region().ptr_region().ptr_alias(0).ptr_region().ptr_region(); }));
    write("gemm_args", "c_aliases_d", with_ptrs(b, [](Enc& e) { e.ptr_region().ptr_region().ptr_region().ptr_alias(2).ptr_region().ptr_region(); }));
    write("gemm_args", "bad_d_wraps", with_ptrs(p, [](Enc& e) { e.ptr_region().ptr_region().ptr_region().ptr_top().ptr_region().ptr_region(); }));
  }
  // Found by fuzzing (fixed): byte offsets overflowing int64 in validate() (signed overflow); enum
  // values out of range accepted; pow2 key of M > 2^30 rejected by the cache reader.
  {
    Problem h = p;
    h.ab = h.dt = 0;
    Enc e = encode_head(h);
    e.packed().packed().packed().ld_raw(std::int64_t{1} << 61).packed();
    write("gemm_args", "bug_ld_overflows_bytes", encode_tail(e, h).b);
    Enc f;
    f.dim_near_limit(0).dim_near_limit(0).dim(64).u8(0).u8(0).u8(0).u8(0).u8(0);
    for (int i = 0; i < 5; ++i) f.packed();
    write("gemm_args", "bug_max_dims_f32_span", encode_tail(f, h).b);
    Problem u = p;
    u.ab = 0xF7;
    write("gemm_args", "bug_unknown_dtype", encode(u));
    u = p;
    u.la = 0xF3;
    write("gemm_args", "bad_unknown_layout", encode(u));
    u = p;
    u.act = 0xFA;
    write("gemm_args", "bad_unknown_activation", encode(u));
    u = p;
    u.compute = 0xF5;
    write("gemm_args", "bad_unknown_compute", encode(u));
    Enc g;
    g.dim_raw((std::int64_t{1} << 30) + 1).dim(1034).dim(8192).u8(2).u8(0).u8(0).u8(0).u8(0);
    for (int i = 0; i < 5; ++i) g.packed();
    write("gemm_args", "bug_pow2_bucket_2e31", encode_tail(g, p).b);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus root, e.g. test/fuzz/corpus>\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  cache_corpus();
  gemm_corpus();
  return 0;
}
