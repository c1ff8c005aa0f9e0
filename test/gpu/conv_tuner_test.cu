// GPU tests of conv2d tuning (the runtime tuner with the CUDA conv measuring backend): the tuned
// tactic computes the right result (float64 CPU reference), tuning leaves the caller's y and residual
// untouched (also when the residual aliases y, and with beta != 0), every candidate passes validation,
// a second call is a lookup, capture defers tuning, ktune::conv2d() tunes by default, and a cache file
// written by one tuner is applied by the next.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "conv_problem.hpp"
#include "gpu/conv_util.cuh"
#include "gpu/tuner_log.hpp"
#include "ktune/tuner/conv_cuda_backend.hpp"
#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/tuner.hpp"

using namespace ktconv;
using namespace ktune::tuner;

namespace {

using testing::Logged;

TunerOptions conv_test_options(Logged& log) { return testing::logged_options(log); }

std::unique_ptr<Tuner> conv_tuner(Logged& log) {
  return std::make_unique<Tuner>(std::make_shared<CudaBackend>(), &gemm_table(), conv_test_options(log),
                                 std::make_shared<CudaConvBackend>(), &conv_table());
}

// The caller's tensors of one call: y (random when it is read: beta != 0 or the residual aliases it,
// else poisoned), bias, a residual (or y itself).
struct Call {
  Conv2dDesc d;
  Tensor bias, res, y;
  std::vector<double> y0;
  bool alias = false;
  Conv2dOperands ops;
  Call(const ConvCase& c, const EpilogueSpec& e, bool residual_aliases_y, std::uint64_t seed) : d(c.d), alias(residual_aliases_y) {
    d.epilogue = e;
    Rng rng(seed);
    const ConvShape s = conv_shape(d);
    bias = random_tensor(d.out_type, d.k, rng);
    res = random_tensor(d.out_type, s.y_elems, rng);
    const bool keeps_y = e.beta != 0.0f || alias;
    y = keeps_y ? random_tensor(d.out_type, s.y_elems, rng) : Tensor(d.out_type, s.y_elems);
    if (alias) res.vals = y.vals;
    y0 = y.vals;
    ops.x = c.x.data();
    ops.w = c.w.data();
    ops.y = y.data();
    ops.bias = bias.data();
    ops.residual = alias ? y.data() : res.data();
  }
  std::vector<double> reference(const ConvCase& c) const { return reference_epilogue(d, c.acc, &y0, &bias.vals, &res.vals); }
};

}  // namespace

