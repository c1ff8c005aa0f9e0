// test/fuzz/replay_main.cpp — a main() for a libFuzzer target without libFuzzer: runs
// LLVMFuzzerTestOneInput once on each file named (directories: every regular file in them, sorted), so
// the committed corpus replays deterministically under g++'s sanitizers in ctest, and a crash input
// from a fuzz run can be debugged with any compiler. Exit status 0 when every input ran; 1 when an
// argument could not be read or nothing was found. A failing input aborts (the sanitizers report).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file()) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "replay: cannot read %s\n", argv[i]);
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s <input file or corpus directory>... (no inputs found)\n", argv[0]);
    return 1;
  }
  for (const auto& f : files) {
    std::ifstream s(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
    if (!s.good() && !s.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 1;
    }
    // Copy to an exactly-sized heap buffer so ASan sees reads past the end.
    std::vector<std::uint8_t> buf(bytes.begin(), bytes.end());
    std::uint8_t* data = buf.empty() ? nullptr : buf.data();
    LLVMFuzzerTestOneInput(data, buf.size());
  }
  std::printf("replay: %zu inputs ran\n", files.size());
  return 0;
}
