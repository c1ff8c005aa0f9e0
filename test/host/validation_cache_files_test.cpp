// Host tests: tuning-cache files that are not what they should be — a directory, a FIFO, a file too
// large to read, a missing directory, a file cut at every byte, a file with every byte garbled — give a
// clear error or warning, never a hang, a crash or a wrong entry; and a tuner configured with such a
// path still tunes. (Malformed lines, foreign and newer formats, other devices and builds:
// tuner_cache_test.cpp and tuner_logic_test.cpp.)
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tuner_fake.hpp"

using namespace ktune_test;

namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

CacheEntry sample_entry(std::int64_t m, const std::string& instance, double ms) {
  CacheEntry e;
  const Problem p = f16_problem(m, 512, 256);
  e.key = make_key(p.desc, alignment_of(p.desc, p.ops));
  e.id = CacheIdentity{"Fake H200 #0|cc90|sm132|l2:62914560|drv13000|rt13000", std::string(ktune_version), "0123456789abcdef"};
  e.instance = instance;
  e.ms = ms;
  e.tflops = 1.0;
  return e;
}

// A well-formed three-entry file, and its entries' lines.
struct GoodFile {
  std::vector<std::string> lines;
  std::string text;
  GoodFile() {
    text = header_line() + "\n";
    for (int i = 0; i < 3; ++i) {
      lines.push_back(to_line(sample_entry(256 << i, name_of(default_configs()[static_cast<std::size_t>(i)]), 0.01 * (i + 1))));
      text += lines.back() + "\n";
    }
  }
};

// Run `f` in a child process; false when it is still running after `seconds` (the child is killed).
template <class F>
bool finishes_within(double seconds, F f, int* exit_code = nullptr) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::_exit(f());
  }
  REQUIRE(pid > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return false;
}

// A tuner on the fake backend and table with `path` as its cache.
struct CacheFixture {
  GemmTable table;
  std::shared_ptr<FakeBackend> backend = std::make_shared<FakeBackend>();
  Capture cap;
  std::unique_ptr<Tuner> tuner;
  explicit CacheFixture(const std::string& path) {
    fill_table(table);
    TunerOptions o = quiet_options(&cap);
    o.cache_path = path;
    tuner = std::make_unique<Tuner>(backend, &table, std::move(o));
  }
  bool logged(const std::string& what) {
    std::lock_guard lock(cap.mu);
    for (const auto& l : cap.logs)
      if (contains(l, what)) return true;
    return false;
  }
};

}  // namespace

TEST_CASE("cache files: a missing file is an empty cache, silently") {
  TempDir dir;
  CacheStore s;
  std::vector<std::string> w;
  CacheFileKind kind{};
  CHECK(load_cache_file(dir.file("none.ktune"), s, w, &kind).ok());
  CHECK(s.empty());
  CHECK(w.empty());
  CHECK(kind == CacheFileKind::empty);
}

TEST_CASE("cache files: a directory is not read and not replaced; the tuner tunes without it") {
  TempDir dir;
  const std::string path = dir.file("cache.ktune");
  std::filesystem::create_directories(path);
  CacheStore s;
  std::vector<std::string> w;
  const Status st = load_cache_file(path, s, w);
  CAPTURE(st.to_string());
  CHECK(st.code() == StatusCode::cache_error);
  CHECK(contains(st.message(), "not a regular file"));
  REQUIRE(w.size() == 1);
  CHECK(contains(w[0], path));
  CHECK(contains(w[0], "tuning proceeds without it"));
  s.insert(sample_entry(64, "x", 1.0));
  w.clear();
  CHECK_FALSE(save_cache_file(path, s, w).ok());
  CHECK(std::filesystem::is_directory(path));
  CacheFixture f(path);
  const GemmKernelEntry* e = nullptr;
  const Problem p = f16_problem();
  CHECK(f.tuner->select(p.desc, p.ops, nullptr, e).ok());
  CHECK(e != nullptr);
  CHECK(f.backend->begins.load() == 1);
  CHECK(f.logged("not a regular file"));
}

