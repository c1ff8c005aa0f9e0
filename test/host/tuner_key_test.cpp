// Problem keys: equality, hashing, epilogue tags, M bucketing, alignment classes, build identity.
#include <doctest/doctest.h>

#include <set>
#include <unordered_set>

#include "tuner_fake.hpp"

using namespace ktune_test;

namespace {
ProblemKey key_of(const Problem& p, MBucketing b = MBucketing::exact) { return make_key(p.desc, alignment_of(p.desc, p.ops), b); }
}  // namespace

TEST_CASE("tuner key: same problem gives equal keys and equal hashes") {
  Problem p = f16_problem(4096, 4096, 4096);
  Problem q = f16_problem(4096, 4096, 4096);
  q.desc.lda = 4096;  // explicit packed leading dimension: same problem
  q.desc.epilogue.alpha = 1.0f;
  CHECK(key_of(p) == key_of(q));
  CHECK(hash_value(key_of(p)) == hash_value(key_of(q)));
  CHECK(ProblemKeyHash{}(key_of(p)) == ProblemKeyHash{}(key_of(q)));
}

TEST_CASE("tuner key: every field that matters changes the key and its hash") {
  const Problem base = f16_problem(512, 768, 1024);
  const ProblemKey k0 = key_of(base);
  std::vector<std::function<void(Problem&)>> edits = {
      [](Problem& p) { p.desc.m = 513; },
      [](Problem& p) { p.desc.n = 769; },
      [](Problem& p) { p.desc.k = 1032; },
      [](Problem& p) { p.desc.ab_type = DType::bf16; },
      [](Problem& p) { p.desc.d_type = DType::f32; },
      [](Problem& p) { p.desc.a_layout = Layout::col; },
      [](Problem& p) { p.desc.b_layout = Layout::row; },
      [](Problem& p) { p.desc.epilogue.bias = true; },
      [](Problem& p) { p.desc.epilogue.residual = true; },
      [](Problem& p) { p.desc.epilogue.beta = 1.0f; },
      [](Problem& p) { p.desc.epilogue.alpha = 2.0f; },
      [](Problem& p) { p.desc.epilogue.activation = Activation::relu; },
      [](Problem& p) { p.desc.epilogue.activation = Activation::gelu_tanh; },
      [](Problem& p) { p.desc.epilogue.clamp = true; },
      [](Problem& p) { p.ops.a = static_cast<const char*>(p.ops.a) + 2; },   // A only 2-byte aligned
      [](Problem& p) { p.ops.b = static_cast<const char*>(p.ops.b) + 4; },   // B 4-byte aligned
      [](Problem& p) { p.ops.d = static_cast<char*>(p.ops.d) + 8; },         // D 8-byte aligned
      [](Problem& p) { p.desc.lda = 1028; },                                  // ld breaks 16-byte rows
  };
  std::unordered_set<std::uint64_t> hashes{hash_value(k0)};
  for (std::size_t i = 0; i < edits.size(); ++i) {
    CAPTURE(i);
    Problem p = base;
    edits[i](p);
    const ProblemKey k = key_of(p);
    CHECK_FALSE(k == k0);
    CHECK(hashes.insert(hash_value(k)).second);
  }
  // f32 operands: SIMT vs TF32 compute are different keys.
  Problem f = base;
  f.desc.ab_type = DType::f32;
  f.desc.d_type = DType::f32;
  Problem t = f;
  t.desc.compute = Compute::tf32;
  CHECK(key_of(f).math == MathOp::simt_f32);
  CHECK(key_of(t).math == MathOp::mma_tf32);
  CHECK_FALSE(key_of(f) == key_of(t));
}

TEST_CASE("tuner key: epilogue values do not matter, only the kind") {
  Problem p = f16_problem();
  Problem q = f16_problem();
  p.desc.epilogue.alpha = 2.0f;
  q.desc.epilogue.alpha = 3.0f;
  CHECK(key_of(p) == key_of(q));
  p.desc.epilogue = linear_combination(1.5f, 0.5f);
  q.desc.epilogue = linear_combination(-1.0f, 2.0f);
  CHECK(key_of(p) == key_of(q));
  p.desc.epilogue.clamp = q.desc.epilogue.clamp = true;
  p.desc.epilogue.clamp_hi = 6.0f;
  q.desc.epilogue.clamp_hi = 1.0f;
  CHECK(key_of(p) == key_of(q));
}

