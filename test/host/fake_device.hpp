// test/host/fake_device.hpp — the device and problem descriptions host tests plan against without a GPU.
#pragma once
#include <cstdint>

#include "gemm_problem.hpp"
#include "ktune/device.hpp"
#include "ktune/problem.hpp"

namespace ktune::test {

// What the constraint model and the tactic enumeration see of an H200 (132 SMs, 227 KB opt-in smem).
inline DeviceInfo fake_h200() {
  DeviceInfo d;
  d.name = "fake H200";
  d.cc = 90;
  d.sm_count = 132;
  d.smem_optin_bytes = 227 * 1024;
  return d;
}

// bf16 'tn' (A row-major, B column-major) m x n x k, resolved.
inline GemmDesc bf16_tn_desc(std::int64_t m, std::int64_t n, std::int64_t k) { return resolved(tn_problem(DType::bf16, m, n, k)); }

}  // namespace ktune::test
