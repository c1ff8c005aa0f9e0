// The persistent cache: line round trip, merge semantics, atomic locked save, and a corpus of
// malformed files that must never crash the reader nor yield a wrong entry.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "tuner_fake.hpp"

using namespace ktune_test;

namespace {

CacheIdentity ident(std::string dev = "Fake H200 #0|cc90|sm132|l2:62914560|drv13000|rt13000") {
  return CacheIdentity{std::move(dev), std::string(ktune_version), "0123456789abcdef"};
}

CacheEntry entry(std::int64_t m, std::string instance, double ms, CacheIdentity id = ident()) {
  CacheEntry e;
  Problem p = f16_problem(m, 1024, 1024);
  e.key = make_key(p.desc, alignment_of(p.desc, p.ops));
  e.id = std::move(id);
  e.instance = std::move(instance);
  e.ms = ms;
  e.tflops = 2.0 * double(m) * 1024 * 1024 / (ms * 1e9);
  return e;
}

const std::string kGood =
    R"({"op":"gemm","ab":"f16","d":"f16","math":"mma_f16","a":"row","b":"col","epilogue":"identity","m":1024,"n":1024,"k":1024,"batch":1,"m_bucket":"exact","align_a":8,"align_b":8,"align_d":8,"instance":"ktune_gemm_sm80_f16_tn_128x128x32_w64x64_s4_a8","ms":0.05,"tflops":42.9,"device":"dev","ktune":"0.1.0","families":"abc"})";

std::string with(std::string line, const std::string& from, const std::string& to) {
  const auto pos = line.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, from);
  line.replace(pos, from.size(), to);
  return line;
}

}  // namespace

TEST_CASE("tuner cache: an entry survives the line round trip") {
  CacheEntry e = entry(4096, "ktune_gemm_sm80_f16_tn_128x256x32_w64x64_s4_a8", 0.1912345678901);
  e.key.epi_flags = epi::beta | epi::bias | epi::clamp;
  e.key.activation = Activation::gelu_erf;
  e.key.m_bucketing = MBucketing::pow2;
  e.key.align_d = 2;
  e.id.device = "NVIDIA H200 \"quoted\" \\ name";
  const std::string line = to_line(e);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("\"epilogue\":\"ab_bias_gelu_erf_clamp\"") != std::string::npos);
  CacheEntry back;
  std::string why;
  REQUIRE_MESSAGE(parse_entry_line(line, back, why), why);
  CHECK(back.key == e.key);
  CHECK(back.id == e.id);
  CHECK(back.instance == e.instance);
  CHECK(back.ms == e.ms);
  CHECK(back.tflops == e.tflops);
  CHECK(to_line(back) == line);
  REQUIRE(parse_entry_line(kGood, back, why));
  // tflops is optional (derived from ms).
  REQUIRE(parse_entry_line(with(kGood, R"(,"tflops":42.9)", ""), back, why));
  CHECK(back.tflops == doctest::Approx(2.0 * 1024 * 1024 * 1024 / 0.05e9));
}

