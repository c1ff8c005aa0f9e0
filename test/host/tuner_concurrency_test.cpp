// Many threads and one tuner: each key is tuned exactly once, different keys proceed, readers never
// see a half-published winner. Meant to run under ThreadSanitizer too.
#include <doctest/doctest.h>

#include <barrier>
#include <set>
#include <thread>

#include "tuner_fake.hpp"

using namespace ktune_test;

namespace {
struct Rig {
  GemmTable table;
  std::shared_ptr<FakeBackend> backend = std::make_shared<FakeBackend>();
  std::unique_ptr<Tuner> tuner;
  explicit Rig(TunerOptions o = quiet_options()) {
    fill_table(table);
    tuner = std::make_unique<Tuner>(backend, &table, std::move(o));
  }
};
constexpr int kThreads = 8;
}  // namespace

TEST_CASE("tuner concurrency: N threads calling the same new key tune it once and agree") {
  Rig rig;
  rig.backend->begin_sleep_ms = 30;  // keep the tuning window open while the others arrive
  const Problem p = f16_problem(1536, 1536, 1536);
  std::vector<const GemmKernelEntry*> got(kThreads, nullptr);
  std::vector<int> ok(kThreads, 0);
  std::barrier start(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      start.arrive_and_wait();
      const GemmKernelEntry* e = nullptr;
      ok[static_cast<std::size_t>(t)] = rig.tuner->select(p.desc, p.ops, nullptr, e).ok();
      got[static_cast<std::size_t>(t)] = e;
    });
  for (auto& t : ts) t.join();
  CHECK(rig.backend->begins.load() == 1);
  CHECK(rig.tuner->counters().tunings == 1);
  for (int t = 0; t < kThreads; ++t) {
    CHECK(ok[static_cast<std::size_t>(t)]);
    CHECK(got[static_cast<std::size_t>(t)] != nullptr);
    CHECK(got[static_cast<std::size_t>(t)] == got[0]);
  }
}

TEST_CASE("tuner concurrency: different keys each tune once; measurements on a device never overlap") {
  Rig rig;
  rig.backend->begin_sleep_ms = 5;
  constexpr int keys = 12, rounds = 3;
  std::barrier start(kThreads);
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < keys; ++i) {
          const int k = (i + t) % keys;  // threads visit keys in different orders
          const Problem p = f16_problem(64 * (k + 1), 512, 512);
          const GemmKernelEntry* e = nullptr;
          if (!rig.tuner->select(p.desc, p.ops, nullptr, e).ok() || e == nullptr) failures.fetch_add(1);
        }
    });
  for (auto& t : ts) t.join();
  CHECK(failures.load() == 0);
  CHECK(rig.backend->begins.load() == keys);
  CHECK(rig.backend->max_active_sessions.load() == 1);  // per-device benchmark serialisation
  std::set<std::string> problems(rig.backend->begun_problems.begin(), rig.backend->begun_problems.end());
  CHECK(problems.size() == keys);
  CHECK(rig.tuner->cache_snapshot().size() == keys);
}

TEST_CASE("tuner concurrency: hits, misses, reset, pending and saves interleave without races") {
  TempDir dir;
  TunerOptions o = quiet_options();
  o.cache_path = dir.file("c.ktune");
  Rig rig(o);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<int> capture_calls{0};
  // Capture decided per stream: odd "streams" are capturing.
  rig.backend->capture_predicate = [](cudaStream_t s) { return (reinterpret_cast<std::uintptr_t>(s) & 1) != 0; };
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      int i = 0;
      while (!stop.load()) {
        const int k = (i++ * 7 + t) % 20;
        const Problem p = f16_problem(32 * (k + 1), 256, 256);
        const auto stream = reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>((t % 3 == 0) ? 1 : 2));
        if (t % 3 == 0) capture_calls.fetch_add(1);
        const GemmKernelEntry* e = nullptr;
        if (!rig.tuner->select(p.desc, p.ops, stream, e).ok() || e == nullptr) failures.fetch_add(1);
        (void)rig.tuner->lookup(p.desc, p.ops);
      }
    });
  std::thread admin([&] {
    for (int r = 0; r < 20; ++r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (r % 5 == 0) rig.tuner->reset();
      (void)rig.tuner->tune_pending();
      (void)rig.tuner->save_cache();
      (void)rig.tuner->pending_count();
      (void)rig.tuner->counters();
      TunerOptions x = rig.tuner->options();
      x.tie_band = r % 2 ? 0.01 : 0.02;
      rig.tuner->set_options(x);
    }
    stop.store(true);
  });
  admin.join();
  for (auto& t : ts) t.join();
  CHECK(failures.load() == 0);
  CHECK(capture_calls.load() > 0);
  // (A key being measured while reset() runs may be measured twice; otherwise the in-memory cache
  // answers after a reset. So: every key at most a few times, and each ends up in the cache once.)
  std::set<std::string> problems(rig.backend->begun_problems.begin(), rig.backend->begun_problems.end());
  CHECK(problems.size() <= 20);
  CHECK(rig.backend->begun_problems.size() <= 20 + 4 * 8);
  CHECK(rig.tuner->cache_snapshot().size() == problems.size());
  CacheStore disk;
  std::vector<std::string> w;
  REQUIRE(load_cache_file(o.cache_path, disk, w).ok());
  CHECK(w.empty());
  CHECK(disk.size() == rig.tuner->cache_snapshot().size());
}

TEST_CASE("tuner concurrency: a capturing call does not wait for another thread tuning the same key") {
  Rig rig;
  rig.backend->begin_sleep_ms = 300;
  const Problem p = f16_problem(999, 1000, 1000);
  cudaStream_t cap_stream = reinterpret_cast<cudaStream_t>(0x1);
  rig.backend->capture_predicate = [&](cudaStream_t s) { return s == cap_stream; };
  std::thread tuner_thread([&] {
    const GemmKernelEntry* e = nullptr;
    CHECK(rig.tuner->select(p.desc, p.ops, nullptr, e).ok());
  });
  while (rig.backend->begins.load() == 0) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  const GemmKernelEntry* e = nullptr;
  CHECK(rig.tuner->select(p.desc, p.ops, cap_stream, e).ok());
  const double waited = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(e != nullptr);
  CHECK(waited < 250);  // the tuning thread holds the key for ≥ 300 ms
  tuner_thread.join();
  CHECK(rig.backend->begins.load() == 1);
}
