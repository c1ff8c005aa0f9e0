// ktune-profile --tune-quality without a GPU: the built-in sweep parses and covers the shape classes
// the issue names, and the comparison of the tuner's pick with an exhaustive tactic report counts
// only valid times, breaks ties deterministically and counts a shape it cannot compare as a miss.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "common/shapes_file.hpp"
#include "ktune-profile/quality_model.hpp"

using namespace ktune;
using namespace ktune::tuner;
using ktune::profile::compare_with_exhaustive;
using ktune::profile::QualityComparison;
using ktune::profile::summarize_quality;

namespace {

TacticRecord rec(std::string name, TacticStatus s, double ms) {
  TacticRecord r;
  r.name = std::move(name);
  r.status = s;
  r.ms = ms;
  return r;
}

TuningReport picked(std::string winner) {
  TuningReport r;
  r.winner = std::move(winner);
  return r;
}

}  // namespace

TEST_CASE("tune quality: the built-in sweep parses and covers squares, LLM, decode, unaligned and small K") {
  for (bool quick : {false, true}) {
    const auto lines = profile::default_quality_shapes(quick);
    CHECK(lines.size() >= (quick ? 15u : 20u));
    std::set<std::string> keys;
    bool decode = false, unaligned = false, small_k = false, big_square = false;
    for (const auto& l : lines) {
      CAPTURE(l);
      tools::ShapeProblem p;
      std::string why;
      REQUIRE_MESSAGE(tools::parse_shape_line(l, p, why), why);
      CHECK(keys.insert(tuner::to_string(tuner::make_key(p.desc(), p.alignment()))).second);  // no duplicate keys
      decode |= p.m <= 32;
      unaligned |= p.k % 8 != 0 || p.n % 8 != 0;
      small_k |= p.k <= 64;
      big_square |= p.m == p.n && p.n == p.k && p.m >= 4096;
    }
    CHECK(decode);
    CHECK(unaligned);
    CHECK(small_k);
    CHECK(big_square);
  }
  CHECK(profile::default_quality_shapes(true).size() < profile::default_quality_shapes(false).size());
}

TEST_CASE("tune quality: the pick's exhaustive time over the best valid exhaustive time") {
  TuningReport all;
  all.records = {rec("a", TacticStatus::measured, 1.00), rec("b@split4s", TacticStatus::selected, 0.80),
                 rec("c", TacticStatus::slower_than_best, 2.00), rec("d", TacticStatus::failed_validation, 0.10),
                 rec("e", TacticStatus::exceeded_time_bound, 0.05), rec("f", TacticStatus::cannot_implement, NAN)};
  const QualityComparison q = compare_with_exhaustive(picked("a"), all);
  REQUIRE(q.ok);
  CHECK(q.best == "b@split4s");  // failed / out-of-bound times never count as the best
  CHECK(q.best_ms == 0.80);
  CHECK(q.pick_ms == 1.00);
  CHECK(q.ratio == doctest::Approx(1.25));
  CHECK(q.tactics == 5);  // cannot-implement is no candidate
  CHECK(q.best_default == "a");  // the best tactic with default launch options
  CHECK(q.best_default_ms == 1.00);
  // The pick is the best: ratio 1. A slower-stopped pick still has its median.
  CHECK(compare_with_exhaustive(picked("b@split4s"), all).ratio == 1.0);
  CHECK(compare_with_exhaustive(picked("c"), all).ratio == doctest::Approx(2.5));
  // A pick without a valid exhaustive time (failed there, or unknown) is not compared, with the reason.
  for (const char* w : {"d", "zzz", ""}) {
    const QualityComparison x = compare_with_exhaustive(picked(w), all);
    CHECK_FALSE(x.ok);
    CHECK_FALSE(x.note.empty());
  }
  // Equal best times: the smaller name, whatever the record order.
  TuningReport tie;
  tie.records = {rec("y", TacticStatus::measured, 0.5), rec("x", TacticStatus::measured, 0.5)};
  CHECK(compare_with_exhaustive(picked("y"), tie).best == "x");
  std::swap(tie.records[0], tie.records[1]);
  CHECK(compare_with_exhaustive(picked("y"), tie).best == "x");
  TuningReport none;
  none.records = {rec("a", TacticStatus::failed_launch, NAN)};
  CHECK_FALSE(compare_with_exhaustive(picked("a"), none).ok);
}

TEST_CASE("tune quality: the fraction within 3% counts shapes that could not be compared as misses") {
  auto row = [](double ratio) {
    QualityComparison q;
    q.ok = !std::isnan(ratio);
    q.ratio = ratio;
    return q;
  };
  std::vector<QualityComparison> rows;
  for (int i = 0; i < 9; ++i) rows.push_back(row(1.0 + 0.003 * i));  // up to 1.024
  rows.push_back(row(1.03));                                           // at the band: within
  auto s = summarize_quality(rows);
  CHECK(s.within == 10);
  CHECK(s.met);
  rows.push_back(row(1.031));
  rows.push_back(row(NAN));  // not compared
  s = summarize_quality(rows);
  CHECK(s.total == 12);
  CHECK(s.compared == 11);
  CHECK(s.within == 10);
  CHECK(s.fraction == doctest::Approx(10.0 / 12.0));
  CHECK_FALSE(s.met);
  CHECK_FALSE(summarize_quality({}).met);
}