TEST_CASE("conv tuner GPU: tuning leaves y and the residual untouched; the tuned tactic is correct; the second call is a lookup") {
  struct Named {
    const char* what;
    Conv2dDesc d;
    EpilogueSpec e;
    bool alias;
  };
  EpilogueSpec res_relu = bias_activation(Activation::relu);
  res_relu.residual = true;
  EpilogueSpec beta;
  beta.alpha = 0.75f;
  beta.beta = 0.5f;
  const std::vector<Named> cases = {
      {"3x3 pad 1, M and K not tile multiples, bias+ReLU", ktune::test::conv_problem(2, 9, 11, 64, 40, 3, 3, 1, 1),
       bias_activation(Activation::relu), false},
      {"1x1 (gemm1x1 route on an H200), residual aliasing y", ktune::test::conv_problem(2, 7, 7, 64, 24, 1, 1, 0, 0), res_relu, true},
      {"7x7 stride 2 C=4 stem, bias+ReLU", ktune::test::conv_problem(2, 20, 20, 4, 64, 7, 7, 3, 3, 2, 2),
       bias_activation(Activation::relu), false},
      {"C=5 (scalar analytic only), beta != 0", ktune::test::conv_problem(2, 8, 8, 5, 9, 3, 3, 1, 1), beta, false},
      {"3x3 stride 2, C=72, residual (separate)", ktune::test::conv_problem(2, 11, 10, 72, 56, 3, 3, 1, 1, 2, 2), res_relu, false},
  };
  std::uint64_t seed = 700;
  for (const Named& n : cases) {
    CAPTURE(n.what);
    Logged log;
    auto tuner = conv_tuner(log);
    const ConvCase c(n.d, seed++);
    Call call(c, n.e, n.alias, seed++);
    const std::vector<unsigned char> y_before = call.y.download(), res_before = call.res.download(),
                                     x_before = c.x.download(), w_before = c.w.download();
    cudaStream_t stream = nullptr;
    KTCONV_CUDA(cudaStreamCreate(&stream));
    const ConvTactic* t = nullptr;
    const Status s = tuner->select_conv(call.d, call.ops, stream, t);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    REQUIRE(t != nullptr);
    KTCONV_CUDA(cudaDeviceSynchronize());
    // Nothing the caller owns changed (y is also the residual in the aliasing case).
    CHECK(call.y.download() == y_before);
    CHECK(call.res.download() == res_before);
    CHECK(c.x.download() == x_before);
    CHECK(c.w.download() == w_before);
    REQUIRE(!log.reports.empty());
    const TuningReport r = log.reports.back();
    MESSAGE(log.joined());
    CHECK(r.is_conv());
    CHECK(r.source == Source::tuned);
    CHECK(r.winner == t->name);
    CHECK(r.scratch_bytes > 0);
    // Every instance computes this problem within the f16 tolerance of the reference instance.
    CHECK(r.count(TacticStatus::failed_validation) == 0);
    CHECK(r.count(TacticStatus::failed_launch) == 0);
    CHECK(r.count(TacticStatus::selected) == 1);
    // The winner on the caller's real tensors, against float64.
    const Status run = t->entry->launch(call.d, call.ops, t->launch, stream);
    REQUIRE_MESSAGE(run.ok(), run.to_string());
    KTCONV_CUDA(cudaStreamSynchronize(stream));
    const Check chk = check_output(call.y, call.reference(c), (n.alias || n.e.beta != 0.0f) ? &call.y0 : nullptr);
    CHECK_MESSAGE(chk.ok(tolerance(call.d.out_type)), t->name << ": " << chk.summary());
    // The second call is a lookup: same tactic, nothing measured.
    const auto before = tuner->counters();
    const ConvTactic* again = nullptr;
    REQUIRE(tuner->select_conv(call.d, call.ops, stream, again).ok());
    CHECK(again == t);
    CHECK(tuner->counters().tunings == before.tunings);
    CHECK(tuner->counters().misses == before.misses);
    CHECK(tuner->counters().tunings == 1);
    KTCONV_CUDA(cudaStreamDestroy(stream));
  }
}

TEST_CASE("conv tuner GPU: while capturing nothing is measured; the heuristic choice runs in the graph; tune_pending tunes") {
  Logged log;
  auto tuner = conv_tuner(log);
  const ConvCase c(ktune::test::conv_problem(2, 9, 9, 32, 32, 3, 3, 1, 1), 801);
  Call call(c, bias_activation(Activation::relu), false, 802);
  cudaStream_t stream = nullptr;
  KTCONV_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  KTCONV_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const ConvTactic* t = nullptr;
  const Status s = tuner->select_conv(call.d, call.ops, stream, t);
  Status launched;
  if (s.ok() && t) (void)(launched = t->entry->launch(call.d, call.ops, t->launch, stream));
  KTCONV_CUDA(cudaStreamEndCapture(stream, &graph));
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(t != nullptr);
  REQUIRE_MESSAGE(launched.ok(), launched.to_string());
  CHECK(tuner->counters().tunings == 0);
  CHECK(tuner->pending_count() == 1);
  const ConvKernelEntry* heuristic = nullptr;
  DeviceInfo dev;
  REQUIRE(current_device(dev).ok());
  REQUIRE(select_conv(call.d, call.ops, conv_table(), dev, {}, heuristic).ok());
  CHECK(t->entry == heuristic);
  cudaGraphExec_t exec = nullptr;
  KTCONV_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  KTCONV_CUDA(cudaGraphLaunch(exec, stream));
  KTCONV_CUDA(cudaStreamSynchronize(stream));
  const Check chk = check_output(call.y, call.reference(c));
  CHECK_MESSAGE(chk.ok(tolerance(DType::f16)), chk.summary());
  std::size_t n = 0;
  REQUIRE(tuner->tune_pending(&n).ok());
  CHECK(n == 1);
  CHECK(tuner->counters().tunings == 1);
  CHECK(tuner->lookup_conv(call.d, call.ops) != nullptr);
  KTCONV_CUDA(cudaGraphExecDestroy(exec));
  KTCONV_CUDA(cudaGraphDestroy(graph));
  KTCONV_CUDA(cudaStreamDestroy(stream));
}

