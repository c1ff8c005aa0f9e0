// GPU tests: the sm90 kernel's stores of D = A·B and of bias + ReLU (the fragment epilogue, which leaves
// through the same stores) for every D type and the leading dimensions / pointers that pick their forms:
// 16-bit D with 16-byte aligned rows (pointer and ldd) leaves instances with 64x256 or 128x128 warpgroup
// tiles through the asynchronous TMA store (8-row ×
// 64-column boxes the TMA clips at D's edges: partial tiles in M and N; the TMA writes whole 16-byte units
// at the last column, so N must be a multiple of 8 too, else the 16-byte row-segment store; with 1-2
// k-tiles and N % 64 = 0 the wide form: 16-row × 128-column operations from freed ring stages); without a
// tensor map (KTUNE_SM90_SYNC_STORE=1) through 16-byte vectors of whole 128-byte row segments; anything
// else (odd ldd, ldd ≡ 4 mod 8, D offset by one or four elements, fp32 D) through the staged fp32 chunks.
// Every sm90 'tn' instance, against the float64 reference, D poisoned and its guard bands and padding
// checked untouched. Some cases cap the grid (max_ctas) so that each CTA walks several tiles, partial ones
// among them, and the box buffers are reused across tiles (the TMA-store probe's bug of session 4 was a
// buffer picked by box position, not by store count: with skipped boxes, a buffer was rewritten while its
// store could still be reading it).
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
  int max_ctas = 0;  // > 0: a grid of that many CTAs (each walks several tiles)
};

const std::vector<StoreCase>& store_cases() {
  static const std::vector<StoreCase> c = {
      {"odd N, packed D (odd ldd: staged store)", 130, 197, 64},
      {"odd N, ldd a multiple of 8 (16-byte store, scalar tail)", 130, 197, 64, 3},
      {"ldd = 4 mod 8 (staged store)", 65, 260, 64},
      {"D offset by one element (staged store)", 70, 136, 128, 8, 1},
      {"several tiles, partial boxes, padded ldd (16-byte store)", 300, 328, 192, 8},
      {"partial tiles in M and N walked by 2 CTAs (the probe's failing case)", 264, 392, 200, 0, 0, 2},
      {"one k-tile, N % 8 = 5, 3 CTAs over 20+ tiles (box buffers reused across tiles)", 517, 1021, 64, 3, 0, 3},
      {"D 8-byte but not 16-byte aligned (offset 4: staged store)", 131, 200, 64, 8, 4},
      {"M < 8 rows, N < 64 (a box mostly outside D)", 5, 24, 64, 0, 0, 1},
      // The wide store (K of 1-2 k-tiles, N % 64 = 0: 4 KB operations from the ring stages past the 2 kept).
      {"wide: one k-tile, N % 128 = 64, partial tiles, 3 CTAs over 20+ tiles (4 KB buffers reused)", 517, 960, 64, 8, 0, 3},
      {"wide: two k-tiles (K = 120, the second partial), N = 64 (one 64-column block), 2 CTAs", 300, 64, 120, 0, 0, 2},
      {"wide: M < 16 rows, N = 192", 9, 192, 64, 0, 0, 1},
      {"wide: one k-tile, many tiles, every CTA", 1040, 1152, 64},
  };
  return c;
}

}  // namespace

TEST_CASE("sm90 identity store: the TMA store or 16-byte row segments where D allows, the staged store elsewhere") {
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
            GemmLaunchOptions launch;
            launch.max_ctas = sc.max_ctas;
            const RunResult r = run_checked(A, B, acc, e->config.math, oc, e->name.data(), rng, nullptr, launch);
            ++runs;
            const double tol = tolerance(e->config.math, out);
            std::ostringstream what;
            what << e->name << " " << sc.what << (sc.max_ctas > 0 ? " max_ctas " + std::to_string(sc.max_ctas) : std::string()) << " D " << to_string(out) << (bias_relu ? " bias+relu" : "") << " ["
                 << describe(r.desc) << "]";
            if (is_swap_ab(e->config) && out == DType::f32) {  // swap AB: 16-bit D only (can_implement refuses, nothing launched)
              CHECK_MESSAGE(r.status.code() == StatusCode::unsupported, what.str() << ": " << r.status.to_string());
              continue;
            }
            CHECK_MESSAGE(r.status.ok(), what.str() << ": " << r.status.to_string());
            if (r.status.ok()) CHECK_MESSAGE(r.check.ok(tol), what.str() << ": " << r.check.summary());
          }
      }
    }
  MESSAGE(runs << " sm90 store runs");
  CHECK(runs > 0);
}
