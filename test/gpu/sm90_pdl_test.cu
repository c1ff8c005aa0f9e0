// GPU tests: programmatic dependent launch of the sm90 kernels (kernel/sm90/kernel.cuh: sm90_pdl). The
// launch may begin while the stream's previous kernel still runs, so the kernel must touch no global
// memory before its griddepcontrol.wait, and it lets the next kernel start early (a dependent launched with
// the programmatic attribute waits for it before it reads D). Here the kernel before the GEMM triggers its
// dependents at once and writes A (or the bias) only after ~30 µs; the kernel after it is launched with
// the attribute and copies D. Every sm90 bf16 'tn' instance with its default launch and each run-time mode
// it takes (split-K parallel and serial, stream-K, cluster of 2, cluster split-K); D and its copy against
// the float64 reference, guards and padding untouched. (With KTUNE_SM90_PDL=0 the launches are plain and
// this checks only the results.)
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/test_util.cuh"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

namespace kt {
// test_kernels.cu
void launch_pdl_delayed_copy(void* dst, const void* src, std::size_t bytes, unsigned long long delay_ns, cudaStream_t stream);
cudaError_t launch_pdl_dependent_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);
int test_kernels_arch();
}  // namespace kt

using namespace kt;

namespace {

std::vector<std::pair<std::string, GemmLaunchOptions>> pdl_launches(const GemmKernelEntry& e) {
  std::vector<std::pair<std::string, GemmLaunchOptions>> v{{"default", GemmLaunchOptions{}}};
  GemmLaunchOptions o;
  o.split_k = 3;
  o.split_mode = SplitKMode::parallel;
  v.push_back({"split3p", o});
  if (supports_serial_split_k(e.config)) {
    o.split_mode = SplitKMode::serial;
    v.push_back({"split3s", o});
  }
  if (supports_stream_k(e.config)) {
    o = GemmLaunchOptions{};
    o.stream_k = true;
    v.push_back({"sk", o});
  }
  o = GemmLaunchOptions{};
  o.cluster = 2;
  v.push_back({"cl2", o});
  if (cluster_split_k_limit(e.config) >= 2) {
    o = GemmLaunchOptions{};
    o.split_k = 2;
    o.split_mode = SplitKMode::cluster;
    o.split_cluster = 2;
    v.push_back({"split2c2", o});
  }
  return v;
}

}  // namespace

TEST_CASE("sm90 programmatic dependent launch: the GEMM waits for the kernel before it, the one after it sees all of D") {
  DeviceInfo dev;
  backend::device_info(dev);
  std::vector<const GemmKernelEntry*> sm90;
  for (const auto& e : gemm_table().entries())
    if (e.config.math == MathOp::wgmma_bf16 && !is_route(e) && e.config.a_layout == Layout::row &&
        e.config.b_layout == Layout::col && runs_on_device(e, dev).ok())
      sm90.push_back(&e);
  if (sm90.empty()) {
    MESSAGE("no sm90 instance runs on this device");
    return;
  }
  if (const int arch = test_kernels_arch(); arch < 900) {  // the dependent would not wait for the GEMM
    MESSAGE("the test kernels run as sm_" << arch / 10 << " (no griddepcontrol): skipped");
    return;
  }
  const char* env = std::getenv("KTUNE_SM90_PDL");
  MESSAGE("KTUNE_SM90_PDL=" << (env ? env : "(unset)"));
  cudaStream_t s = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int M = 300, N = 328, K = 520;  // several tiles, partial ones, 9 k-tiles (the last partial)
  Rng rng(8800);
  const Matrix A = random_matrix(storage(DType::bf16, M, K, true), rng);
  const Matrix B = random_matrix(storage(DType::bf16, K, N, false), rng);
  const Matrix bias = random_matrix(storage(DType::bf16, 1, N, true), rng);
  const std::vector<double> acc = reference_ab(A, B);
  Matrix a_late = poisoned(A.st), bias_late = poisoned(bias.st);  // written by the kernel before the GEMM
  int runs = 0;
  for (const GemmKernelEntry* e : sm90)
    for (const auto& [name, launch] : pdl_launches(*e))
      for (bool late_bias : {false, true}) {  // the late operand: A, or the bias (read before the mainloop)
        GemmDesc d;
        d.m = M;
        d.n = N;
        d.k = K;
        d.ab_type = DType::bf16;
        d.a_layout = Layout::row;
        d.b_layout = Layout::col;
        d.lda = A.st.ld;
        d.ldb = B.st.ld;
        d.d_type = DType::bf16;
        d.compute = Compute::f32;
        if (late_bias) d.epilogue = bias_activation(Activation::relu);
        Matrix D = poisoned(storage(DType::bf16, M, N, true, 8)), D2 = poisoned(D.st);
        D.upload();
        D2.upload();
        Matrix& late = late_bias ? bias_late : a_late;
        const Matrix& src = late_bias ? bias : A;
        late.upload();  // poison again
        GemmOperands ops;
        ops.a = late_bias ? A.data() : a_late.data();
        ops.b = B.data();
        ops.bias = late_bias ? bias_late.data() : nullptr;
        ops.d = D.data();
        GemmOptions opt;
        opt.instance = e->name.data();
        opt.launch = launch;
        launch_pdl_delayed_copy(late.dev.ptr, src.dev.ptr, src.st.bytes(), 30'000, s);
        const Status st = gemm(d, ops, s, opt);
        KT_CUDA(launch_pdl_dependent_copy(D2.dev.ptr, D.dev.ptr, D.st.bytes(), s));
        KT_CUDA(cudaStreamSynchronize(s));
        std::ostringstream what;
        what << e->name << " @" << name << (late_bias ? " bias + relu, the bias written late" : " A written late");
        CHECK_MESSAGE(st.ok(), what.str() << ": " << st.to_string());
        if (!st.ok()) continue;
        ++runs;
        const std::vector<double> ref =
            reference_epilogue(acc, M, N, d.epilogue, nullptr, late_bias ? &bias.vals : nullptr, nullptr);
        const Check c = check_output(D, ref), c2 = check_output(D2, ref);
        CHECK_MESSAGE(c.ok(1e-2), what.str() << ": D " << c.summary());
        CHECK_MESSAGE(c2.ok(1e-2), what.str() << ": the dependent's copy of D " << c2.summary());
      }
  KT_CUDA(cudaStreamDestroy(s));
  MESSAGE(runs << " sm90 runs between a late writer and a programmatic dependent");
  CHECK(runs > 0);
}
