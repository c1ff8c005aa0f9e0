// tools/ktune-profile/tune.cu — `ktune-profile --tune shapes.txt --cache out.ktune`: offline
// pre-tuning. Every problem of the shapes file (see tools/common/shapes_file.hpp for the format: GEMM
// lines, and conv2d lines starting with `conv`) is tuned by the runtime tuner (Tuner::tune / tune_conv:
// cost-model ranking, top-k measured on scratch buffers,
// validated against a reference, fastest pinned with deterministic near-tie breaks) on the current
// device, exactly as the first call of a deployed application would; the winners go into the tuning
// cache file, which a deployed application loads (KTUNE_CACHE=out.ktune, or
// ktune::load_tuning_cache) to skip tuning on the same GPU, driver and build.
//
// The cache is merged, never clobbered: entries already in the file (other devices, other builds,
// other keys) stay; a key tuned again keeps the faster of the old and the new entry (the cache's merge
// rule). It is saved atomically (temporary file + rename, under a lock file) after every tuned key, so
// an interrupted run keeps what it measured, and once more at the end.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ktune/device.hpp"
#include "ktune/tuner/cache.hpp"
#include "ktune/tuner/conv_cuda_backend.hpp"
#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/tuner.hpp"
#include "profile.hpp"

namespace ktune::profile {
namespace {

struct TuneRow {
  int line = 0;
  std::string key, winner, status, note;
  double ms = std::nan(""), tflops = std::nan("");
  std::size_t measured = 0, failed = 0, pruned = 0;
  double tuning_ms = 0;
  bool ok = false;
};

// Before any tuning: can OUT be written? (A foreign or newer-format file is never overwritten; a
// missing directory would only show after all the measuring.)
bool check_cache_path(const std::string& path, std::string& why) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    why = "'" + path + "' is a directory";
    return false;
  }
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    why = "directory '" + dir.string() + "' of the cache file does not exist";
    return false;
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    why = "directory '" + dir.string() + "' is not writable (the cache is replaced atomically: a temporary file is created next to it)";
    return false;
  }
  tuner::CacheStore existing;
  std::vector<std::string> warnings;
  tuner::CacheFileKind kind = tuner::CacheFileKind::empty;
  const Status s = tuner::load_cache_file(path, existing, warnings, &kind);
  for (const auto& w : warnings) std::fprintf(stderr, "ktune-profile: warning: %s\n", w.c_str());
  if (!s.ok()) {
    why = s.message();
    return false;
  }
  if (kind == tuner::CacheFileKind::foreign || kind == tuner::CacheFileKind::newer_format) {
    why = "'" + path + "' exists and is not a ktune cache of this format; not overwriting it";
    return false;
  }
  if (!existing.empty()) std::printf("cache %s: %zu existing entries (merged; entries for other keys, devices and builds are kept)\n",
                                     path.c_str(), existing.size());
  return true;
}

void print_summary(const std::vector<TuneRow>& rows) {
  std::size_t kw = 3, ww = 6;
  for (const auto& r : rows) {
    kw = std::max(kw, r.key.size());
    ww = std::max(ww, r.winner.size());
  }
  std::printf("\nsummary (measured/failed/pruned: candidates timed, excluded by validation or launch, not timed)\n");
  std::printf("%5s  %-*s  %-*s %10s %8s %22s  %s\n", "line", int(kw), "key", int(ww), "winner", "ms", "TF/s",
              "measured/failed/pruned", "status");
  for (const auto& r : rows) {
    const std::string ms = std::isnan(r.ms) ? "-" : fmt("%.4f", r.ms);
    const std::string tf = std::isnan(r.tflops) ? "-" : fmt("%.1f", r.tflops);
    const std::string counts = std::to_string(r.measured) + "/" + std::to_string(r.failed) + "/" + std::to_string(r.pruned);
    std::printf("%5d  %-*s  %-*s %10s %8s %22s  %s%s%s\n", r.line, int(kw), r.key.c_str(), int(ww),
                r.winner.empty() ? "-" : r.winner.c_str(), ms.c_str(), tf.c_str(), counts.c_str(), r.status.c_str(),
                r.note.empty() ? "" : ": ", r.note.c_str());
  }
}

}  // namespace

bool open_device(int device, DeviceInfo& dev, const char* no_gpu_message) {
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "ktune-profile: %s\n", no_gpu_message);
    return false;
  }
  if (device >= 0) {
    if (const Status s = cuda_status(cudaSetDevice(device), "cudaSetDevice"); !s.ok()) {
      std::fprintf(stderr, "ktune-profile: %s\n", s.to_string().c_str());
      return false;
    }
  }
  if (const Status s = current_device(dev); !s.ok()) {
    std::fprintf(stderr, "ktune-profile: cannot use the GPU: %s\n", s.to_string().c_str());
    return false;
  }
  return true;
}

