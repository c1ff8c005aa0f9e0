// test/conv_problem.hpp — a Conv2dDesc from its sizes in one call, and a named one for test tables, for the
// host and GPU conv tests.
#pragma once
#include <cstdint>

#include "ktune/conv/problem.hpp"

namespace ktune::test {

inline Conv2dDesc conv_problem(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t k,
                               std::int64_t r, std::int64_t s, std::int64_t pad_h, std::int64_t pad_w,
                               std::int64_t stride_h = 1, std::int64_t stride_w = 1, std::int64_t dil_h = 1,
                               std::int64_t dil_w = 1) {
  Conv2dDesc d;
  d.n = n;
  d.h = h;
  d.w = w;
  d.c = c;
  d.k = k;
  d.r = r;
  d.s = s;
  d.pad_h = pad_h;
  d.pad_w = pad_w;
  d.stride_h = stride_h;
  d.stride_w = stride_w;
  d.dil_h = dil_h;
  d.dil_w = dil_w;
  return d;
}

// A problem of a test table, with what it exercises.
struct NamedConvProblem {
  const char* what;
  Conv2dDesc d;
};

}  // namespace ktune::test
