// tools/ktune-profile/family_points.hpp — how --list and --explain read one point of a GEMM or a conv2d family:
// the family's enumeration (every point with the constraint model's verdict), a point's instance name, the
// model's resources, the first rule it breaks and why, and the dispatch table that holds the instances.
// Host-only, header-only.
#pragma once
#include <string>

#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/family.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/family.hpp"

namespace ktune::profile {

struct GemmPoint {
  using VerdictType = Verdict;
  template <class F>
  static constexpr auto enumerate() { return enumerate_family<F>(); }
  static InstanceName name(const GemmConfig& c) { return instance_name(c); }
  static GemmResources resources(const GemmConfig& c) { return estimate_resources(c); }
  static std::string rule(const Verdict& v) { return std::string(rule_name(v.rule)); }
  static std::string reason(const Verdict& v) { return v.to_string(); }
  static const GemmTable& table() { return gemm_table(); }
};

struct ConvPoint {
  using VerdictType = ConvVerdict;
  template <class F>
  static constexpr auto enumerate() { return enumerate_conv_family<F>(); }
  static ConvInstanceName name(const ConvConfig& c) { return conv_instance_name(c); }
  static GemmResources resources(const ConvConfig& c) { return conv_resources(c); }
  static std::string rule(const ConvVerdict& v) {
    return v.rule == ConvRule::gemm ? "gemm:" + std::string(rule_name(v.gemm.rule)) : std::string(rule_name(v.rule));
  }
  static std::string reason(const ConvVerdict& v) { return rule(v) + ": " + v.describe(); }
  static const ConvTable& table() { return conv_table(); }
};

}  // namespace ktune::profile
