// GPU tests of the one-call API: the heuristic's own choice gives correct results (small shapes
// against the float64 CPU reference, large shapes against a float64 GPU reference), user streams work,
// and bad input returns a Status without launching anything or writing anything.
#include <doctest/doctest.h>

#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gemm_problem.hpp"
#include "gpu/test_util.cuh"

using namespace kt;

namespace {

bool table_has(MathOp m) {
  for (const auto& e : gemm_table().entries())
    if (e.config.math == m) return true;
  return false;
}

// The instance the one-call API picks for this problem on the current device (for the logs).
std::string chosen_instance(const GemmDesc& d, const GemmOperands& ops) {
  DeviceInfo dev;
  backend::device_info(dev);
  const GemmKernelEntry* e = nullptr;
  const Status s = select_gemm(d, ops, gemm_table(), dev, {}, e);
  return s.ok() ? std::string(e->name) : s.to_string();
}

struct ApiCase {
  DType ab;
  MathOp math;
  Layout la, lb;
  int m, n, k;
  DType out;
  EpilogueSpec epilogue;
  bool c_aliases_d = false;
};

EpilogueSpec with(float alpha, float beta, bool bias, Activation act) {
  EpilogueSpec e;
  e.alpha = alpha;
  e.beta = beta;
  e.bias = bias;
  e.activation = act;
  return e;
}

}  // namespace

TEST_CASE("one-call API without a forced instance: correct results for the heuristic's choice") {
  using enum Layout;
  const std::vector<ApiCase> cases = {
      {DType::f16, MathOp::mma_f16, row, col, 127, 257, 131, DType::f16, with(1, 0, true, Activation::relu)},
      {DType::bf16, MathOp::mma_bf16, col, col, 200, 296, 72, DType::bf16, {}},
      {DType::bf16, MathOp::mma_bf16, row, row, 1, 1, 1, DType::f32, {}},
      {DType::f16, MathOp::mma_f16, col, row, 256, 256, 128, DType::f32, with(1, 0.5f, false, Activation::gelu_erf), true},
      {DType::f32, MathOp::simt_f32, col, row, 33, 40, 100, DType::f32, with(0.5f, -2.0f, false, Activation::none)},
      {DType::f32, MathOp::simt_f32, row, col, 300, 100, 513, DType::bf16, with(1, 0, true, Activation::silu)},
      {DType::f32, MathOp::mma_tf32, row, col, 64, 64, 4096, DType::f32, {}},
      {DType::f32, MathOp::mma_tf32, col, col, 129, 65, 7, DType::f16, with(1, 0, false, Activation::gelu_tanh)},
  };
  std::uint64_t seed = 5000;
  for (const ApiCase& c : cases) {
    if (!table_has(c.math)) continue;
    Rng rng(seed++);
    const Matrix A = random_matrix(storage(c.ab, c.m, c.k, c.la == Layout::row), rng);
    const Matrix B = random_matrix(storage(c.ab, c.k, c.n, c.lb == Layout::row), rng);
    const std::vector<double> acc = reference_ab(A, B);
    OutputCase oc;
    oc.d_type = c.out;
    oc.epilogue = c.epilogue;
    oc.c_aliases_d = c.c_aliases_d;
    const RunResult r = run_checked(A, B, acc, c.math, oc, nullptr, rng);
    // The choice does not depend on the epilogue: ask for it with A, B and a stand-in D only.
    GemmDesc probe_desc = r.desc;
    probe_desc.epilogue = {};
    const DeviceBuffer probe_d(static_cast<std::size_t>(c.m) * resolved(r.desc).ldd * 4);
    GemmOperands probe;
    probe.a = A.data();
    probe.b = B.data();
    probe.d = probe_d.ptr;
    const std::string chosen = chosen_instance(probe_desc, probe);
    CAPTURE(describe(r.desc));
    CAPTURE(chosen);
    REQUIRE_MESSAGE(r.status.ok(), r.status.to_string());
    const double tol = tolerance(c.math, c.out);
    CHECK_MESSAGE(r.check.ok(tol), r.check.summary() << " tol=" << tol);
    MESSAGE(describe(r.desc) << " -> " << chosen << ": rel_err " << r.check.err);
  }
}

