// tools/ktune-profile/list.cu — `ktune-profile --list`: each default family's parameter lists, then
// every point of its product: valid instances with their resource estimate, pruned configs with the
// rule that rejected them and why. The enumeration is evaluated at compile time (the same constexpr
// function that decides what gets instantiated); nothing here calls the CUDA runtime, so the listing
// works on a machine without a GPU or driver.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ktune/dispatch.hpp"
#include "ktune/family.hpp"
#include "default_families.hpp"
#include "profile.hpp"

namespace ktune::profile {
namespace {

struct Totals {
  std::size_t families = 0, configs = 0, valid = 0, pruned = 0;
  std::set<std::string, std::less<>> family_names;
};

std::string str(MathOp m) { return std::string(to_string(m)); }
std::string str(Layout l) { return std::string(1, layout_letter(l)) + " (" + std::string(to_string(l)) + ")"; }
std::string str(TileShape t) { return std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k); }
std::string str(WarpShape w) { return std::to_string(w.m) + "x" + std::to_string(w.n); }
std::string str(int v) { return std::to_string(v); }

template <class T, std::size_t N>
std::string join(const T (&values)[N]) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) s += (i ? ", " : "") + str(values[i]);
  return s;
}

bool matches(std::string_view name, const std::string& filter) {
  return filter.empty() || name.find(filter) != std::string_view::npos;
}

template <class F>
void list_family(const std::string& filter, Totals& tot) {
  // Evaluated by the compiler: the listing is exactly what the constraint model decided at build time.
  static constexpr auto candidates = enumerate_family<F>();
  const ArchTraits& a = F::arch;
  std::printf("family %.*s  (arch %.*s: %d B smem/block opt-in, %d regs/SM, %d regs/thread, %d threads/block)\n",
              int(F::name.size()), F::name.data(), int(a.name.size()), a.name.data(), a.smem_optin_bytes, a.regs_per_sm,
              a.max_regs_per_thread, a.max_threads_per_block);
  std::printf("  math       %s\n", join(F::maths).c_str());
  std::printf("  A layout   %s\n", join(F::a_layouts).c_str());
  std::printf("  B layout   %s\n", join(F::b_layouts).c_str());
  std::printf("  tile       %s   (BM x BN x BK)\n", join(F::tiles).c_str());
  std::printf("  warp       %s   (WM x WN)\n", join(F::warps).c_str());
  std::printf("  stages     %s\n", join(F::stages).c_str());
  std::printf("  align      %s   (elements per A/B vector access)\n", join(F::aligns).c_str());

  std::size_t valid = 0, pruned = 0, shown_valid = 0, shown_pruned = 0, registered = 0;
  std::map<std::string_view, int> by_rule;
  for (const auto& c : candidates) {
    if (c.verdict.ok()) {
      ++valid;
      registered += gemm_table().find(instance_name(c.config).view()) != nullptr ? 1 : 0;
    } else {
      ++pruned;
      ++by_rule[rule_name(c.verdict.rule)];
    }
  }

  std::printf("  valid instances (%zu):\n", valid);
  std::printf("    %-60s %9s %8s %10s\n", "name", "smem B", "threads", "regs(est)");
  for (const auto& c : candidates) {
    if (!c.verdict.ok()) continue;
    const InstanceName name = instance_name(c.config);
    if (!matches(name.view(), filter)) continue;
    const GemmResources r = estimate_resources(c.config);
    std::printf("    %-60s %9d %8d %10d\n", name.c_str(), r.smem_bytes, r.threads, r.registers);
    ++shown_valid;
  }
  std::printf("  pruned configs (%zu):\n", pruned);
  for (const auto& c : candidates) {
    if (c.verdict.ok()) continue;
    const InstanceName name = instance_name(c.config);
    if (!matches(name.view(), filter)) continue;
    std::printf("    %-60s %s\n", name.c_str(), c.verdict.to_string().c_str());
    ++shown_pruned;
  }
  std::string rules;
  for (const auto& [rule, n] : by_rule) rules += (rules.empty() ? "" : ", ") + std::string(rule) + " " + std::to_string(n);
  std::printf("  summary %.*s: %zu configs = %zu valid + %zu pruned%s%s", int(F::name.size()), F::name.data(),
              candidates.size(), valid, pruned, rules.empty() ? "" : " (", rules.c_str());
  std::printf("%s; %zu of the %zu valid in this binary's dispatch table", rules.empty() ? "" : ")", registered, valid);
  if (!filter.empty()) std::printf("; shown with filter \"%s\": %zu valid, %zu pruned", filter.c_str(), shown_valid, shown_pruned);
  std::printf("\n\n");

  ++tot.families;
  tot.configs += candidates.size();
  tot.valid += valid;
  tot.pruned += pruned;
  tot.family_names.insert(std::string(F::name));
}

}  // namespace

int list_families(const std::string& filter) {
  std::printf("ktune-profile --list: default GEMM kernel families. Each family is the product of its parameter\n"
              "lists; the constraint model (ktune/gemm/resource_model.hpp) prunes it at compile time and only\n"
              "the valid configs are instantiated. Register counts are the model's estimate.\n\n");
  Totals tot;
  std::apply([&](auto... fam) { (list_family<decltype(fam)>(filter, tot), ...); }, DefaultFamilies{});

  std::printf("total: %zu families, %zu configs, %zu valid instances, %zu pruned\n", tot.families, tot.configs, tot.valid,
              tot.pruned);
  // What this binary's dispatch table holds (filled at static initialisation; no CUDA involved).
  const auto& entries = gemm_table().entries();
  std::size_t from_listed = 0;
  std::vector<std::string> others;
  for (const auto& e : entries) {
    if (tot.family_names.count(e.family))
      ++from_listed;
    else
      others.push_back(std::string(e.name) + " (family " + std::string(e.family) + ")");
  }
  std::printf("dispatch table of this binary: %zu instances registered (%zu from the families above)\n", entries.size(),
              from_listed);
  for (const auto& o : others) std::printf("  also registered: %s\n", o.c_str());
  if (entries.empty()) std::printf("  (no instances: this binary was linked without ktune_instances)\n");
  return 0;
}

}  // namespace ktune::profile
