// Host emulation of the conv A-operand gather (ConvAIterator, conv/kernel/iterator.cuh): every default
// conv configuration's loader runs on the CPU, thread by thread, k-tile by k-tile, into a shared-memory
// tile image, which must equal the im2col matrix (zeros for padding, rows past M and columns past
// R·S·C) at every swizzled position. Checks the device gather without a GPU.
//
// The few CUDA names the loader uses are stood in for inside namespace ktune::kernel (so they cannot
// collide with the real ones elsewhere in the program), and the real cuda_pipeline_primitives.h is
// skipped through its include guard.
#include <doctest/doctest.h>

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunknown-pragmas"  // the device code's #pragma unroll
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#define _CUDA_PIPELINE_PRIMITIVES_H_
// Stand-ins for the CUDA function qualifiers, unless the CUDA headers came first (this file shares a unity
// TU with others that include them: their host-compiler definitions serve as well).
#ifndef __CUDACC__
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#endif

namespace ktune::kernel {
struct EmulatedThreadIdx {
  unsigned x = 0, y = 0, z = 0;
};
static thread_local EmulatedThreadIdx threadIdx;
struct uint4 {
  unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
template <class T>
static inline T __ldg(const T* p) { return *p; }
static inline void __pipeline_memcpy_async(void* dst, const void* src, std::size_t n, std::size_t zfill) {
  if (zfill == n) std::memset(dst, 0, n);
  else std::memcpy(dst, src, n);
}
// smem.cuh's cp_async_zfill (not used by the gather) names it outside a dependent context.
static inline std::size_t __cvta_generic_to_shared(const void*) { return 0; }
static inline void __pipeline_commit() {}
static inline void __pipeline_wait_prior(int) {}
}  // namespace ktune::kernel

#include "ktune/conv/families.hpp"
#include "ktune/conv/kernel/iterator.cuh"
#include "ktune/conv/problem.hpp"
#include "conv_problem.hpp"

using namespace ktune;
using ktune::kernel::ConvAIterator;
using ktune::kernel::ConvGeometry;

namespace {

using Elem = std::uint16_t;  // stands in for __half / __nv_bfloat16: the loader only moves bits

// The gather does not depend on K: every problem has 8 output channels.
Conv2dDesc problem(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t r, std::int64_t s,
                   std::int64_t pad_h, std::int64_t pad_w, std::int64_t stride_h = 1, std::int64_t stride_w = 1,
                   std::int64_t dil_h = 1, std::int64_t dil_w = 1) {
  return test::conv_problem(n, h, w, c, 8, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w);
}

const std::vector<Conv2dDesc>& problems() {
  static const std::vector<Conv2dDesc> v = {
      problem(2, 7, 7, 64, 1, 1, 0, 0),           problem(2, 9, 11, 64, 3, 3, 1, 1),
      problem(3, 10, 9, 16, 3, 3, 1, 1, 2, 2),    problem(2, 12, 12, 8, 3, 3, 2, 2, 1, 1, 2, 2),
      problem(2, 2, 3, 8, 5, 5, 2, 2),            problem(2, 9, 10, 24, 2, 3, 0, 2, 1, 3, 1, 2),
      problem(1, 16, 16, 128, 3, 3, 1, 1),        problem(2, 14, 14, 32, 1, 1, 0, 0, 2, 2),
      problem(1, 5, 5, 40, 7, 7, 3, 3),           problem(2, 8, 8, 5, 3, 3, 1, 1),
      problem(2, 8, 8, 12, 3, 3, 1, 1),           problem(2, 7, 7, 6, 3, 3, 1, 1),
      problem(2, 17, 19, 3, 7, 7, 3, 3, 2, 2),    problem(2, 20, 20, 4, 7, 7, 3, 3, 2, 2),
      problem(1, 4, 3, 2, 5, 5, 2, 2, 1, 1, 2, 1), problem(2, 3, 3, 1, 3, 3, 1, 1),
      problem(1, 30, 30, 16, 3, 3, 1, 1),  // M = 900: several row tiles, a partial last one
  };
  return v;
}

// Would an instance of this configuration take the problem (its iterator's C rule)?
bool accepts(const ConvConfig& c, const Conv2dDesc& d) {
  if (c.iterator == ConvIterator::few_channels) return d.c == c.channels;
  return d.c % c.gemm.align == 0;
}

// Runs every thread's loader over every k-tile of every row tile; returns the number of mismatches.
template <ConvConfig CC>
int gather_mismatches(const Conv2dDesc& d, std::string& first) {
  using It = ConvAIterator<CC, Elem>;
  const ConvShape sh = conv_shape(d);
  const ConvGeometry g{static_cast<int>(d.h),      static_cast<int>(d.w),        static_cast<int>(d.c),
                       static_cast<int>(d.s),      static_cast<int>(sh.q),       static_cast<int>(sh.p * sh.q),
                       static_cast<int>(sh.m),     static_cast<int>(sh.kgemm),   static_cast<int>(d.pad_h),
                       static_cast<int>(d.pad_w),  static_cast<int>(d.stride_h), static_cast<int>(d.stride_w),
                       static_cast<int>(d.dil_h),  static_cast<int>(d.dil_w)};
  std::vector<Elem> x(static_cast<std::size_t>(sh.x_elems));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<Elem>(1 + i % 60000);  // never 0: zero means "not read"
  auto im2col = [&](std::int64_t m, std::int64_t kg) -> Elem {
    if (m >= sh.m || kg >= sh.kgemm) return 0;
    const std::int64_t n = m / (sh.p * sh.q), pq = m % (sh.p * sh.q), p = pq / sh.q, q = pq % sh.q;
    const std::int64_t c = kg % d.c, tap = kg / d.c, r = tap / d.s, s = tap % d.s;
    const std::int64_t h = p * d.stride_h - d.pad_h + r * d.dil_h, w = q * d.stride_w - d.pad_w + s * d.dil_w;
    if (h < 0 || h >= d.h || w < 0 || w >= d.w) return 0;
    return x[static_cast<std::size_t>(((n * d.h + h) * d.w + w) * d.c + c)];
  };
  constexpr int BM = CC.gemm.tile.m, BK = CC.gemm.tile.k, threads = CC.gemm.threads();
  const int k_tiles = static_cast<int>((sh.kgemm + BK - 1) / BK);
  int bad = 0;
  for (int m0 = 0; m0 < sh.m; m0 += BM) {
    std::vector<It> its(threads);
    for (int t = 0; t < threads; ++t) {
      kernel::threadIdx.x = static_cast<unsigned>(t);
      its[static_cast<std::size_t>(t)].init(g, m0, t);
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      std::vector<char> tile(It::Tile::bytes, char(0x5a));  // poison: unwritten bytes show up
      for (int t = 0; t < threads; ++t) {
        kernel::threadIdx.x = static_cast<unsigned>(t);
        its[static_cast<std::size_t>(t)].load(tile.data(), reinterpret_cast<const Elem*>(x.data()), g, kt);
      }
      for (int r = 0; r < BM; ++r)
        for (int c = 0; c < BK; ++c) {
          Elem v;
          std::memcpy(&v, tile.data() + It::Tile::offset(r, c), sizeof v);
          const Elem e = im2col(m0 + r, std::int64_t{kt} * BK + c);
          if (v != e && bad++ == 0)
            first = "m=" + std::to_string(m0 + r) + " kg=" + std::to_string(kt * BK + c) + ": got " +
                    std::to_string(v) + ", im2col has " + std::to_string(e);
        }
    }
  }
  return bad;
}

template <class F>
void check_family() {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          constexpr ConvConfig cc = valid_conv_configs<F>()[I];
          int ran = 0;
          for (const Conv2dDesc& d : problems()) {
            if (!accepts(cc, d)) continue;
            ++ran;
            std::string first;
            const int bad = gather_mismatches<cc>(d, first);
            INFO(conv_instance_name(cc).view() << " on N" << d.n << " H" << d.h << " W" << d.w << " C" << d.c << " R" << d.r
                                               << " S" << d.s << " pad " << d.pad_h << "/" << d.pad_w << " stride "
                                               << d.stride_h << "/" << d.stride_w << " dil " << d.dil_h << "/" << d.dil_w
                                               << ": " << first);
            CHECK(bad == 0);
          }
          CHECK(ran > 0);
        }(),
        ...);
  }(std::make_index_sequence<conv_valid_count<F>>{});
}

}  // namespace

TEST_CASE("conv gather (host emulation): every default configuration reproduces im2col exactly") {
  check_family<families::Sm80ConvOptimized>();
  check_family<families::Sm80ConvOptimizedWide>();
  check_family<families::Sm80ConvAnalytic>();
  check_family<families::Sm80ConvFewChannels>();
  check_family<families::Sm80ConvFewChannels3>();
}
