// A ResNet-50 bottleneck block with ktune::conv2d, every layer one kernel with its epilogue fused:
//
//   t1 = relu(conv1x1(x,  w1) + b1)            256 → 64 channels
//   t2 = relu(conv3x3(t1, w2) + b2)            64 → 64, padding 1
//   y  = relu(conv1x1(t2, w3) + b3 + x)        64 → 256, the shortcut added in the epilogue
//
// on f16 NHWC activations (56×56, batch 2), checked stage by stage against a float64 CPU reference.
// Without a CUDA device it prints the registered conv instances and exits 0. Built by CMake as
// ktune_example_resnet_block (links ktune_instances, which registers the conv families).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "ktune/conv.hpp"

#define CHECK_CUDA(x)                                                      \
  do {                                                                     \
    cudaError_t e_ = (x);                                                  \
    if (e_ != cudaSuccess) {                                               \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_)); \
      return 1;                                                            \
    }                                                                      \
  } while (0)

namespace {

using ktune::Conv2dDesc;

std::vector<__half> random_half(std::size_t n, std::mt19937& g, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<__half> v(n);
  for (auto& e : v) e = __float2half(u(g));
  return v;
}

std::vector<double> to_double(const std::vector<__half>& v) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d[i] = __half2float(v[i]);
  return d;
}

// float64 reference of one fused layer: relu(conv(x, w) + b [+ res]).
std::vector<double> reference(const Conv2dDesc& d, const std::vector<double>& x, const std::vector<double>& w,
                              const std::vector<double>& b, const std::vector<double>* res) {
  const ktune::ConvShape s = ktune::conv_shape(d);
  std::vector<double> y(static_cast<std::size_t>(s.y_elems));
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t p = 0; p < s.p; ++p)
      for (std::int64_t q = 0; q < s.q; ++q)
        for (std::int64_t k = 0; k < d.k; ++k) {
          double acc = 0.0;
          for (std::int64_t r = 0; r < d.r; ++r)
            for (std::int64_t t = 0; t < d.s; ++t) {
              const std::int64_t h = p * d.stride_h - d.pad_h + r, wc = q * d.stride_w - d.pad_w + t;
              if (h < 0 || h >= d.h || wc < 0 || wc >= d.w) continue;
              const double* xp = &x[static_cast<std::size_t>(((n * d.h + h) * d.w + wc) * d.c)];
              const double* wp = &w[static_cast<std::size_t>(((k * d.r + r) * d.s + t) * d.c)];
              for (std::int64_t c = 0; c < d.c; ++c) acc += xp[c] * wp[c];
            }
          const std::size_t i = static_cast<std::size_t>(((n * s.p + p) * s.q + q) * d.k + k);
          acc += b[static_cast<std::size_t>(k)] + (res ? (*res)[i] : 0.0);
          y[i] = acc > 0.0 ? acc : 0.0;
        }
  return y;
}

// Relative Frobenius error of the GPU's output against the reference.
double rel_error(const std::vector<__half>& got, const std::vector<double>& ref) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = __half2float(got[i]);
    num += (g - ref[i]) * (g - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

Conv2dDesc layer(std::int64_t n, std::int64_t hw, std::int64_t c, std::int64_t k, std::int64_t rs, bool residual) {
  Conv2dDesc d;
  d.n = n;
  d.h = d.w = hw;
  d.c = c;
  d.k = k;
  d.r = d.s = rs;
  d.pad_h = d.pad_w = rs / 2;
  d.type = ktune::DType::f16;
  d.out_type = ktune::DType::f16;
  d.epilogue = ktune::bias_activation(ktune::Activation::relu);
  d.epilogue.residual = residual;
  return d;
}

struct Buf {
  __half* p = nullptr;
  ~Buf() { cudaFree(p); }
};

}  // namespace