TEST_CASE("one-call API on a user stream") {
  cudaStream_t stream = nullptr;
  KT_CUDA(cudaStreamCreate(&stream));
  Rng rng(77);
  const Matrix A = random_matrix(storage(DType::bf16, 300, 200, true), rng);
  const Matrix B = random_matrix(storage(DType::bf16, 200, 500, false), rng);
  const std::vector<double> acc = reference_ab(A, B);
  OutputCase oc;
  oc.d_type = DType::bf16;
  oc.epilogue = with(1, 0, true, Activation::gelu_tanh);
  const RunResult r = run_checked(A, B, acc, MathOp::mma_bf16, oc, nullptr, rng, stream);
  KT_CUDA(cudaStreamDestroy(stream));
  REQUIRE_MESSAGE(r.status.ok(), r.status.to_string());
  CHECK_MESSAGE(r.check.ok(1e-2), r.check.summary());
}

TEST_CASE("bad input returns a Status and leaves every buffer untouched") {
  Rng rng(99);
  const int M = 64, N = 64, K = 64;
  Matrix A = random_matrix(storage(DType::f16, M, K, true), rng);
  Matrix B = random_matrix(storage(DType::f16, K, N, false), rng);
  Matrix D = poisoned(storage(DType::f16, M, N, true));
  D.upload();
  Matrix bias = random_matrix(storage(DType::f16, 1, N, true), rng);

  auto base = [&] { return ktune::test::tn_problem(DType::f16, M, N, K); };
  auto ops = [&] {
    GemmOperands o;
    o.a = A.data();
    o.b = B.data();
    o.d = D.data();
    return o;
  };
  // The valid baseline works (proves the failures below are about the one thing changed), but runs
  // into a scratch output so D keeps its poison.
  {
    Matrix scratch = poisoned(storage(DType::f16, M, N, true));
    scratch.upload();
    GemmOperands o = ops();
    o.d = scratch.data();
    const Status s = backend::run_gemm(base(), o, nullptr, {});
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    backend::sync(nullptr);
  }

  struct Bad {
    std::string what;
    GemmDesc d;
    GemmOperands o;
    StatusCode code;
    const char* instance = nullptr;
    GemmLaunchOptions launch{};
  };
  std::vector<Bad> bad;
  {
    GemmOperands o = ops();
    o.a = nullptr;
    bad.push_back({"null A", base(), o, StatusCode::invalid_argument});
    o = ops();
    o.b = nullptr;
    bad.push_back({"null B", base(), o, StatusCode::invalid_argument});
    o = ops();
    o.d = nullptr;
    bad.push_back({"null D", base(), o, StatusCode::invalid_argument});
    GemmDesc d = base();
    d.m = 0;
    bad.push_back({"M = 0", d, ops(), StatusCode::invalid_argument});
    d = base();
    d.k = -1;
    bad.push_back({"K = -1", d, ops(), StatusCode::invalid_argument});
    d = base();
    d.lda = K - 1;
    bad.push_back({"lda < K", d, ops(), StatusCode::invalid_argument});
    d = base();
    d.ldd = N - 1;
    bad.push_back({"ldd < N", d, ops(), StatusCode::invalid_argument});
    d = base();
    d.epilogue.beta = 1.0f;
    bad.push_back({"beta != 0 with null C", d, ops(), StatusCode::invalid_argument});
    d = base();
    d.epilogue.bias = true;
    bad.push_back({"bias flag with null bias", d, ops(), StatusCode::invalid_argument});
    d = base();
    d.epilogue.residual = true;
    bad.push_back({"residual flag with null residual", d, ops(), StatusCode::invalid_argument});
    o = ops();
    o.a = static_cast<const unsigned char*>(A.data()) + 1;
    bad.push_back({"odd address for f16 A", base(), o, StatusCode::misaligned});
    o = ops();
    o.d = static_cast<unsigned char*>(D.data()) + 1;
    bad.push_back({"odd address for f16 D", base(), o, StatusCode::misaligned});
    o = ops();
    o.d = const_cast<void*>(A.data());
    bad.push_back({"D is A", base(), o, StatusCode::invalid_argument});
    o = ops();
    o.d = static_cast<unsigned char*>(const_cast<void*>(B.data())) + 64;
    bad.push_back({"D overlaps B", base(), o, StatusCode::invalid_argument});
    d = base();
    d.epilogue.beta = 1.0f;
    o = ops();
    o.c = static_cast<const unsigned char*>(D.data()) + 2;
    bad.push_back({"C partially overlaps D", d, o, StatusCode::invalid_argument});
    d = base();
    d.epilogue.beta = 1.0f;
    d.ldc = 2 * N;
    o = ops();
    o.c = D.data();
    bad.push_back({"C aliases D with another ld", d, o, StatusCode::invalid_argument});
    d = base();
    d.epilogue.bias = true;
    o = ops();
    o.bias = D.data();
    bad.push_back({"bias inside D", d, o, StatusCode::invalid_argument});
    d = base();
    d.epilogue.clamp = true;
    d.epilogue.clamp_lo = 1.0f;
    d.epilogue.clamp_hi = -1.0f;
    o = ops();
    bad.push_back({"clamp lo > hi", d, o, StatusCode::invalid_argument});
    d = base();
    d.compute = Compute::tf32;
    bad.push_back({"tf32 compute with f16 operands", d, ops(), StatusCode::unsupported});
    bad.push_back({"unknown instance", base(), ops(), StatusCode::no_instance, "ktune_gemm_sm80_f16_tn_1x1x1_w1x1_s1_a1"});
    // Launch options out of range: rejected before anything is tuned or launched, never clamped.
    for (int rg : {0, -1, max_raster_group + 1, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()}) {
      GemmLaunchOptions lo;
      lo.raster_group = rg;
      bad.push_back({"raster_group " + std::to_string(rg), base(), ops(), StatusCode::invalid_argument, nullptr, lo});
    }
    {
      GemmLaunchOptions lo;
      lo.split_k = 0;
      bad.push_back({"split_k 0", base(), ops(), StatusCode::invalid_argument, nullptr, lo});
      lo = {};
      lo.cluster = 3;
      bad.push_back({"cluster 3", base(), ops(), StatusCode::invalid_argument, nullptr, lo});
      lo = {};
      lo.max_ctas = -1;
      bad.push_back({"max_ctas -1", base(), ops(), StatusCode::invalid_argument, nullptr, lo});
    }
    // Instances of the wrong math, the wrong layout, or too wide vectors for the problem.
    for (const auto& e : gemm_table().entries()) {
      if (e.config.math == MathOp::mma_bf16) {
        bad.push_back({"bf16 instance for an f16 problem", base(), ops(), StatusCode::unsupported, e.name.data()});
        break;
      }
    }
    for (const auto& e : gemm_table().entries()) {
      if (e.config.math == MathOp::mma_f16 && e.config.a_layout == Layout::col) {
        bad.push_back({"nt/nn instance for a tn problem", base(), ops(), StatusCode::unsupported, e.name.data()});
        break;
      }
    }
    for (const auto& e : gemm_table().entries()) {
      // A kernel instance: a repack route (route_repack+...) would accept odd K by copying the operands.
      if (!is_route(e) && e.config.math == MathOp::mma_f16 && e.config.a_layout == Layout::row &&
          e.config.b_layout == Layout::col && e.config.align == 8) {
        d = base();
        d.k = K - 1;  // odd K with lda = 64: rows of A and columns of B are no longer 16-byte vectors
        d.lda = K;
        d.ldb = K;
        bad.push_back({"16-byte instance for odd K", d, ops(), StatusCode::misaligned, e.name.data()});
        break;
      }
    }
  }
  for (const Bad& b : bad) {
    CAPTURE(b.what);
    GemmOptions opt;
    opt.instance = b.instance;
    opt.launch = b.launch;
    const Status s = backend::run_gemm(b.d, b.o, nullptr, opt);
    CHECK(s.code() == b.code);
    CHECK_FALSE(s.message().empty());
    MESSAGE(b.what << " -> " << s.to_string());
  }
  backend::sync(nullptr);
  // Nothing was written anywhere: D is still all poison, A, B and the bias are as uploaded.
  auto unchanged = [](const Matrix& m) { return m.download() == m.image; };
  CHECK(unchanged(D));
  CHECK(unchanged(A));
  CHECK(unchanged(B));
  CHECK(unchanged(bias));
}