TEST_CASE("tuner key: epilogue tags match EpilogueSpec::tag() and parse back canonically") {
  std::vector<EpilogueSpec> specs;
  for (float alpha : {1.0f, 2.0f})
    for (float beta : {0.0f, 1.0f})
      for (bool bias : {false, true})
        for (bool res : {false, true})
          for (Activation a : {Activation::none, Activation::relu, Activation::gelu_tanh, Activation::gelu_erf, Activation::silu})
            for (bool clamp : {false, true}) {
              EpilogueSpec e;
              e.alpha = alpha;
              e.beta = beta;
              e.bias = bias;
              e.residual = res;
              e.activation = a;
              e.clamp = clamp;
              specs.push_back(e);
            }
  std::set<std::string> tags;
  for (const auto& e : specs) {
    const std::string tag = epilogue_tag(epilogue_flags(e), e.activation);
    CHECK(tag == e.tag());
    std::uint8_t flags = 0xff;
    Activation act = Activation::silu;
    REQUIRE(parse_epilogue_tag(tag, flags, act));
    CHECK(flags == epilogue_flags(e));
    CHECK(act == e.activation);
    tags.insert(tag);
  }
  CHECK(tags.size() == 3 * 2 * 2 * 5 * 2);
  std::uint8_t f;
  Activation a;
  for (const char* bad : {"", "relu_bias", "bias_bias", "ab_alpha", "Identity", "bias_", "_bias", "gelu", "relu_clamp_x",
                          "identity_relu", "bias relu", "clampx"})
    CHECK_MESSAGE(!parse_epilogue_tag(bad, f, a), bad);
}

TEST_CASE("tuner key: M bucketing to powers of two") {
  CHECK(bucket_m(1, MBucketing::pow2) == 1);
  CHECK(bucket_m(100, MBucketing::pow2) == 128);
  CHECK(bucket_m(128, MBucketing::pow2) == 128);
  CHECK(bucket_m(129, MBucketing::pow2) == 256);
  CHECK(bucket_m(100, MBucketing::exact) == 100);
  const ProblemKey a = key_of(f16_problem(100, 512, 512), MBucketing::pow2);
  const ProblemKey b = key_of(f16_problem(120, 512, 512), MBucketing::pow2);
  const ProblemKey c = key_of(f16_problem(130, 512, 512), MBucketing::pow2);
  const ProblemKey e = key_of(f16_problem(128, 512, 512), MBucketing::exact);
  CHECK(a == b);
  CHECK_FALSE(a == c);
  CHECK(a.m == 128);
  CHECK_FALSE(a == e);  // a bucketed key never collides with an exact one
  CHECK_FALSE(key_of(f16_problem(100, 512, 512)) == key_of(f16_problem(120, 512, 512)));
}

TEST_CASE("tuner key: equal keys always get the same can_implement verdicts") {
  GemmTable table;
  fill_table(table);
  DeviceInfo dev;
  FakeBackend fb;
  REQUIRE(fb.device_info(0, dev).ok());
  // Different pointers/lds with the same alignment classes: same key, same candidates.
  Problem p = f16_problem(1000, 1000, 1000, 8);
  Problem q = f16_problem(1000, 1000, 1000, 8);
  q.ops.a = static_cast<const char*>(q.ops.a) + 4096;
  q.desc.lda = 1008;
  REQUIRE(key_of(p) == key_of(q));
  const GemmDesc dp = resolved(p.desc), dq = resolved(q.desc);
  for (const auto& e : table.entries())
    CHECK(can_implement(e, dp, alignment_of(dp, p.ops), &dev).ok() == can_implement(e, dq, alignment_of(dq, q.ops), &dev).ok());
  // desc_of(key) reproduces a problem with that key.
  const ProblemKey k = key_of(p);
  CHECK(make_key(desc_of(k), alignment_of(k)) == k);
}

TEST_CASE("tuner key: hashes of many distinct keys do not collide and the text form is readable") {
  std::unordered_set<std::uint64_t> seen;
  std::unordered_set<ProblemKey, ProblemKeyHash> keys;
  for (std::int64_t m : {1, 16, 17, 64, 100, 128, 1000, 4096})
    for (std::int64_t nn : {8, 64, 1024, 4097})
      for (std::int64_t k : {16, 64, 4093, 4096, 65536})
        for (int al : {1, 2, 8})
          for (DType t : {DType::f16, DType::bf16}) {
            Problem p = f16_problem(m, nn, k, al);
            p.desc.ab_type = t;
            seen.insert(hash_value(key_of(p)));
            keys.insert(key_of(p));
          }
  CHECK(keys.size() > 700);
  CHECK(seen.size() == keys.size());
  Problem p = f16_problem(4096, 4096, 4096);
  p.desc.epilogue = bias_activation(Activation::relu);
  p.ops.bias = p.ops.d;
  CHECK(to_string(key_of(p)) == "gemm f16->f16 mma_f16 tn bias_relu m=4096 n=4096 k=4096 al=8/8/8");
}

TEST_CASE("tuner key: the instance-table hash ignores order and sees content") {
  GemmTable a, b, c;
  auto cs = default_configs();
  fill_table(a, cs);
  std::reverse(cs.begin(), cs.end());
  fill_table(b, cs);
  cs.pop_back();
  fill_table(c, cs);
  CHECK(family_hash(a) == family_hash(b));
  CHECK(family_hash(a) != family_hash(c));
  CHECK(family_hash(a).size() == 16);
}