int main() {
  const auto& table = ktune::conv_table();
  std::printf("ktune resnet_block: %zu conv instance(s) registered\n", table.size());
  if (ktune::cuda_device_count() == 0) {
    for (const auto& e : table.entries()) std::printf("  %.*s\n", int(e.name.size()), e.name.data());
    std::printf("no CUDA device found: the bottleneck block was not run\n");
    return 0;
  }

  constexpr std::int64_t N = 2, HW = 56, C = 256, Cmid = 64;
  const Conv2dDesc l1 = layer(N, HW, C, Cmid, 1, false), l2 = layer(N, HW, Cmid, Cmid, 3, false),
                   l3 = layer(N, HW, Cmid, C, 1, true);
  std::mt19937 g(42);
  const std::size_t act_in = N * HW * HW * C, act_mid = N * HW * HW * Cmid;
  // He-style scales keep activations O(1) through the block.
  const auto hx = random_half(act_in, g, 1.0f);
  const auto hw1 = random_half(Cmid * C, g, std::sqrt(6.0f / C)), hw2 = random_half(Cmid * 9 * Cmid, g, std::sqrt(6.0f / (9 * Cmid))),
             hw3 = random_half(C * Cmid, g, std::sqrt(6.0f / Cmid));
  const auto hb1 = random_half(Cmid, g, 0.1f), hb2 = random_half(Cmid, g, 0.1f), hb3 = random_half(C, g, 0.1f);

  Buf x, w1, w2, w3, b1, b2, b3, t1, t2, y;
  auto upload = [](Buf& b, const std::vector<__half>& h) {
    cudaError_t e = cudaMalloc(&b.p, h.size() * sizeof(__half));
    if (e == cudaSuccess) e = cudaMemcpy(b.p, h.data(), h.size() * sizeof(__half), cudaMemcpyHostToDevice);
    return e;
  };
  CHECK_CUDA(upload(x, hx));
  CHECK_CUDA(upload(w1, hw1));
  CHECK_CUDA(upload(w2, hw2));
  CHECK_CUDA(upload(w3, hw3));
  CHECK_CUDA(upload(b1, hb1));
  CHECK_CUDA(upload(b2, hb2));
  CHECK_CUDA(upload(b3, hb3));
  CHECK_CUDA(cudaMalloc(&t1.p, act_mid * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&t2.p, act_mid * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&y.p, act_in * sizeof(__half)));

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const ktune::Status s1 = ktune::conv2d(l1, {.x = x.p, .w = w1.p, .y = t1.p, .bias = b1.p}, stream);
  const ktune::Status s2 = ktune::conv2d(l2, {.x = t1.p, .w = w2.p, .y = t2.p, .bias = b2.p}, stream);
  const ktune::Status s3 = ktune::conv2d(l3, {.x = t2.p, .w = w3.p, .y = y.p, .bias = b3.p, .residual = x.p}, stream);
  for (const ktune::Status* s : {&s1, &s2, &s3})
    if (!s->ok()) {
      std::fprintf(stderr, "conv2d failed: %s\n", s->to_string().c_str());
      return 1;
    }
  CHECK_CUDA(cudaStreamSynchronize(stream));

  std::vector<__half> gt1(act_mid), gt2(act_mid), gy(act_in);
  CHECK_CUDA(cudaMemcpy(gt1.data(), t1.p, act_mid * sizeof(__half), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(gt2.data(), t2.p, act_mid * sizeof(__half), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(gy.data(), y.p, act_in * sizeof(__half), cudaMemcpyDeviceToHost));

  // Each stage against float64 on the GPU's own input to that stage (f16 rounding does not compound).
  const auto dx = to_double(hx);
  const double e1 = rel_error(gt1, reference(l1, dx, to_double(hw1), to_double(hb1), nullptr));
  const double e2 = rel_error(gt2, reference(l2, to_double(gt1), to_double(hw2), to_double(hb2), nullptr));
  const double e3 = rel_error(gy, reference(l3, to_double(gt2), to_double(hw3), to_double(hb3), &dx));
  std::printf("1x1 256->64 +bias+relu:           rel. error %.2e\n", e1);
  std::printf("3x3 64->64 +bias+relu:            rel. error %.2e\n", e2);
  std::printf("1x1 64->256 +bias+residual+relu:  rel. error %.2e\n", e3);

  // Time the block (three launches) with CUDA events.
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  constexpr int iters = 20;
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) {
    (void)ktune::conv2d(l1, {.x = x.p, .w = w1.p, .y = t1.p, .bias = b1.p}, stream);
    (void)ktune::conv2d(l2, {.x = t1.p, .w = w2.p, .y = t2.p, .bias = b2.p}, stream);
    (void)ktune::conv2d(l3, {.x = t2.p, .w = w3.p, .y = y.p, .bias = b3.p, .residual = x.p}, stream);
  }
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  std::printf("bottleneck block, batch %lld, 56x56: %.1f us per block (3 fused kernels, launches included)\n",
              static_cast<long long>(N), 1000.0 * ms / iters);
  cudaStreamDestroy(stream);

  const bool ok = e1 < 1e-2 && e2 < 1e-2 && e3 < 1e-2;
  std::printf("%s\n", ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