TEST_CASE("tuner cache: merge keeps the faster entry per key and identity, in any order") {
  CacheStore a, b;
  a.insert(entry(1024, "inst_a", 2.0));
  a.insert(entry(2048, "inst_a", 1.0));
  b.insert(entry(1024, "inst_b", 1.5));   // faster: wins
  b.insert(entry(2048, "inst_b", 3.0));   // slower: loses
  b.insert(entry(4096, "inst_b", 1.0));   // new key
  b.insert(entry(1024, "inst_c", 0.5, ident("other GPU")));  // another device: kept separately
  CacheStore ab = a, ba = b;
  ab.merge(b);
  ba.merge(a);
  CHECK(ab.size() == 4);
  CHECK(ab.serialize() == ba.serialize());  // commutative
  const ProblemKey k1024 = entry(1024, "", 1).key;
  REQUIRE(ab.find(k1024, ident()) != nullptr);
  CHECK(ab.find(k1024, ident())->instance == "inst_b");
  CHECK(ab.find(entry(2048, "", 1).key, ident())->instance == "inst_a");
  CHECK(ab.find(k1024, ident("other GPU"))->instance == "inst_c");
  // Equal times: the smaller name wins regardless of order.
  CacheStore x, y;
  x.insert(entry(64, "zz", 1.0));
  x.insert(entry(64, "aa", 1.0));
  y.insert(entry(64, "aa", 1.0));
  y.insert(entry(64, "zz", 1.0));
  CHECK(x.find(entry(64, "", 1).key, ident())->instance == "aa");
  CHECK(y.find(entry(64, "", 1).key, ident())->instance == "aa");
  // Applicability.
  CacheStore m = ab;
  CacheIdentity other_version = ident();
  other_version.version = "9.9.9";
  m.insert(entry(8192, "inst", 1.0, other_version));
  const auto app = m.applicability(ident());
  CHECK(app.applicable == 3);
  CHECK(app.other_device == 1);
  CHECK(app.other_version == 1);
}

TEST_CASE("tuner cache: a file round trip through save and load") {
  TempDir dir;
  const std::string path = dir.file("cache.ktune");
  CacheStore s;
  for (int i = 1; i <= 20; ++i) s.insert(entry(64 * i, "inst_" + std::to_string(i), 0.01 * i));
  std::vector<std::string> warnings;
  REQUIRE(save_cache_file(path, s, warnings).ok());
  CHECK(warnings.empty());
  const std::string text = read_text(path);
  CHECK(text.rfind(header_line() + "\n", 0) == 0);
  CacheStore back;
  CacheFileKind kind{};
  REQUIRE(load_cache_file(path, back, warnings, &kind).ok());
  CHECK(warnings.empty());
  CHECK(kind == CacheFileKind::cache);
  CHECK(back.serialize() == s.serialize());
  // No temp files left behind; the lock file may remain.
  for (const auto& f : std::filesystem::directory_iterator(dir.path))
    CHECK(f.path().filename().string().find(".tmp.") == std::string::npos);
  // A missing file loads as empty without warnings.
  CacheStore none;
  REQUIRE(load_cache_file(dir.file("missing.ktune"), none, warnings).ok());
  CHECK(none.empty());
  CHECK(warnings.empty());
}

TEST_CASE("tuner cache: save merges with what another writer saved meanwhile") {
  TempDir dir;
  const std::string path = dir.file("cache.ktune");
  CacheStore p1, p2;
  p1.insert(entry(128, "p1", 1.0));
  p1.insert(entry(256, "p1", 1.0));
  p2.insert(entry(256, "p2", 0.5));  // faster than p1's
  p2.insert(entry(512, "p2", 1.0));
  std::vector<std::string> w;
  REQUIRE(save_cache_file(path, p1, w).ok());
  REQUIRE(save_cache_file(path, p2, w).ok());  // p2 never loaded p1's file, but loses nothing of it
  CacheStore disk;
  REQUIRE(load_cache_file(path, disk, w).ok());
  CHECK(disk.size() == 3);
  CHECK(disk.find(entry(128, "", 1).key, ident())->instance == "p1");
  CHECK(disk.find(entry(256, "", 1).key, ident())->instance == "p2");
  CHECK(p2.size() == 3);  // the saver also learned the other writer's entries
  // A later save by p1 with a slower entry for 256 does not undo p2's faster one.
  REQUIRE(save_cache_file(path, p1, w).ok());
  CacheStore again;
  REQUIRE(load_cache_file(path, again, w).ok());
  CHECK(again.find(entry(256, "", 1).key, ident())->instance == "p2");
}

