// test/host/conv_tactic_check.hpp — a proposed conv tactic's name round trip, for the host tests.
#pragma once
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "ktune/conv.hpp"
#include "ktune/conv/tactics.hpp"

namespace ktune::test {

// The tactic name of (e, o) splits into e's name and a suffix that parses back to the same launch
// options, which the tuner accepts as a variant of e on `d`. Returns the name.
inline std::string check_conv_tactic_round_trip(const ConvKernelEntry& e, const ConvLaunchOptions& o, const Conv2dDesc& d,
                                                const DeviceInfo& dev) {
  const std::string name = conv_tactic_name(e.name, o);
  std::string_view inst, suffix;
  split_tactic_name(name, inst, suffix);
  CHECK(inst == e.name);
  ConvLaunchOptions back;
  std::string why;
  CHECK_MESSAGE(parse_conv_launch_suffix(suffix, back, why), why);
  CHECK(same_launch(back, o));
  CHECK(is_conv_launch_variant(e, o, d, dev));
  return name;
}

}  // namespace ktune::test
