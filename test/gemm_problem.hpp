// test/gemm_problem.hpp — a GemmDesc from its sizes, and the split-K / stream-K launch options, in one
// call each, for the host and GPU tests.
#pragma once
#include <cstdint>

#include "ktune/dispatch.hpp"
#include "ktune/gemm/config.hpp"
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

// m x n x k in instance configuration c's operand type (also D's) and layouts.
inline GemmDesc problem_for(const GemmConfig& c, std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmDesc d = tn_problem(c.operand(), m, n, k);
  d.a_layout = c.a_layout;
  d.b_layout = c.b_layout;
  return d;
}

// split_k slices in `mode`; sm90 instances: at most max_ctas CTAs (0: every resident one).
inline GemmLaunchOptions split_k_launch(int split_k, SplitKMode mode, int max_ctas = 0) {
  GemmLaunchOptions o;
  o.split_k = split_k;
  o.split_mode = mode;
  o.max_ctas = max_ctas;
  return o;
}

// Cluster split-K: split_k slices in clusters of `cluster` CTAs.
inline GemmLaunchOptions cluster_split_launch(int split_k, int cluster) {
  GemmLaunchOptions o = split_k_launch(split_k, SplitKMode::cluster);
  o.split_cluster = cluster;
  return o;
}

// Stream-K over at most max_ctas CTAs (0: every resident one).
inline GemmLaunchOptions stream_k_launch(int max_ctas = 0) {
  GemmLaunchOptions o;
  o.stream_k = true;
  o.max_ctas = max_ctas;
  return o;
}

}  // namespace ktune::test