namespace {

struct BigCase {
  std::string what;
  Layout la, lb;
  int m, n, k;
  bool bias_relu;
};

}  // namespace

TEST_CASE("large shapes against a float64 GPU reference, one heuristic-chosen instance per math") {
  using enum Layout;
  const std::vector<BigCase> cases = {
      {"1024^3 with bias+relu", row, col, 1024, 1024, 1024, true},
      {"aligned, not tile multiples", row, col, 4000, 4040, 4072, false},
      {"odd everything", col, row, 4095, 4097, 4093, false},
  };
  const MathOp maths[] = {MathOp::mma_bf16, MathOp::mma_f16, MathOp::mma_tf32, MathOp::simt_f32};
  std::uint64_t seed = 9000;
  for (const BigCase& bc : cases)
    for (MathOp math : maths) {
      if (!table_has(math)) continue;
      const DType ab = operand_type(math);
      // Output: the operand type for f16/bf16 with the epilogue case, f32 otherwise.
      const DType out = bc.bias_relu && ab != DType::f32 ? ab : DType::f32;
      GemmDesc d;
      d.m = bc.m;
      d.n = bc.n;
      d.k = bc.k;
      d.ab_type = ab;
      d.a_layout = bc.la;
      d.b_layout = bc.lb;
      d.d_type = out;
      d.compute = compute_for(math);
      if (bc.bias_relu) d.epilogue = with(1, 0, true, Activation::relu);
      d = resolved(d);
      CAPTURE(describe(d));

      const bool ar = bc.la == row, br = bc.lb == row;
      DeviceBuffer A(static_cast<std::size_t>(d.m) * d.k * size_of(ab));
      DeviceBuffer B(static_cast<std::size_t>(d.k) * d.n * size_of(ab));
      fill_random(ab, A.ptr, ar ? d.m : d.k, ar ? d.k : d.m, d.lda, seed++);
      fill_random(ab, B.ptr, br ? d.k : d.n, br ? d.n : d.k, d.ldb, seed++);
      DeviceBuffer ref_dev(static_cast<std::size_t>(d.m) * d.n * sizeof(double));
      reference_gemm_gpu(d, A.ptr, B.ptr, reinterpret_cast<double*>(ref_dev.ptr));

      Rng rng(seed++);
      Matrix D = poisoned(storage(out, d.m, d.n, true));
      D.upload();
      Matrix bias;
      GemmOperands ops;
      ops.a = A.ptr;
      ops.b = B.ptr;
      ops.d = D.data();
      if (bc.bias_relu) {
        bias = random_matrix(storage(out, 1, d.n, true), rng);
        ops.bias = bias.data();
      }
      const std::string chosen = chosen_instance(d, ops);
      cudaEvent_t t0, t1;
      KT_CUDA(cudaEventCreate(&t0));
      KT_CUDA(cudaEventCreate(&t1));
      KT_CUDA(cudaEventRecord(t0));
      const Status s = backend::run_gemm(d, ops, nullptr, {});
      KT_CUDA(cudaEventRecord(t1));
      KT_CUDA(cudaDeviceSynchronize());
      float ms = 0;
      KT_CUDA(cudaEventElapsedTime(&ms, t0, t1));
      KT_CUDA(cudaEventDestroy(t0));
      KT_CUDA(cudaEventDestroy(t1));
      CAPTURE(chosen);
      REQUIRE_MESSAGE(s.ok(), s.to_string());

      std::vector<double> acc(static_cast<std::size_t>(d.m) * d.n);
      KT_CUDA(cudaMemcpy(acc.data(), ref_dev.ptr, acc.size() * sizeof(double), cudaMemcpyDeviceToHost));
      const std::vector<double> ref =
          reference_epilogue(acc, d.m, d.n, d.epilogue, nullptr, bc.bias_relu ? &bias.vals : nullptr, nullptr);
      const Check c = check_output(D, ref);
      const double tol = tolerance(math, out);
      CHECK_MESSAGE(c.ok(tol), c.summary() << " tol=" << tol);
      MESSAGE(bc.what << ": " << describe(d) << " -> " << chosen << ": rel_err " << c.err << ", first call "
                      << ms << " ms (" << 2.0 * d.m * d.n * d.k / (ms * 1e9) << " TF/s incl. setup)");
    }
}
