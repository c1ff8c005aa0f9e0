// GPU tests: the sm90 kernel's identity store (D = A·B, and bias + ReLU, which leaves through the same
// store) for every D type and the leading dimensions / pointers that pick its two forms: 16-bit D with
// 16-byte aligned rows goes through 16-byte vectors of whole 128-byte row segments (N not a multiple of
// 8: scalar tail), anything else (odd ldd, ldd ≡ 4 mod 8, D offset by one element, fp32 D) through the
// staged fp32 chunks. Every sm90 'tn' instance, against the float64 reference, D poisoned and its
// padding checked untouched.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "gpu/test_util.cuh"

using namespace kt;

namespace {

struct StoreCase {
  const char* what;
  int m, n, k;
  int pad_d = 0, off_d = 0;
};

const std::vector<StoreCase>& store_cases() {
  static const std::vector<StoreCase> c = {
      {"odd N, packed D (odd ldd: staged store)", 130, 197, 64},
      {"odd N, ldd a multiple of 8 (16-byte store, scalar tail)", 130, 197, 64, 3},
      {"ldd = 4 mod 8 (staged store)", 65, 260, 64},
      {"D offset by one element (staged store)", 70, 136, 128, 8, 1},
      {"several tiles, partial boxes, padded ldd (16-byte store)", 300, 328, 192, 8},
  };
  return c;
}

}  // namespace

TEST_CASE("sm90 identity store: 16-byte row segments where D allows, the staged store elsewhere") {
  DeviceInfo dev;
  backend::device_info(dev);
  std::vector<const GemmKernelEntry*> sm90;
  for (const auto& e : gemm_table().entries())
    if (is_wgmma(e.config.math) && e.config.a_layout == Layout::row && e.config.b_layout == Layout::col &&
        runs_on_device(e, dev).ok())
      sm90.push_back(&e);
  if (sm90.empty()) {
    MESSAGE("no sm90 instance runs on this device");
    return;
  }
  std::uint64_t seed = 9100;
  int runs = 0;
  for (const StoreCase& sc : store_cases())
    for (DType ab : {DType::bf16, DType::f16, DType::f32}) {
      Rng rng(seed++);
      const Matrix A = random_matrix(storage(ab, sc.m, sc.k, true), rng);
      const Matrix B = random_matrix(storage(ab, sc.k, sc.n, false), rng);
      const std::vector<double> acc = reference_ab(A, B);
      for (const GemmKernelEntry* e : sm90) {
        if (e->config.operand() != ab) continue;
        for (DType out : {DType::bf16, DType::f16, DType::f32})
          for (bool bias_relu : {false, true}) {
            OutputCase oc;
            oc.d_type = out;
            oc.ldd_pad = sc.pad_d;
            oc.d_offset = sc.off_d;
            if (bias_relu) oc.epilogue = bias_activation(Activation::relu);
            const RunResult r = run_checked(A, B, acc, e->config.math, oc, e->name.data(), rng);
            ++runs;
            const double tol = tolerance(e->config.math, out);
            std::ostringstream what;
            what << e->name << " " << sc.what << " D " << to_string(out) << (bias_relu ? " bias+relu" : "") << " ["
                 << describe(r.desc) << "]";
            CHECK_MESSAGE(r.status.ok(), what.str() << ": " << r.status.to_string());
            if (r.status.ok()) CHECK_MESSAGE(r.check.ok(tol), what.str() << ": " << r.check.summary());
          }
      }
    }
  MESSAGE(runs << " sm90 store runs");
  CHECK(runs > 0);
}