TEST_CASE("tuner cache: concurrent writers (threads and processes) lose no entries") {
  TempDir dir;
  const std::string path = dir.file("cache.ktune");
  constexpr int writers = 4, per_writer = 10;
  // Threads: each its own store, each saving after every insert.
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < writers; ++t)
      ts.emplace_back([&, t] {
        CacheStore mine;
        std::vector<std::string> w;
        for (int i = 0; i < per_writer; ++i) {
          mine.insert(entry(1 + t * per_writer + i, "thread" + std::to_string(t), 1.0));
          (void)save_cache_file(path, mine, w);
        }
      });
    for (auto& t : ts) t.join();
    CacheStore disk;
    std::vector<std::string> w;
    REQUIRE(load_cache_file(path, disk, w).ok());
    CHECK(w.empty());
    CHECK(disk.size() == writers * per_writer);
  }
  // Processes: fork writers that save concurrently into the same file.
  const std::string ppath = dir.file("procs.ktune");
  std::vector<pid_t> kids;
  for (int t = 0; t < writers; ++t) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      CacheStore mine;
      std::vector<std::string> w;
      bool ok = true;
      for (int i = 0; i < per_writer; ++i) {
        mine.insert(entry(1000 + t * per_writer + i, "proc" + std::to_string(t), 1.0));
        ok &= save_cache_file(ppath, mine, w).ok();
      }
      ::_exit(ok ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    REQUIRE(::waitpid(k, &status, 0) == k);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CacheStore disk;
  std::vector<std::string> w;
  REQUIRE(load_cache_file(ppath, disk, w).ok());
  CHECK(w.empty());
  CHECK(disk.size() == writers * per_writer);
}

TEST_CASE("tuner cache: a foreign or newer-format file is neither applied nor overwritten") {
  TempDir dir;
  for (const std::string& content : {std::string("my important notes\nline 2\n"),
                                     std::string(R"({"format":"ktune-cache","version":99})") + "\n" + kGood + "\n",
                                     std::string(R"({"format":"other-tool","version":1})") + "\n"}) {
    CAPTURE(content);
    const std::string path = dir.file("f.ktune");
    write_text(path, content);
    CacheStore s;
    std::vector<std::string> w;
    CacheFileKind kind{};
    CHECK(load_cache_file(path, s, w, &kind).ok());
    CHECK(s.empty());
    CHECK_FALSE(w.empty());
    CHECK((kind == CacheFileKind::foreign || kind == CacheFileKind::newer_format));
    s.insert(entry(64, "x", 1.0));
    w.clear();
    CHECK_FALSE(save_cache_file(path, s, w).ok());
    CHECK(read_text(path) == content);
  }
}

