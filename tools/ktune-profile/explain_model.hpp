// tools/ktune-profile/explain_model.hpp — the part of `ktune-profile --explain` that needs no GPU:
// for one problem (GEMM or conv2d) on one device (real or assumed), which configs of the default
// families the constraint model pruned (and by which rule), which instances of the dispatch table
// cannot implement the problem (and why), and how the cost model ranks the rest (the order in which
// the tuner measures them, and which fall below its top-k). Host-only, header-only (host-tested).
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "default_families.hpp"
#include "family_points.hpp"
#include "ktune/constraints.hpp"
#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/family.hpp"
#include "ktune/conv/tactics.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/family.hpp"
#include "ktune/gemm/heuristic.hpp"
#include "ktune/problem.hpp"
#include "ktune/tuner/tuner.hpp"

namespace ktune::profile {

// The device --explain assumes without a GPU: an H200 (sm90, 132 SMs, 227 KB of shared memory per
// block, 48 MiB L2).
inline DeviceInfo assumed_h200() {
  DeviceInfo d;
  d.ordinal = 0;
  d.name = "NVIDIA H200 (assumed)";
  d.cc = 90;
  d.sm_count = 132;
  d.l2_bytes = 48 << 20;
  d.smem_optin_bytes = 227 * 1024;
  return d;
}

// Does a config or instance compute what the problem asks for, in its layouts? (can_implement's first
// two checks; everything else it checks is the alignment and the device.)
inline bool serves_math_and_layout(const GemmConfig& c, const GemmDesc& d) {
  return math_implements(c.math, required_math(d)) && c.a_layout == d.a_layout && c.b_layout == d.b_layout;
}

template <class V>
struct PrunedConfigOf {
  std::string name;
  V verdict;
};
using PrunedConfig = PrunedConfigOf<Verdict>;

// One default family (GEMM: V = Verdict; conv2d: ConvVerdict), seen from the problem: its configs for the
// problem's math (GEMM: and layouts).
template <class V>
struct FamilyModelOf {
  std::string family;
  std::size_t configs = 0;     // every point of the family's product
  std::size_t relevant = 0;    // of which compute this problem's math (GEMM: in its layouts)
  std::size_t valid = 0;       // of the relevant, accepted by the constraint model (instances)
  std::size_t in_table = 0;    // of the valid, registered in this binary's dispatch table
  std::vector<PrunedConfigOf<V>> pruned;  // relevant configs the model rejected
  std::vector<std::string> not_in_table;  // relevant valid configs this binary does not hold
};
using FamilyModel = FamilyModelOf<Verdict>;
using ConvFamilyModel = FamilyModelOf<ConvVerdict>;

struct Rejection {
  std::string name, family, reason;
  StatusCode code = StatusCode::ok;
};

struct RankedCandidate {
  const GemmKernelEntry* entry = nullptr;
  int rank = 0;        // 1 = the cost model's (and the heuristic API's) first choice
  double cost = 0;     // heuristic_cost, lower is better
  double relative = 1; // cost / the best cost
};

// A tactic (instance + launch options, ktune/gemm/tactics.hpp) in the order the tuner measures them.
struct RankedTactic {
  std::string name;    // instance[@launch options]
  const GemmKernelEntry* entry = nullptr;
  int rank = 0;        // 1-based position in Tuner::ranked_tactics (the top max_candidates are measured)
  double relative = 1; // its cost (instance cost × tactic_cost_factor) / the best instance's cost
};

struct ModelExplanation {
  std::vector<FamilyModel> families;
  // Table entries for another math or layout, per family (not listed one by one).
  std::map<std::string, std::size_t> other_math_layout;
  std::size_t other_math_layout_total = 0;
  // Table entries for this math and layout that cannot run the problem: alignment or device.
  std::vector<Rejection> cannot;
  // The rest, best-ranked first (Tuner::ranked_candidates with the default cost model).
  std::vector<RankedCandidate> ranked;
  // Every tactic of the ranked instances, in the tuner's measuring order (Tuner::ranked_tactics).
  std::vector<RankedTactic> tactics;
  std::size_t table_size = 0;
};

namespace detail {

// Family F's points (Point: family_points.hpp) that serve the problem, counted; the pruned ones kept with their
// verdict, the valid ones `table` lacks by name.
template <class Point, class F, class Serves, class Table>
FamilyModelOf<typename Point::VerdictType> family_model(Serves serves, const Table& table) {
  static constexpr auto candidates = Point::template enumerate<F>();
  FamilyModelOf<typename Point::VerdictType> fm;
  fm.family = std::string(F::name);
  fm.configs = candidates.size();
  for (const auto& c : candidates) {
    if (!serves(c.config)) continue;
    ++fm.relevant;
    const auto name = Point::name(c.config);
    if (!c.verdict.ok()) {
      fm.pruned.push_back({std::string(name.view()), c.verdict});
      continue;
    }
    ++fm.valid;
    if (table.find(name.view()) != nullptr) ++fm.in_table;
    else fm.not_in_table.push_back(std::string(name.view()));
  }
  return fm;
}

}  // namespace detail

// Explain `desc` (any description; it is resolved here) with alignment class `al` on `dev`.
inline ModelExplanation explain_model(const GemmDesc& desc, const GemmAlignment& al, const DeviceInfo& dev,
                                      const GemmTable& table = gemm_table()) {
  const GemmDesc d = resolved(desc);
  ModelExplanation x;
  x.table_size = table.size();
  auto serves = [&](const GemmConfig& c) { return serves_math_and_layout(c, d); };
  std::apply([&](auto... fam) { (x.families.push_back(detail::family_model<GemmPoint, decltype(fam)>(serves, table)), ...); },
             DefaultFamilies{});

  for (const GemmKernelEntry& e : table.entries()) {
    if (!serves_math_and_layout(e.config, d)) {
      ++x.other_math_layout[std::string(e.family)];
      ++x.other_math_layout_total;
      continue;
    }
    const Status s = can_implement(e, d, al, &dev);
    if (!s.ok()) x.cannot.push_back(Rejection{std::string(e.name), std::string(e.family), s.message(), s.code()});
  }

  // The tuner's own ranking (no backend needed: ranking only reads the table and the cost model).
  const tuner::Tuner ranker(nullptr, &table);
  const std::vector<const GemmKernelEntry*> ranked = ranker.ranked_candidates(d, al, dev, {});
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    RankedCandidate r;
    r.entry = ranked[i];
    r.rank = static_cast<int>(i + 1);
    r.cost = heuristic_cost(*ranked[i], d, dev);
    x.ranked.push_back(r);
  }
  if (!x.ranked.empty() && x.ranked.front().cost > 0)
    for (auto& r : x.ranked) r.relative = r.cost / x.ranked.front().cost;
  const double best = !x.ranked.empty() && x.ranked.front().cost > 0 ? x.ranked.front().cost : 1.0;
  int rank = 0;
  for (const GemmTactic& t : ranker.ranked_tactics(d, al, dev, {})) {
    RankedTactic r;
    r.name = t.name;
    r.entry = t.entry;
    r.rank = ++rank;
    r.relative = heuristic_cost(*t.entry, d, dev) * tactic_cost_factor(*t.entry, t.launch, d, dev) / best;
    x.tactics.push_back(std::move(r));
  }
  return x;
}