int tune_shapes(const TuneOptions& opt, const tools::ShapesFile& shapes) {
  DeviceInfo dev;
  if (!open_device(opt.device, dev,
                   "no CUDA device found: --tune measures on the GPU the cache is for\n"
                   "(--explain PROBLEM shows the constraint and cost models without a GPU)"))
    return 1;
  std::string why;
  if (!check_cache_path(opt.cache_path, why)) {
    std::fprintf(stderr, "ktune-profile: cannot write the cache: %s\n", why.c_str());
    return 1;
  }

  std::vector<std::string> env_warnings;
  tuner::TunerOptions topt = tuner::options_from_env({}, &env_warnings);
  for (const auto& w : env_warnings) std::fprintf(stderr, "ktune-profile: warning: %s\n", w.c_str());
  topt.cache_path = opt.cache_path;  // loaded (merged) at first use, saved after every tuned key
  topt.autosave = true;
  topt.policy = tuner::Policy::tune;
  if (opt.max_candidates >= 0) topt.max_candidates = opt.max_candidates;
  // Conv keys are measured as ktune::conv2d's default tuner measures them (CudaConvBackend's defaults).
  tuner::Tuner t(std::make_shared<tuner::CudaBackend>(), &gemm_table(), topt, std::make_shared<tuner::CudaConvBackend>(),
                 &conv_table());

  tuner::CacheIdentity id;
  if (const Status s = t.identity(dev.ordinal, id); !s.ok()) {
    std::fprintf(stderr, "ktune-profile: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("ktune-profile --tune %s -> %s\n", opt.shapes_path.c_str(), opt.cache_path.c_str());
  // Conv entries carry the conv table's hash (Tuner: conv_family_hash) instead of the GEMM table's.
  const tuner::CacheIdentity conv_id{id.device, id.version, tuner::conv_family_hash(conv_table())};
  std::printf("device %d: %s (sm%d, %d SMs); cache identity: device '%s', ktune %s, instance set %s (%zu GEMM instances), "
              "conv instance set %s (%zu conv instances)\n",
              dev.ordinal, dev.name.c_str(), dev.cc, dev.sm_count, id.device.c_str(), id.version.c_str(), id.families.c_str(),
              gemm_table().size(), conv_id.families.c_str(), conv_table().size());
  std::printf("%zu GEMM and %zu conv2d problems; top %s candidates per key by the cost model, key budget %s, M bucketing %s%s\n",
              shapes.problems.size(), shapes.convs.size(), topt.max_candidates > 0 ? std::to_string(topt.max_candidates).c_str() : "(all)",
              topt.max_ms_per_key > 0 ? fmt("%.0f ms", topt.max_ms_per_key).c_str() : "none",
              std::string(tuner::to_string(topt.m_bucketing)).c_str(),
              opt.skip_cached ? "; keys already in the cache for this device and build are skipped" : "");

  std::vector<TuneRow> rows;
  rows.reserve(shapes.problems.size() + shapes.convs.size());
  std::vector<std::pair<tuner::ProblemKey, int>> seen;  // key → line (M bucketing can merge lines)
  const int n = static_cast<int>(shapes.problems.size()), total = n + static_cast<int>(shapes.convs.size());
  // --skip-cached: the key's usable entry for this device and build (found by `find` in a snapshot of the
  // cache) goes into the row instead of tuning it; false when there is none.
  auto skip_cached = [&](TuneRow& row, const auto& find) {
    const tuner::CacheStore snap = t.cache_snapshot();
    const tuner::CacheEntry* e = find(snap);
    if (e == nullptr) return false;
    row.ok = true;
    row.status = "cached";
    row.winner = e->tactic();
    row.ms = e->ms;
    row.tflops = e->tflops;
    std::printf("  in the cache already: %s %.4f ms (skipped)\n", row.winner.c_str(), e->ms);
    return true;
  };
  // The measured outcome of one key into its row (GEMM and conv alike).
  auto record = [&](TuneRow& row, const Status& s, const tuner::TuningReport& r) {
    if (!s.ok()) {
      row.status = "FAILED";
      row.note = s.to_string();
      std::printf("  FAILED: %s\n", s.to_string().c_str());
      return;
    }
    row.winner = r.winner;
    row.ms = r.winner_ms;
    row.tflops = r.winner_tflops;
    row.measured = r.count(tuner::TacticStatus::selected) + r.count(tuner::TacticStatus::measured) +
                   r.count(tuner::TacticStatus::slower_than_best);
    row.failed = r.count(tuner::TacticStatus::failed_validation) + r.count(tuner::TacticStatus::failed_launch) +
                 r.count(tuner::TacticStatus::exceeded_time_bound);
    row.pruned = r.count(tuner::TacticStatus::pruned_by_model) + r.count(tuner::TacticStatus::pruned_by_budget);
    row.tuning_ms = r.tuning_ms;
    if (r.source == tuner::Source::tuned) {
      row.ok = true;
      row.status = "tuned";
    } else {
      // fallback: nothing passed validation and timing; the cost model's choice is not cached.
      row.status = "NOT CACHED (" + std::string(tuner::to_string(r.source)) + ")";
      row.note = r.note;
    }
    std::printf("  %s\n", tuner::summary_line(r).c_str());
    for (const tuner::TacticRecord& rec : r.records)
      if (rec.status == tuner::TacticStatus::failed_validation || rec.status == tuner::TacticStatus::failed_launch ||
          rec.status == tuner::TacticStatus::exceeded_time_bound)
        std::printf("    excluded %s: %s: %s\n", rec.name.c_str(), std::string(tuner::to_string(rec.status)).c_str(),
                    rec.detail.c_str());
  };
  for (int i = 0; i < n; ++i) {
    const tools::ShapeProblem& p = shapes.problems[static_cast<std::size_t>(i)];
    TuneRow row;
    row.line = p.line;
    const GemmDesc d = p.desc();
    const GemmAlignment al = p.alignment();
    const tuner::ProblemKey key = tuner::make_key(d, al, topt.m_bucketing);
    row.key = tuner::to_string(key);
    std::printf("\n[%d/%d] line %d: %s\n", i + 1, total, p.line, p.name().c_str());
    std::fflush(stdout);

    int same_as = 0;
    for (const auto& [k, line] : seen)
      if (k == key) same_as = line;
    if (same_as > 0) {
      row.ok = true;
      row.status = "same key";
      row.note = "as line " + std::to_string(same_as) + " (M bucketing " + std::string(tuner::to_string(topt.m_bucketing)) + ")";
      std::printf("  same key as line %d: already tuned\n", same_as);
      rows.push_back(row);
      continue;
    }
    seen.emplace_back(key, p.line);
    if (opt.skip_cached && skip_cached(row, [&](const tuner::CacheStore& c) {
          const tuner::CacheEntry* e = c.find(key, id);
          return e != nullptr && gemm_table().find(e->instance) != nullptr ? e : nullptr;
        })) {
      rows.push_back(row);
      continue;
    }

    tuner::TuningReport r;
    const Status s = t.tune(d, al, &r, /*force=*/false);
    record(row, s, r);
    rows.push_back(row);
  }
  // conv2d lines (duplicate keys were dropped by the parser: conv keys have no bucketing).
  for (std::size_t j = 0; j < shapes.convs.size(); ++j) {
    const tools::ConvShapeProblem& p = shapes.convs[j];
    TuneRow row;
    row.line = p.line;
    const tuner::ConvKey key = p.key();
    row.key = tuner::to_string(key);
    std::printf("\n[%d/%d] line %d: %s\n", n + static_cast<int>(j) + 1, total, p.line, p.name().c_str());
    std::fflush(stdout);
    if (opt.skip_cached && skip_cached(row, [&](const tuner::CacheStore& c) {
          const tuner::CacheEntry* e = c.find(key, conv_id);
          return e != nullptr && conv_table().find(e->instance) != nullptr ? e : nullptr;
        })) {
      rows.push_back(row);
      continue;
    }
    tuner::TuningReport r;
    const Status s = t.tune_conv(p.desc, p.alignment(), &r, /*force=*/false);
    record(row, s, r);
    rows.push_back(row);
  }
  t.release_scratch();

  const Status saved = t.save_cache(opt.cache_path);
  print_summary(rows);
  std::size_t tuned = 0, bad = 0;
  for (const auto& r : rows) {
    tuned += r.status == "tuned" ? 1 : 0;
    bad += r.ok ? 0 : 1;
  }
  if (!saved.ok()) {
    std::fprintf(stderr, "\nktune-profile: the cache was NOT saved: %s\n", saved.to_string().c_str());
    return 1;
  }
  std::size_t entries = 0, here = 0;
  const tuner::CacheStore snap = t.cache_snapshot();
  for (const tuner::CacheEntry* e : snap.entries()) {
    ++entries;
    here += e->id == id || e->id == conv_id ? 1 : 0;
  }
  std::printf("\nwrote %s: %zu entries (%zu for this device and build); %zu keys tuned now, %zu problems failed\n",
              opt.cache_path.c_str(), entries, here, tuned, bad);
  std::printf("deploy: KTUNE_CACHE=%s (or ktune::load_tuning_cache) on the same GPU model, driver and ktune build\n",
              opt.cache_path.c_str());
  return bad > 0 ? 1 : 0;
}

}  // namespace ktune::profile
