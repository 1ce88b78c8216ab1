// Configuration search's selection on hand-made candidates: constraints, the best, the
// Pareto front, why nothing is feasible, and the seeded sample of a large space.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "capacity/config_search.h"

using namespace servelab::capacity;
using Catch::Contains;

namespace {

const std::vector<std::string> kKnown = {"throughput_rps", "latency_p99_ms", "latency_mean_ms",
                                         "slo_attainment"};

Candidate cand(uint32_t point, double rps, double p99) {
  return {point, "p" + std::to_string(point), {{"throughput_rps", rps}, {"latency_p99_ms", p99}}};
}

}  // namespace

TEST_CASE("constraints read short and long metric names and refuse unknown ones") {
  const Constraint c = parse_constraint("p99_ms<=50", kKnown);
  CHECK(c.metric == "latency_p99_ms");
  CHECK(c.at_most);
  CHECK(c.bound == 50);
  CHECK(parse_constraint(" slo_attainment >= 0.99 ", kKnown).at_most == false);
  CHECK_THROWS_WITH(parse_constraint("p42_ms<=1", kKnown), Contains("unknown metric 'p42_ms'"));
  CHECK_THROWS_WITH(parse_constraint("p99_ms<50", kKnown), Contains("METRIC<=NUMBER"));
}

TEST_CASE("the best feasible candidate wins and the Pareto front keeps the undominated") {
  const std::vector<Candidate> all = {cand(0, 100, 20), cand(1, 300, 45), cand(2, 250, 30),
                                      cand(3, 400, 80), cand(4, 240, 35)};
  const SearchOutcome out =
      select(all, {parse_constraint("p99_ms<=50", kKnown)}, {"throughput_rps", true});
  REQUIRE(out.ranked.size() == 4);
  CHECK(out.ranked.front().point == 1);  // 400 req/s breaks the bound
  std::vector<uint32_t> front;
  for (const auto& c : out.pareto) front.push_back(c.point);
  CHECK(front == std::vector<uint32_t>{0, 2, 1});  // 4 is beaten by 2 on both
  const SearchOutcome low = select(all, {}, {"latency_p99_ms", false});
  CHECK(low.ranked.front().point == 0);
}

TEST_CASE("nothing feasible: each constraint that holds nowhere is named with its closest value") {
  const std::vector<Candidate> all = {cand(0, 100, 60), cand(1, 300, 90)};
  const SearchOutcome out = select(
      all, {parse_constraint("p99_ms<=50", kKnown), parse_constraint("throughput>=50", kKnown)},
      {"throughput_rps", true});
  CHECK(out.ranked.empty());
  REQUIRE(out.infeasible.size() == 1);
  CHECK_THAT(out.infeasible[0], Contains("p99_ms<=50") && Contains("60"));
  const SearchOutcome apart = select(
      all, {parse_constraint("p99_ms<=70", kKnown), parse_constraint("throughput>=200", kKnown)},
      {"throughput_rps", true});
  CHECK_THAT(apart.infeasible.at(0), Contains("never all at once"));
}

TEST_CASE("a sample draws distinct points by its seed, and the whole space when it is small") {
  const auto a = sample_points(1000, 50, 7), b = sample_points(1000, 50, 7);
  CHECK(a == b);
  CHECK(std::set<uint32_t>(a.begin(), a.end()).size() == 50);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(a.back() < 1000);
  CHECK(sample_points(1000, 50, 8) != a);
  CHECK(sample_points(5, 50, 7) == std::vector<uint32_t>{0, 1, 2, 3, 4});
}

TEST_CASE("a margin judges the simulated candidates by bounds moved to the safe side",
          "[capacity][search]") {
  // p99 440 ms meets p99 <= 450 as written but not with a 5% margin (<= 427.5); attainment
  // 0.95 meets >= 0.9 but not with a 10% margin (>= 0.99).
  const Constraint p99 = parse_constraint("p99_ms<=450", kKnown);
  const Constraint att = parse_constraint("slo_attainment>=0.9", kKnown);
  const Candidate c{0, "a", {{"latency_p99_ms", 440}, {"slo_attainment", 0.95}}};
  CHECK(p99.holds(c));
  CHECK_FALSE(with_margin(p99, 0.05).holds(c));
  CHECK(with_margin(p99, 0.05).bound == Approx(427.5));
  CHECK(att.holds(c));
  CHECK_FALSE(with_margin(att, 0.1).holds(c));
  CHECK(with_margin(att, 0.1).bound == Approx(0.99));
  CHECK(with_margin(p99, 0).bound == 450);
  CHECK_THROWS_AS(with_margin(p99, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(with_margin(p99, -0.1), std::invalid_argument);
}
