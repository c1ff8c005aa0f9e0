// ktune-profile's choice of the instances it pairs with cuBLAS besides the unpaired best
// (tools/ktune-profile/profile.hpp paired_runner_ups).
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <vector>

#include "ktune-profile/profile.hpp"

using ktune::profile::paired_runner_up_count;
using ktune::profile::paired_runner_up_margin;
using ktune::profile::paired_runner_ups;
using ktune::profile::ResultRow;

namespace {
ResultRow row(const std::string& name, double ms, const char* status = "PASS") {
  ResultRow r;
  std::tie(r.instance, r.ms, r.status) = std::tuple(name, ms, std::string(status));
  return r;
}
}  // namespace

TEST_CASE("ktune-profile pairs the best and the verified runners-up within the margin, fastest first") {
  const std::vector<ResultRow> rows = {row("best", 1.000), row("far", 1.0 + 2 * paired_runner_up_margin), row("third", 1.030),
                                       row("wrong", 1.001, "FAIL"), row("second", 1.010), row("untimed", -1.0),
                                       row("fourth", 1.040)};
  const std::vector<const ResultRow*> r = paired_runner_ups(rows, rows[0]);
  REQUIRE(r.size() == paired_runner_up_count);
  CHECK(r[0]->instance == "second");
  CHECK(r[1]->instance == "third");
  for (const ResultRow* x : r) CHECK(x != &rows[0]);
}

TEST_CASE("ktune-profile pairs no runner-up when none is close, or when the best was not timed") {
  const std::vector<ResultRow> rows = {row("best", 2.0), row("slow", 2.0 * (1.0 + 1.5 * paired_runner_up_margin))};
  CHECK(paired_runner_ups(rows, rows[0]).empty());
  const std::vector<ResultRow> untimed = {row("best", -1.0), row("other", 1.0)};
  CHECK(paired_runner_ups(untimed, untimed[0]).empty());
}
