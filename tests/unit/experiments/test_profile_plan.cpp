// The profiler's plan of phases (calibration/profile_plan.h) and the progress lines that give
// its ETA (experiments/progress.h). That measure_profile walks exactly this plan is checked
// wherever a test measures a profile (ProfilePhases throws on any disagreement).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "experiments/progress.h"

#ifdef SERVELAB_EXP_PROFILER
#include "calibration/profile_plan.h"
#endif

using namespace servelab::experiments;

TEST_CASE("phase progress: the ETA is the plan until a phase is done, then the plan scaled") {
  PhaseProgress p("profile", {{"a", 10}, {"b", 30}, {"c", 60}}, nullptr);
  // Nothing done: the plan's 100 s.
  CHECK(p.line(0, 0) == "profile: 1/3 a (0s elapsed, about 1m40s left)");
  // a (10 planned) took 20 s: b and c (90 planned) at the same pace take 180 s.
  CHECK(p.line(1, 20) == "profile: 2/3 b (20s elapsed, about 3m00s left)");
  // a and b (40 planned) took 20 s: c's 60 planned at half pace is 30 s.
  CHECK(p.line(2, 20) == "profile: 3/3 c (20s elapsed, about 30s left)");
  CHECK(p.line(3, 125) == "profile: done in 2m05s");
}

#ifdef SERVELAB_EXP_PROFILER
TEST_CASE("profile plan: every phase the options switch on, in measuring order") {
  ProfileOptions o;
  o.models = {"m1", "m2"};
  o.batch_sizes = {1, 2, 4};
  o.batches.min_seconds_per_size = 1.0;
  o.min_load_seconds = 8.0;
  o.source_loads = 5;
  o.course_seconds = 10;
  o.served_idle_turns = 0;
  o.idle_seconds = 8;
  o.served_rounds = 2;
  o.served_turn_seconds = 0.5;
  o.served_miss_requests = 0;
  o.cold_burst_sizes = {2, 4};
  o.cold_bursts = 3;
  std::vector<std::string> names;
  for (const auto& p : plan_profile(o)) names.push_back(p.what);
  CHECK(names == std::vector<std::string>{
                     "m1: batches and loads", "m2: batches and loads", "speed course",
                     "idle slowdown", "zero-cost round trip", "cold bursts",
                     "m1: request overhead", "m1: served extra", "m2: request overhead",
                     "m2: served extra"});
  const auto plan = plan_profile(o);
  // 3 sizes of 1 s, then 8 s of loads, then 5 loads from each of 4 other sources at ~0.1 s
  CHECK(plan[0].planned_seconds == Approx(3 * 1.0 + 8.0 + 4 * 5 * 0.1));
  CHECK(plan[7].planned_seconds == Approx(2 * 2 * 0.5));    // 2 rounds of a served + a back-to-back turn
}

TEST_CASE("profile plan: served idle turns replace the idle blocks, and off means absent") {
  ProfileOptions o;
  o.models = {"m"};
  o.course_seconds = 0;
  o.served_idle_turns = 2;
  o.served_idle_turn_seconds = 5;
  o.served_rounds = 0;
  o.cold_bursts = 0;
  const auto plan = plan_profile(o);
  REQUIRE(plan.size() == 5);
  CHECK(plan[1].what == "zero-cost round trip");
  CHECK(plan[4].what == "served idle slowdown");
  CHECK(plan[4].planned_seconds == Approx(2 * 2 * 5.0));
}

TEST_CASE("profile phases: a phase out of the plan's order is refused") {
  std::vector<size_t> seen;
  ProfilePhases phases({{"a", 1}, {"b", 1}}, [&](size_t k) { seen.push_back(k); });
  phases.next("a");
  CHECK_THROWS_AS(phases.next("c"), std::logic_error);
  phases.next("b");
  phases.finish();
  CHECK(seen == std::vector<size_t>{0, 1, 2});
  ProfilePhases short_of_plan({{"a", 1}, {"b", 1}}, {});
  short_of_plan.next("a");
  CHECK_THROWS_AS(short_of_plan.finish(), std::logic_error);
}
#endif
