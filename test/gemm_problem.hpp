// test/gemm_problem.hpp — a 'tn' GemmDesc from its sizes in one call, for the host and GPU tests.
#pragma once
#include <cstdint>

#include "ktune/problem.hpp"

namespace ktune::test {

// ab × ab → ab, A row-major and B column-major ('tn'), m x n x k; leading dimensions left for resolved().
inline GemmDesc tn_problem(DType ab, std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmDesc d;
  d.m = m;
  d.n = n;
  d.k = k;
  d.ab_type = ab;
  d.d_type = ab;
  d.a_layout = Layout::row;
  d.b_layout = Layout::col;
  return d;
}

}  // namespace ktune::test
