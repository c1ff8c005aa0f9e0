// tools/ktune-profile/list.cu — `ktune-profile --list`: each default family's parameter lists (GEMM, then
// conv2d), then every point of its product: valid instances with their resource estimate, pruned configs
// with the rule that rejected them and why. The enumeration is evaluated at compile time (the same constexpr
// function that decides what gets instantiated); nothing here calls the CUDA runtime, so the listing
// works on a machine without a GPU or driver.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "default_families.hpp"
#include "family_points.hpp"
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
std::string str(ConvIteratorSpec i) {
  return std::string(to_string(i.kind)) + " (" + std::to_string(i.align) + "-element vectors" +
         (i.channels > 0 ? ", C = " + std::to_string(i.channels) : std::string()) + ")";
}
std::string str(ConvBlockShape b) {
  std::string s = str(b.tile) + " w" + str(b.warp);
  if (b.stages > 0) s += " s" + std::to_string(b.stages);
  if (b.schedule == WgSchedule::pingpong) s += " ping-pong";
  if (b.schedule == WgSchedule::swap_ab) s += " swap-AB";
  return s;
}

template <class T, std::size_t N>
std::string join(const T (&values)[N]) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) s += (i ? ", " : "") + str(values[i]);
  return s;
}

bool matches(std::string_view name, const std::string& filter) {
  return filter.empty() || name.find(filter) != std::string_view::npos;
}

// Every point of a family's product: the valid ones with their resources, the pruned ones with the rule and the
// reason, then a summary line; adds the family to the totals.
// (Point: family_points.hpp; names `w` wide.)
template <class Point, class Candidates>
void list_points(std::string_view family, const Candidates& candidates, const std::string& filter, int w, Totals& tot) {
  std::size_t valid = 0, pruned = 0, shown_valid = 0, shown_pruned = 0, registered = 0;
  std::map<std::string, int> by_rule;
  for (const auto& c : candidates) {
    if (c.verdict.ok()) {
      ++valid;
      registered += Point::table().find(Point::name(c.config).view()) != nullptr ? 1 : 0;
    } else {
      ++pruned;
      ++by_rule[Point::rule(c.verdict)];
    }
  }
  std::printf("  valid instances (%zu):\n", valid);
  std::printf("    %-*s %9s %8s %10s\n", w, "name", "smem B", "threads", "regs(est)");
  for (const auto& c : candidates) {
    if (!c.verdict.ok() || !matches(Point::name(c.config).view(), filter)) continue;
    const GemmResources r = Point::resources(c.config);
    std::printf("    %-*s %9d %8d %10d\n", w, Point::name(c.config).c_str(), r.smem_bytes, r.threads, r.registers);
    ++shown_valid;
  }
  std::printf("  pruned configs (%zu):\n", pruned);
  for (const auto& c : candidates) {
    if (c.verdict.ok() || !matches(Point::name(c.config).view(), filter)) continue;
    std::printf("    %-*s %s\n", w, Point::name(c.config).c_str(), Point::reason(c.verdict).c_str());
    ++shown_pruned;
  }
  std::string rules;
  for (const auto& [rule, n] : by_rule) rules += (rules.empty() ? "" : ", ") + rule + " " + std::to_string(n);
  std::printf("  summary %.*s: %zu configs = %zu valid + %zu pruned%s%s%s; %zu of the %zu valid in this binary's dispatch table",
              int(family.size()), family.data(), candidates.size(), valid, pruned, rules.empty() ? "" : " (", rules.c_str(),
              rules.empty() ? "" : ")", registered, valid);
  if (!filter.empty()) std::printf("; shown with filter \"%s\": %zu valid, %zu pruned", filter.c_str(), shown_valid, shown_pruned);
  std::printf("\n\n");
  ++tot.families;
  tot.configs += candidates.size();
  tot.valid += valid;
  tot.pruned += pruned;
  tot.family_names.insert(std::string(family));
}

template <class F>
void list_family(const std::string& filter, Totals& tot) {
  // Evaluated by the compiler: the listing is exactly what the constraint model decided at build time.
  static constexpr auto candidates = GemmPoint::enumerate<F>();
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
  list_points<GemmPoint>(F::name, candidates, filter, 60, tot);
}

// A conv2d family: maths × iterators × block shapes (each with its warp tile, and its own stage count or every
// entry of stages[]), pruned by the conv constraint model (the GEMM mainloop's rules plus the gather's).
template <class F>
void list_conv_family(const std::string& filter, Totals& tot) {
  static constexpr auto candidates = ConvPoint::enumerate<F>();
  const ArchTraits& a = F::arch;
  std::printf("conv family %.*s  (arch %.*s: %d B smem/block opt-in)%s\n", int(F::name.size()), F::name.data(),
              int(a.name.size()), a.name.data(), a.smem_optin_bytes,
              conv_family_uses_gemm_table<F>() ? "  [the 1x1 route on the GEMM table's own instances]" : "");
  std::printf("  math       %s\n", join(F::maths).c_str());
  std::printf("  iterator   %s\n", join(F::iterators).c_str());
  std::printf("  block      %s   (BM x BN x BK, warp or warpgroup tile)\n", join(F::blocks).c_str());
  std::printf("  stages     %s   (blocks without their own count)\n", join(F::stages).c_str());
  list_points<ConvPoint>(F::name, candidates, filter, 80, tot);
}

// What a dispatch table of this binary holds (filled at static initialisation; no CUDA involved), against the
// families listed above it.
template <class Table>
void print_table_summary(const char* what, const Table& table, const Totals& tot) {
  std::printf("total: %zu families, %zu configs, %zu valid instances, %zu pruned\n", tot.families, tot.configs, tot.valid,
              tot.pruned);
  const auto& entries = table.entries();
  std::size_t from_listed = 0;
  std::vector<std::string> others;
  for (const auto& e : entries) {
    if (tot.family_names.count(e.family))
      ++from_listed;
    else
      others.push_back(std::string(e.name) + " (family " + std::string(e.family) + ")");
  }
  std::printf("%s of this binary: %zu instances registered (%zu from the families above)\n", what, entries.size(), from_listed);
  for (const auto& o : others) std::printf("  also registered: %s\n", o.c_str());
  if (entries.empty()) std::printf("  (no instances: this binary was linked without ktune_instances)\n");
}

}  // namespace

int list_families(const std::string& filter, const std::string& op) {
  std::printf("ktune-profile --list: default kernel families (GEMM, then conv2d; --op gemm|conv for one). Each family is\n"
              "the product of its parameter lists; the constraint model (ktune/gemm/resource_model.hpp, for conv2d also\n"
              "ktune/conv/config.hpp) prunes it at compile time and only the valid configs are instantiated. Register\n"
              "counts are the model's estimate.\n\n");
  if (op != "conv") {
    Totals tot;
    std::apply([&](auto... fam) { (list_family<decltype(fam)>(filter, tot), ...); }, DefaultFamilies{});
    print_table_summary("GEMM dispatch table", gemm_table(), tot);
  }
  if (op != "gemm") {
    if (op != "conv") std::printf("\n");
    Totals tot;
    std::apply([&](auto... fam) { (list_conv_family<decltype(fam)>(filter, tot), ...); }, DefaultConvFamilies{});
    print_table_summary("conv2d dispatch table", conv_table(), tot);
  }
  return 0;
}

}  // namespace ktune::profile
