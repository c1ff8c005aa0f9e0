// test/fuzz/fuzz_gemm_args.cpp — libFuzzer target: GEMM argument validation and instance selection.
//
// The input decodes into a GemmDesc and GemmOperands (any dimensions, leading dimensions, enum values,
// epilogue values and pointer values: pointers are never dereferenced) and a selection request. Then:
//   validate(), alignment_of(), select_gemm() over every default family's configurations on four fake
//   devices, by name and by the cost model, the tuner's key and its cache line, and the tuner's pick.
// Nothing may crash or hit undefined behaviour, and these must hold:
//   - a Status that is not ok has a message; select_gemm() fails with validate()'s Status when that fails
//   - alignment_of() gives power-of-two vector widths within 16 bytes that divide what they claim to
//   - a selected instance computes the problem's math on its operand type, has its layouts, accepts
//     its alignment, runs on the device (architecture, shared memory), and is the same on every call
//   - an instance named in the options is the one selected, or the call fails
//   - equal tuner keys mean equal can_implement verdicts; a valid problem's key survives the cache line
//     round trip; the tuner's pick is a candidate that can run the problem
// Decoding (fuzz_support.hpp's Bytes; past the end every byte reads as 0): see decode() below.
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "ktune/gemm.hpp"
#include "ktune/gemm/heuristic.hpp"
#include "ktune/problem.hpp"
#include "ktune/tuner/cache.hpp"
#include "ktune/tuner/key.hpp"
#include "ktune/tuner/tuner.hpp"

using namespace ktune;
using ktune_fuzz::Bytes;