TEST_CASE("conv tuner GPU: ktune::conv2d tunes by default, then looks up; opt.heuristic and opt.instance bypass the tuner") {
  // A shape no other test uses, so the process-wide tuner has not seen its key.
  const ConvCase c(ktune::test::conv_problem(3, 13, 12, 48, 40, 3, 3, 1, 1), 901);
  Call call(c, bias_activation(Activation::relu), false, 902);
  const auto before = default_tuner().counters();
  REQUIRE(default_tuner().lookup_conv(call.d, call.ops) == nullptr);
  const Status s = conv2d(call.d, call.ops);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  KTCONV_CUDA(cudaDeviceSynchronize());
  const auto mid = default_tuner().counters();
  const ConvTactic* t = default_tuner().lookup_conv(call.d, call.ops);
  REQUIRE(t != nullptr);
  // KTUNE_TUNING=heuristic or off in the environment: decided without measuring.
  CHECK(mid.tunings + mid.heuristic + mid.from_cache > before.tunings + before.heuristic + before.from_cache);
  const Check chk = check_output(call.y, call.reference(c));
  CHECK_MESSAGE(chk.ok(tolerance(DType::f16)), t->name << ": " << chk.summary());
  // Second call: a lookup.
  REQUIRE(conv2d(call.d, call.ops).ok());
  KTCONV_CUDA(cudaDeviceSynchronize());
  const auto after = default_tuner().counters();
  CHECK(after.tunings == mid.tunings);
  CHECK(after.misses == mid.misses);
  // The heuristic and a named instance still run (and are correct).
  ConvOptions h;
  h.heuristic = true;
  REQUIRE(conv2d(call.d, call.ops, nullptr, h).ok());
  KTCONV_CUDA(cudaDeviceSynchronize());
  const Check chk_h = check_output(call.y, call.reference(c));
  CHECK_MESSAGE(chk_h.ok(tolerance(DType::f16)), chk_h.summary());
  ConvOptions named;
  const std::string name(t->entry->name);
  named.instance = name.c_str();
  REQUIRE(conv2d(call.d, call.ops, nullptr, named).ok());
  KTCONV_CUDA(cudaDeviceSynchronize());
  CHECK(default_tuner().counters().misses == mid.misses);
}

TEST_CASE("conv tuner GPU: a cache file written by one tuner is used by the next without re-tuning") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ktune_conv_tuner_test_" + std::to_string(::getpid()) + ".ktune"))
                               .string();
  std::filesystem::remove(path);
  const ConvCase c(ktune::test::conv_problem(2, 10, 10, 32, 48, 3, 3, 1, 1), 1001);
  Call call(c, bias_activation(Activation::relu), false, 1002);
  std::string winner;
  {
    Logged log;
    TunerOptions o = conv_test_options(log);
    o.cache_path = path;
    Tuner t(std::make_shared<CudaBackend>(), &gemm_table(), o, std::make_shared<CudaConvBackend>(), &conv_table());
    const ConvTactic* w = nullptr;
    REQUIRE(t.select_conv(call.d, call.ops, nullptr, w).ok());
    REQUIRE(w != nullptr);
    winner = w->name;
    CHECK(t.counters().tunings == 1);
  }
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"op\":\"conv2d\"") != std::string::npos);
  CHECK(text.find(winner.substr(0, winner.find('@'))) != std::string::npos);
  {
    Logged log;
    TunerOptions o = conv_test_options(log);
    o.cache_path = path;
    Tuner t(std::make_shared<CudaBackend>(), &gemm_table(), o, std::make_shared<CudaConvBackend>(), &conv_table());
    const ConvTactic* w = nullptr;
    REQUIRE(t.select_conv(call.d, call.ops, nullptr, w).ok());
    REQUIRE(w != nullptr);
    CHECK(w->name == winner);
    CHECK(t.counters().tunings == 0);
    CHECK(t.counters().from_cache == 1);
    REQUIRE(w->entry->launch(call.d, call.ops, w->launch, nullptr).ok());
    KTCONV_CUDA(cudaDeviceSynchronize());
    const Check chk = check_output(call.y, call.reference(c));
    CHECK_MESSAGE(chk.ok(tolerance(DType::f16)), chk.summary());
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".lock");
}
