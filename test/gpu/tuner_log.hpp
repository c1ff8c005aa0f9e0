// Shared by the GEMM and conv tuner GPU tests: a tuner's log lines and reports, collected from its
// log sink and on_report callback (thread-safe: tuning may run on several threads).
#pragma once
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/tuner/tuner.hpp"

namespace ktune::tuner::testing {

struct Logged {
  std::mutex mu;
  std::vector<std::string> lines;
  std::vector<TuningReport> reports;
  std::string joined() {
    std::lock_guard lock(mu);
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }
};

// Verbose options whose log lines and reports go to `log` (and whose cache is `cache`, if any).
inline TunerOptions logged_options(Logged& log, std::string cache = {}) {
  TunerOptions o;
  o.log_level = LogLevel::verbose;
  o.cache_path = std::move(cache);
  o.log_sink = [&log](LogLevel, std::string_view m) {
    std::lock_guard lock(log.mu);
    log.lines.emplace_back(m);
  };
  o.on_report = [&log](const TuningReport& r) {
    std::lock_guard lock(log.mu);
    log.reports.push_back(r);
  };
  return o;
}

}  // namespace ktune::tuner::testing