namespace {

constexpr std::int64_t kMaxDim = (std::int64_t{1} << 31) - 257;

std::int64_t dim(Bytes& in) {
  switch (in.u8() % 8) {
    case 0: return in.u16();                                          // 0..65535
    case 1: return std::int64_t{in.u8()} - 8;                         // -8..247
    case 2: return kMaxDim - 8 + in.u8() % 16;                        // across the limit
    case 3: return in.i64();                                          // anything
    case 4: return std::int64_t{1} << (in.u8() % 63);                 // powers of two
    case 5: return std::int64_t{in.u16()} * 8;                        // multiples of 8
    case 6: return std::int64_t{in.u32()};
    default: return -std::int64_t{in.u32()};
  }
}

// Two's-complement wrapping arithmetic (the decoder itself must not overflow).
std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::int64_t wrap_mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

std::int64_t leading(Bytes& in, std::int64_t extent) {
  switch (in.u8() % 6) {
    case 0: return 0;                                                 // packed
    case 1: return wrap_add(extent, std::int64_t{in.u8()} - 8);       // too small by ≤ 8, or padded
    case 2: return in.i64();
    case 3: return wrap_mul(extent, 1 + in.u8() % 4);
    case 4: return wrap_add(extent, 8 * (in.u8() % 16));
    default: return std::int64_t{in.u32()};
  }
}

// Mostly valid enumerators; 1 in 16 a raw out-of-range value (an enum class with a fixed underlying
// type may hold any value of it, e.g. a cast from a corrupt config file).
template <class E>
E enumerator(Bytes& in, unsigned count) {
  const std::uint8_t v = in.u8();
  return static_cast<E>(v < 0xF0 ? v % count : v);
}

float real(Bytes& in) {
  switch (in.u8() % 8) {
    case 0: return 1.0f;
    case 1: return 0.0f;
    case 2: return 0.5f;
    case 3: return -1.0f;
    case 4: return std::nanf("");
    case 5: return INFINITY;
    case 6: return -0.0f;
    default: return in.f32();
  }
}

// Operand i's address, possibly derived from an earlier operand's (aliasing, partial overlap).
std::uintptr_t pointer(Bytes& in, int i, const std::uintptr_t* earlier) {
  const std::uintptr_t region = static_cast<std::uintptr_t>(i + 1) << 40;  // 1 TiB apart
  switch (in.u8() % 8) {
    case 0: return 0;
    case 1: return region + in.u16();
    case 2: return region;
    case 3: return static_cast<std::uintptr_t>(in.u64());
    case 4: return i > 0 ? earlier[in.u8() % i] : region;
    case 5: return (i > 0 ? earlier[in.u8() % i] : region) + static_cast<std::uintptr_t>(static_cast<std::int16_t>(in.u16()));
    case 6: return region + in.u8();
    default: return ~std::uintptr_t{0} - in.u16();                     // near the top: sums wrap
  }
}

struct Input {
  GemmDesc desc;
  GemmOperands ops;
  int named = -1;        // index of an instance to force, or -1
  unsigned devices = 0;  // bit mask over fake_devices()
};

Input decode(Bytes& in) {
  Input x;
  GemmDesc& d = x.desc;
  d.m = dim(in);
  d.n = dim(in);
  d.k = dim(in);
  d.ab_type = enumerator<DType>(in, 3);
  d.a_layout = enumerator<Layout>(in, 2);
  d.b_layout = enumerator<Layout>(in, 2);
  d.d_type = enumerator<DType>(in, 3);
  d.compute = enumerator<Compute>(in, 2);
  d.lda = leading(in, d.a_layout == Layout::row ? d.k : d.m);
  d.ldb = leading(in, d.b_layout == Layout::row ? d.n : d.k);
  d.ldc = leading(in, d.n);
  d.ldd = leading(in, d.n);
  d.ldr = leading(in, d.n);
  EpilogueSpec& e = d.epilogue;
  e.alpha = real(in);
  e.beta = real(in);
  e.bias = in.flag();
  e.residual = in.flag();
  e.activation = enumerator<Activation>(in, 5);
  e.clamp = in.flag();
  e.clamp_lo = real(in);
  e.clamp_hi = real(in);
  std::uintptr_t p[6] = {};
  for (int i = 0; i < 6; ++i) p[i] = pointer(in, i, p);
  x.ops.a = reinterpret_cast<const void*>(p[0]);
  x.ops.b = reinterpret_cast<const void*>(p[1]);
  x.ops.c = reinterpret_cast<const void*>(p[2]);
  x.ops.d = reinterpret_cast<void*>(p[3]);
  x.ops.bias = reinterpret_cast<const void*>(p[4]);
  x.ops.residual = reinterpret_cast<const void*>(p[5]);
  const std::uint16_t pick = in.u16();
  x.named = pick == 0 ? -1 : static_cast<int>(pick - 1);
  x.devices = in.u8();
  if (x.devices == 0) x.devices = 0xF;
  return x;
}

bool pow2(int v) { return v >= 1 && (v & (v - 1)) == 0; }

void check_alignment(const GemmDesc& d0, const GemmOperands& ops, const GemmAlignment& al, bool valid) {
  const GemmDesc d = resolved(d0);
  const int eb = size_of(d.ab_type), ed = size_of(d.d_type);
  KTUNE_FUZZ_CHECK(pow2(al.a) && al.a * eb <= 16, "al.a=" + std::to_string(al.a));
  KTUNE_FUZZ_CHECK(pow2(al.b) && al.b * eb <= 16, "al.b=" + std::to_string(al.b));
  KTUNE_FUZZ_CHECK(pow2(al.d) && al.d * ed <= 16, "al.d=" + std::to_string(al.d));
  if (!valid) return;
  auto divides = [](const void* p, std::int64_t ld, std::int64_t extent, int v, int es) {
    return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(v * es) == 0 && ld % v == 0 && extent % v == 0;
  };
  KTUNE_FUZZ_CHECK(divides(ops.a, d.lda, d.a_layout == Layout::row ? d.k : d.m, al.a, eb));
  KTUNE_FUZZ_CHECK(divides(ops.b, d.ldb, d.b_layout == Layout::row ? d.n : d.k, al.b, eb));
  KTUNE_FUZZ_CHECK(divides(ops.d, d.ldd, d.n, al.d, ed));
  if (d.epilogue.beta != 0.0f) KTUNE_FUZZ_CHECK(divides(ops.c, d.ldc, d.n, al.d, ed));
  if (d.epilogue.residual) KTUNE_FUZZ_CHECK(divides(ops.residual, d.ldr, d.n, al.d, ed));
  if (d.epilogue.bias) KTUNE_FUZZ_CHECK(divides(ops.bias, d.n, d.n, al.d, ed));
}

// What a selected instance must satisfy.
void check_selected(const GemmKernelEntry& e, const GemmDesc& d0, const GemmAlignment& al, const DeviceInfo& dev) {
  const GemmDesc d = resolved(d0);
  const GemmConfig& c = e.config;
  const std::string who = std::string(e.name) + " on " + dev.name;
  KTUNE_FUZZ_CHECK(can_implement(e, d, al, &dev).ok(), who);
  KTUNE_FUZZ_CHECK(math_implements(c.math, required_math(d)), who);
  KTUNE_FUZZ_CHECK(operand_type(c.math) == d.ab_type, who + ": operand type " + std::string(to_string(d.ab_type)));
  KTUNE_FUZZ_CHECK(c.a_layout == d.a_layout && c.b_layout == d.b_layout, who);
  KTUNE_FUZZ_CHECK(al.a % c.align == 0 && al.b % c.align == 0, who);
  KTUNE_FUZZ_CHECK(c.arch_cc <= dev.cc && e.resources.smem_bytes <= dev.smem_optin_bytes, who);
  KTUNE_FUZZ_CHECK(!is_wgmma(c.math) || dev.cc == 90, who);
  const double cost = heuristic_cost(e, d, dev);
  KTUNE_FUZZ_CHECK(std::isfinite(cost) && cost > 0, who + ": cost " + std::to_string(cost));
}

void check_key(const GemmDesc& d0, const GemmAlignment& al, const GemmTable& table, const DeviceInfo& dev) {
  using namespace ktune::tuner;
  const GemmDesc d = resolved(d0);
  for (MBucketing b : {MBucketing::exact, MBucketing::pow2}) {
    const ProblemKey key = make_key(d, al, b);
    KTUNE_FUZZ_CHECK(hash_value(key) == hash_value(make_key(d, al, b)));
    // Equal keys, equal verdicts: the representative problem of the key (exact bucketing only: a
    // pow2 key's problem has M rounded up, which can change nothing can_implement looks at either).
    const GemmDesc rep = desc_of(key);
    const GemmAlignment ral = ktune::tuner::alignment_of(key);
    for (const auto& e : table.entries())
      KTUNE_FUZZ_CHECK(can_implement(e, d, al, &dev).ok() == can_implement(e, rep, ral, &dev).ok(),
                       std::string(e.name) + " / " + to_string(key));
    // The cache line of this key reads back to the same key.
    CacheEntry ce;
    ce.key = key;
    ce.id = CacheIdentity{dev.fingerprint(), std::string(ktune_version), family_hash(table)};
    ce.instance = std::string(table.entries().front().name);
    ce.ms = 0.125;
    ce.tflops = 1.0;
    CacheEntry back;
    std::string why;
    const std::string line = to_line(ce);
    KTUNE_FUZZ_CHECK(parse_entry_line(line, back, why), line + ": " + why);
    KTUNE_FUZZ_CHECK(back.key == key && back.id == ce.id && back.instance == ce.instance && back.ms == ce.ms, line);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  const Input x = decode(in);
  const GemmDesc& desc = x.desc;
  const GemmOperands& ops = x.ops;
  const GemmTable& table = ktune_fuzz::fake_table();

  const Status v = validate(desc, ops);
  KTUNE_FUZZ_CHECK(v.ok() == v.message().empty(), v.to_string());
  KTUNE_FUZZ_CHECK(v.code() != StatusCode::no_instance && v.code() != StatusCode::no_device, v.to_string());
  const GemmAlignment al = alignment_of(desc, ops);
  check_alignment(desc, ops, al, v.ok());
  if (v.ok()) KTUNE_FUZZ_CHECK(resolved(resolved(desc)).lda == resolved(desc).lda);

  GemmOptions opt;
  std::string name;
  if (x.named >= 0) {
    const auto& es = table.entries();
    // Past the table: a name that does not exist (including an empty one).
    name = static_cast<std::size_t>(x.named) < es.size() ? std::string(es[static_cast<std::size_t>(x.named)].name)
                                                          : std::string("ktune_gemm_no_such_") + std::to_string(x.named % 3);
    if (x.named % 7 == 6 && static_cast<std::size_t>(x.named) >= es.size()) name.clear();
    opt.instance = name.c_str();
  }

  for (std::size_t i = 0; i < ktune_fuzz::fake_devices().size(); ++i) {
    if ((x.devices >> i & 1u) == 0) continue;
    const DeviceInfo& dev = ktune_fuzz::fake_devices()[i];
    const GemmKernelEntry* e = nullptr;
    const Status s = select_gemm(desc, ops, table, dev, opt, e);
    KTUNE_FUZZ_CHECK(s.ok() == s.message().empty(), s.to_string());
    KTUNE_FUZZ_CHECK(s.ok() == (e != nullptr), s.to_string());
    if (!v.ok()) {
      KTUNE_FUZZ_CHECK(!s.ok() && s.code() == v.code() && s.message() == v.message(), s.to_string() + " vs " + v.to_string());
      continue;
    }
    if (s.ok()) {
      check_selected(*e, desc, al, dev);
      if (opt.instance != nullptr) KTUNE_FUZZ_CHECK(e->name == name, std::string(e->name) + " != " + name);
      const GemmKernelEntry* again = nullptr;
      KTUNE_FUZZ_CHECK(select_gemm(desc, ops, table, dev, opt, again).ok() && again == e, "selection is not deterministic");
    } else if (opt.instance == nullptr) {
      // Nothing selected: then no entry may accept the problem on this device.
      KTUNE_FUZZ_CHECK(table.candidates(resolved(desc), al, &dev).empty(), s.to_string());
    }
    check_key(desc, al, table, dev);

    // The tuner (never measuring: cache_only without a cache is the cost model's rank 1).
    if (i == 0 && opt.instance == nullptr) {
      tuner::TunerOptions o;
      o.policy = tuner::Policy::cache_only;
      o.log_level = tuner::LogLevel::off;
      o.log_sink = [](tuner::LogLevel, std::string_view) {};
      auto backend = std::make_shared<ktune_fuzz::NoMeasureBackend>();
      backend->device = dev.ordinal;
      tuner::Tuner t(backend, &table, o);
      const GemmKernelEntry* w = nullptr;
      const Status ts = t.select(desc, ops, nullptr, w);
      KTUNE_FUZZ_CHECK(ts.ok() == s.ok(), ts.to_string() + " vs select_gemm " + s.to_string());
      if (ts.ok()) {
        KTUNE_FUZZ_CHECK(w != nullptr);
        check_selected(*w, desc, al, dev);
        KTUNE_FUZZ_CHECK(t.lookup(desc, ops) == w);
      }
    }
  }
  return 0;
}
