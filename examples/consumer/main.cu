// A ktune consumer: it compiles one small part of a default family into its own dispatch table, then
// runs a tiny fused GEMM through the table and checks it against the CPU. With no CUDA device it only
// shows what was registered (the build is the test there).
#include <cmath>
#include <cstdio>
#include <vector>

#include "ktune/device.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

// Part 0 of 8 of the exact-fp32 SIMT family: one instance, so this program compiles quickly. A real
// program registers the families it needs, one part per translation unit (see ktune's src/instances/).
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80SimtF32, 0, 8)

#define CHECK_CUDA(x)                                                              \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_));         \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

int main() {
  const auto& table = ktune::gemm_table();
  std::printf("ktune consumer: %zu instance(s) registered\n", table.size());
  for (const auto& e : table.entries()) std::printf("  %.*s\n", int(e.name.size()), e.name.data());
  if (table.size() == 0) return 1;

  if (ktune::cuda_device_count() == 0) {
    std::printf("no CUDA device found: registration checked, GEMM not run\n");
    return 0;
  }
  ktune::DeviceInfo dev;
  if (auto s = ktune::current_device(dev); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 1;
  }

  // D = relu(A·B + bias), fp32, with the registered instance's layouts; sizes that are not tile
  // multiples so the bounds checks run too.
  const ktune::GemmConfig& cfg = table.entries().front().config;
  ktune::GemmDesc desc;
  desc.m = 100;
  desc.n = 72;
  desc.k = 40;
  desc.ab_type = ktune::DType::f32;
  desc.d_type = ktune::DType::f32;
  desc.compute = ktune::Compute::f32;
  desc.a_layout = cfg.a_layout;
  desc.b_layout = cfg.b_layout;
  desc.epilogue = ktune::bias_activation(ktune::Activation::relu);
  const int M = int(desc.m), N = int(desc.n), K = int(desc.k);

  std::vector<float> a(size_t(M) * K), b(size_t(K) * N), bias(N), d(size_t(M) * N);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 7 % 13) - 6) / 8.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i * 5 % 11) - 5) / 8.0f;
  for (int j = 0; j < N; ++j) bias[j] = float(j % 5 - 2) / 4.0f;
  auto A = [&](int i, int k) { return cfg.a_layout == ktune::Layout::row ? a[size_t(i) * K + k] : a[size_t(k) * M + i]; };
  auto B = [&](int k, int j) { return cfg.b_layout == ktune::Layout::row ? b[size_t(k) * N + j] : b[size_t(j) * K + k]; };

  float *da = nullptr, *db = nullptr, *dbias = nullptr, *dd = nullptr;
  CHECK_CUDA(cudaMalloc(&da, a.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&db, b.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dbias, bias.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dd, d.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dbias, bias.data(), bias.size() * sizeof(float), cudaMemcpyHostToDevice));

  ktune::GemmOperands ops;
  ops.a = da;
  ops.b = db;
  ops.d = dd;
  ops.bias = dbias;
  if (auto s = ktune::validate(desc, ops); !s.ok()) {
    std::fprintf(stderr, "invalid problem: %s\n", s.to_string().c_str());
    return 1;
  }
  std::vector<std::string> why_not;
  const auto cands = table.candidates(ktune::resolved(desc), ktune::alignment_of(desc, ops), &dev, &why_not);
  if (cands.empty()) {
    std::fprintf(stderr, "no instance can run the problem:\n");
    for (const auto& w : why_not) std::fprintf(stderr, "  %s\n", w.c_str());
    return 1;
  }
  const ktune::GemmKernelEntry& e = *cands.front();
  if (auto s = e.launch(ktune::resolved(desc), ops, ktune::GemmLaunchOptions{}, nullptr); !s.ok()) {
    std::fprintf(stderr, "launch failed: %s\n", s.to_string().c_str());
    return 1;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(d.data(), dd, d.size() * sizeof(float), cudaMemcpyDeviceToHost));

  double max_err = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = bias[j];
      for (int k = 0; k < K; ++k) ref += double(A(i, k)) * B(k, j);
      ref = ref > 0 ? ref : 0;
      max_err = std::fmax(max_err, std::fabs(ref - d[size_t(i) * N + j]));
    }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dbias);
  cudaFree(dd);
  const bool ok = max_err < 1e-3;
  std::printf("%.*s on %s: %dx%dx%d relu(A*B + bias), max |error| %.3g: %s\n", int(e.name.size()), e.name.data(),
              dev.name.c_str(), M, N, K, max_err, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