// ---- conv2d ---------------------------------------------------------------------------------------

// A conv tactic in the order the tuner measures them (Tuner::ranked_conv_tactics), with the heuristic's sort key
// of its instance (conv_rank_key: the gather's rank, the mma.sync tile policy's mismatch, the cost model).
struct ConvRankedTactic {
  std::string name;
  const ConvKernelEntry* entry = nullptr;
  int rank = 0;
  ConvRankKey key;
  double relative = 1;  // key.cost over the best cost of the same gather rank (sm90_conv_cost and the GEMM model differ in scale)
};

struct ConvModelExplanation {
  std::vector<ConvFamilyModel> families;
  std::map<std::string, std::size_t> other_math;  // table entries of another math, per family
  std::size_t other_math_total = 0;
  std::vector<Rejection> cannot;                   // entries of this math that cannot run the problem, with the reason
  std::vector<const ConvKernelEntry*> ranked;      // the rest, in the heuristic conv order (first: the heuristic's pick)
  std::vector<ConvRankedTactic> tactics;           // every tactic of the ranked instances, in the tuner's measuring order
  std::size_t table_size = 0;
};

// Explain conv problem `d` with alignment class `al` on `dev`.
inline ConvModelExplanation explain_conv_model(const Conv2dDesc& d, const ConvAlignment& al, const DeviceInfo& dev,
                                               const ConvTable& table = conv_table()) {
  ConvModelExplanation x;
  x.table_size = table.size();
  auto serves = [&](const ConvConfig& c) { return math_implements(c.gemm.math, required_math(d)); };
  std::apply([&](auto... fam) { (x.families.push_back(detail::family_model<ConvPoint, decltype(fam)>(serves, table)), ...); },
             DefaultConvFamilies{});
  for (const ConvKernelEntry& e : table.entries()) {
    if (!math_implements(e.config.gemm.math, required_math(d))) {
      ++x.other_math[std::string(e.family)];
      ++x.other_math_total;
      continue;
    }
    const Status s = can_implement(e, d, al, &dev);
    if (!s.ok()) x.cannot.push_back(Rejection{std::string(e.name), std::string(e.family), s.message(), s.code()});
  }
  // The tuner's own ranking (no backend needed: ranking only reads the table and the cost model).
  const tuner::Tuner ranker(nullptr, &gemm_table(), {}, nullptr, &table);
  x.ranked = ranker.ranked_conv_candidates(d, al, dev);
  std::map<int, double> best_cost;  // per gather rank
  for (const ConvKernelEntry* e : x.ranked) {
    const ConvRankKey k = conv_rank_key(*e, d, dev);
    auto [it, fresh] = best_cost.emplace(k.gather, k.cost);
    if (!fresh && k.cost < it->second) it->second = k.cost;
  }
  int rank = 0;
  for (const ConvTactic& t : ranker.ranked_conv_tactics(d, al, dev)) {
    ConvRankedTactic r;
    r.name = t.name;
    r.entry = t.entry;
    r.rank = ++rank;
    r.key = conv_rank_key(*t.entry, d, dev);
    const double best = best_cost[r.key.gather];
    r.relative = best > 0 ? r.key.cost / best : 1.0;
    x.tactics.push_back(std::move(r));
  }
  return x;
}

}  // namespace ktune::profile