// The malformed-file corpus. Each case: file text, how many entries must load, and whether the file
// may be overwritten. Every good line that loads is checked to be exactly kGood's entry.
TEST_CASE("tuner cache: malformed corpus never crashes and never yields a wrong entry") {
  const std::string H = header_line() + "\n";
  const std::string G = kGood + "\n";
  struct Case {
    const char* what;
    std::string text;
    std::size_t entries;
    bool writable;
  };
  std::string binary(300, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>((i * 131 + 7) & 0xff);
  std::string long_line = H + "{\"op\":\"" + std::string(70000, 'x') + "\"}\n" + G;
  const std::vector<Case> corpus = {
      {"empty file", "", 0, true},
      {"only whitespace", "\n  \n\t\n", 0, true},
      {"header only", H, 0, true},
      {"no header", G, 0, false},
      {"binary garbage", binary, 0, false},
      {"binary after header", H + binary + "\n" + G, 1, true},
      {"truncated mid-line", H + G + kGood.substr(0, kGood.size() / 2), 1, true},
      {"truncated header", std::string(R"({"format":"ktune-ca)"), 0, false},
      {"header without version", "{\"format\":\"ktune-cache\"}\n" + G, 0, false},
      {"header version as string", "{\"format\":\"ktune-cache\",\"version\":\"1\"}\n" + G, 0, false},
      {"header version 0", "{\"format\":\"ktune-cache\",\"version\":0}\n" + G, 0, false},
      {"newer format version", "{\"format\":\"ktune-cache\",\"version\":7}\n" + G, 0, false},
      {"a JSON array line", H + "[1,2,3]\n" + G, 1, true},
      {"missing instance", H + with(kGood, R"("instance":"ktune_gemm_sm80_f16_tn_128x128x32_w64x64_s4_a8",)", "") + "\n" + G, 1, true},
      {"negative m", H + with(kGood, "\"m\":1024", "\"m\":-1024") + "\n" + G, 1, true},
      {"zero k", H + with(kGood, "\"k\":1024", "\"k\":0") + "\n", 0, true},
      {"m too large", H + with(kGood, "\"m\":1024", "\"m\":4294967296") + "\n", 0, true},
      {"m as float", H + with(kGood, "\"m\":1024", "\"m\":1024.5") + "\n", 0, true},
      {"m as string", H + with(kGood, "\"m\":1024", "\"m\":\"1024\"") + "\n", 0, true},
      {"ms negative", H + with(kGood, "\"ms\":0.05", "\"ms\":-0.05") + "\n", 0, true},
      {"ms zero", H + with(kGood, "\"ms\":0.05", "\"ms\":0") + "\n", 0, true},
      {"ms overflows", H + with(kGood, "\"ms\":0.05", "\"ms\":1e999") + "\n", 0, true},
      {"unknown dtype", H + with(kGood, "\"ab\":\"f16\"", "\"ab\":\"f8\"") + "\n", 0, true},
      {"math inconsistent with dtype", H + with(kGood, "\"math\":\"mma_f16\"", "\"math\":\"mma_bf16\"") + "\n", 0, true},
      {"unknown layout", H + with(kGood, "\"a\":\"row\"", "\"a\":\"diag\"") + "\n", 0, true},
      {"unknown epilogue", H + with(kGood, "\"epilogue\":\"identity\"", "\"epilogue\":\"softmax\"") + "\n", 0, true},
      {"alignment not a power of two", H + with(kGood, "\"align_a\":8", "\"align_a\":3") + "\n", 0, true},
      {"alignment too wide for f16", H + with(kGood, "\"align_b\":8", "\"align_b\":16") + "\n", 0, true},
      {"pow2 bucket with non-power m", H + with(with(kGood, "\"m_bucket\":\"exact\"", "\"m_bucket\":\"pow2\""), "\"m\":1024", "\"m\":1000") + "\n" + G, 1, true},
      {"unknown op", H + with(kGood, "\"op\":\"gemm\"", "\"op\":\"conv\"") + "\n", 0, true},
      {"instance with path characters", H + with(kGood, "\"instance\":\"ktune_gemm", "\"instance\":\"../../etc/passwd ktune_gemm") + "\n", 0, true},
      {"duplicate member", H + with(kGood, "\"m\":1024,", "\"m\":1024,\"m\":2048,") + "\n", 0, true},
      {"trailing comma", H + with(kGood, "\"families\":\"abc\"}", "\"families\":\"abc\",}") + "\n" + G, 1, true},
      {"two objects on one line", H + kGood + kGood + "\n", 0, true},
      {"line too long", long_line, 1, true},
      {"CRLF line endings", "{\"format\":\"ktune-cache\",\"version\":1}\r\n" + kGood + "\r\n", 1, true},
      {"UTF-8 BOM", "\xEF\xBB\xBF" + H + G, 1, true},
      {"interior NUL", H + kGood.substr(0, 20) + std::string(1, '\0') + kGood.substr(20) + "\n" + G, 1, true},
      {"conflicting duplicate lines: faster wins", H + with(kGood, "\"ms\":0.05", "\"ms\":0.5") + "\n" + G, 1, true},
      {"second header in the middle (concatenated files)", H + G + H + G, 1, true},
      {"foreign header in the middle", H + "{\"format\":\"other\",\"version\":1}\n" + G, 1, true},
      {"unknown extra member is ignored", H + with(kGood, "\"ktune\":", "\"comment\":\"hi\",\"ktune\":") + "\n", 1, true},
      {"missing device", H + with(kGood, ",\"device\":\"dev\"", "") + "\n", 0, true},
      {"control character in device", H + with(kGood, "\"device\":\"dev\"", "\"device\":\"d\\u0001ev\"") + "\n", 0, true},
      {"nested garbage", H + "{\"op\":{\"op\":{\"op\":[[[[]]]]}}}\n" + G, 1, true},
      {"version 1 file (before tactics) still loads", "{\"format\":\"ktune-cache\",\"version\":1}\n" + G, 1, true},
      {"launch: unknown knob", H + with(kGood, "\"ms\":", "\"launch\":\"turbo2\",\"ms\":") + "\n" + G, 1, true},
      {"launch: split count 1", H + with(kGood, "\"ms\":", "\"launch\":\"split1s\",\"ms\":") + "\n" + G, 1, true},
      {"launch: split count too large", H + with(kGood, "\"ms\":", "\"launch\":\"split257s\",\"ms\":") + "\n" + G, 1, true},
      {"launch: cluster 3", H + with(kGood, "\"ms\":", "\"launch\":\"cl3\",\"ms\":") + "\n" + G, 1, true},
      {"launch: not canonical order", H + with(kGood, "\"ms\":", "\"launch\":\"cl2@split4s\",\"ms\":") + "\n" + G, 1, true},
      {"launch: leading zero", H + with(kGood, "\"ms\":", "\"launch\":\"split04s\",\"ms\":") + "\n" + G, 1, true},
      {"launch: trailing @", H + with(kGood, "\"ms\":", "\"launch\":\"split4s@\",\"ms\":") + "\n" + G, 1, true},
      {"launch: empty string", H + with(kGood, "\"ms\":", "\"launch\":\"\",\"ms\":") + "\n" + G, 1, true},
      {"launch: not a string", H + with(kGood, "\"ms\":", "\"launch\":4,\"ms\":") + "\n" + G, 1, true},
  };
  CHECK(corpus.size() >= 20);
  CacheEntry good;
  std::string why;
  REQUIRE(parse_entry_line(kGood, good, why));
  for (const Case& c : corpus) {
    CAPTURE(c.what);
    CacheParseResult r = parse_cache_text(c.text, "corpus");
    CHECK(r.store.size() == c.entries);
    CHECK(r.writable() == c.writable);
    for (const CacheEntry* e : r.store.entries()) {
      CHECK(e->key == good.key);
      CHECK(e->instance == good.instance);
      CHECK(e->launch == good.launch);
      CHECK(e->id == good.id);
      CHECK(e->ms == good.ms);  // the conflicting slower line never wins
    }
    // Anything less than a clean file says so.
    const bool clean = r.rejected == 0 && r.kind != CacheFileKind::foreign && r.kind != CacheFileKind::newer_format;
    CHECK(clean == r.warnings.empty());
  }
  // The same corpus through real files and the loader.
  TempDir dir;
  for (const Case& c : corpus) {
    CAPTURE(c.what);
    const std::string path = dir.file("c.ktune");
    write_text(path, c.text);
    CacheStore s;
    std::vector<std::string> w;
    CHECK(load_cache_file(path, s, w).ok());
    CHECK(s.size() == c.entries);
  }
}

TEST_CASE("tuner cache: rejected lines are named with file and line number, and capped") {
  std::string text = header_line() + "\n";
  for (int i = 0; i < 30; ++i) text += "garbage " + std::to_string(i) + "\n";
  text += kGood + "\n";
  CacheParseResult r = parse_cache_text(text, "/x/cache.ktune", 5);
  CHECK(r.store.size() == 1);
  CHECK(r.rejected == 30);
  REQUIRE(r.warnings.size() == 5 + 2);
  CHECK(r.warnings[0].rfind("/x/cache.ktune:2: rejected cache line", 0) == 0);
  CHECK(r.warnings[5].find("25 more rejected lines") != std::string::npos);
  CHECK(r.warnings[6].find("30 of 31 entries rejected") != std::string::npos);
}