TEST_CASE("cache files: a FIFO (or other special file) never blocks the reader") {
  TempDir dir;
  const std::string path = dir.file("fifo.ktune");
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  int code = -1;
  // No writer ever opens the FIFO: a blocking open() would never return.
  const bool finished = finishes_within(
      10.0,
      [&] {
        CacheStore s;
        std::vector<std::string> w;
        const Status st = load_cache_file(path, s, w);
        return st.code() == StatusCode::cache_error && s.empty() && !w.empty() ? 0 : 1;
      },
      &code);
  CHECK_MESSAGE(finished, "load_cache_file blocked on a FIFO (open without O_NONBLOCK)");
  if (finished) CHECK(code == 0);
}

TEST_CASE("cache files: a file larger than the limit is not read") {
  TempDir dir;
  const std::string path = dir.file("huge.ktune");
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(cache_max_file_bytes) + 1) == 0);  // sparse: no disk used
    ::close(fd);
  }
  CacheStore s;
  std::vector<std::string> w;
  const Status st = load_cache_file(path, s, w);
  CAPTURE(st.to_string());
  CHECK(st.code() == StatusCode::cache_error);
  CHECK(contains(st.message(), "larger than 64 MiB"));
  CHECK(s.empty());
}

TEST_CASE("cache files: saving into a directory that does not exist fails with the path, nothing created") {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/cache.ktune");
  CacheStore s;
  s.insert(sample_entry(64, name_of(default_configs()[0]), 1.0));
  std::vector<std::string> w;
  const Status st = save_cache_file(path, s, w, 0.5);
  CAPTURE(st.to_string());
  CHECK_FALSE(st.ok());
  CHECK(st.code() == StatusCode::cache_error);
  CHECK(contains(st.message(), "no/such/dir"));
  CHECK_FALSE(std::filesystem::exists(dir.file("no")));
}

TEST_CASE("cache files: a file cut at every byte loads only whole lines, each exactly as written") {
  const GoodFile g;
  std::set<std::string> originals(g.lines.begin(), g.lines.end());
  for (std::size_t cut = 0; cut <= g.text.size(); ++cut) {
    CAPTURE(cut);
    const CacheParseResult r = parse_cache_text(std::string_view(g.text).substr(0, cut), "cut");
    // Lines complete before the cut (a final line without its newline is complete when nothing is missing).
    std::size_t complete = 0, pos = g.text.find('\n') + 1;
    for (const std::string& l : g.lines) {
      if (cut >= pos + l.size()) ++complete;
      pos += l.size() + 1;
    }
    const bool header_complete = cut >= g.text.find('\n');
    CHECK(r.store.size() == (header_complete ? complete : 0));
    for (const CacheEntry* e : r.store.entries()) CHECK(originals.count(to_line(*e)) == 1);
  }
}

TEST_CASE("cache files: every byte garbled, one at a time: no crash, and what loads is well-formed") {
  const GoodFile g;
  const std::set<std::string> originals(g.lines.begin(), g.lines.end());
  std::size_t changed_entries = 0;
  for (std::size_t i = 0; i < g.text.size(); ++i)
    for (unsigned char v : {0x00, 0x22, 0x7b, 0x7d, 0x2c, 0x39, 0x80, 0xff}) {
      std::string t = g.text;
      if (static_cast<unsigned char>(t[i]) == v) continue;
      t[i] = static_cast<char>(v);
      const CacheParseResult r = parse_cache_text(t, "garbled");
      CHECK(r.store.size() <= g.lines.size());
      for (const CacheEntry* e : r.store.entries()) {
        // Accepted entries are those of the file, or (a changed digit) another well-formed entry that
        // round-trips through its own line.
        const std::string line = to_line(*e);
        if (originals.count(line) == 0) ++changed_entries;
        CacheEntry back;
        std::string why;
        CHECK_MESSAGE(parse_entry_line(line, back, why), why);
        CHECK(to_line(back) == line);
      }
    }
  MESSAGE(changed_entries << " garbled files still held a (different, well-formed) entry");
}
