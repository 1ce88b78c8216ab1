// WorkloadStream hands out generate()'s schedule request by request: every registered arrival
// process with every access pattern, under each kind of limit.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "tests/unit/workloads/test_helpers.h"
#include "workloads/workload_stream.h"

using namespace servelab::workloads;

namespace {

// A spec of `arrival` and `access` with fields every type can run on.
WorkloadSpec spec_of(const std::string& arrival, const std::string& access, uint32_t models) {
  WorkloadSpec s;
  s.num_models = models;
  s.arrival.type = arrival;
  s.arrival.rate = 300;
  s.arrival.peak_base = 250;
  s.arrival.period = 7;
  s.arrival.noise = 0.2;
  s.arrival.concurrency = 3;
  s.arrival.think_time = 0.01;
  s.arrival.trace_file = test::traces_dir() + "/azure-llm-2023-code.csv";
  s.arrival.time_scale = 0.5;
  s.access.type = access;
  s.access.alpha = 1.3;
  s.access.weights.assign(models, 1.0);
  s.access.weights[0] = 3;
  s.access.trace_file = test::traces_dir() + "/azure-llm-2023-conv.csv";
  s.access.trace_column = "GeneratedTokens";
  return s;
}

void check_same_schedule(const WorkloadSpec& spec) {
  const Workload w = generate(spec);
  WorkloadStream stream(spec);
  CHECK(stream.closed_loop() == w.closed_loop);
  CHECK(stream.concurrency() == w.concurrency);
  const std::vector<double>& times = w.closed_loop ? w.think_times : w.send_times;
  ScheduledRequest r;
  size_t i = 0;
  for (; stream.next(r); ++i) {
    REQUIRE(i < w.models.size());
    REQUIRE(r.model == w.models[i]);
    REQUIRE(r.time == times[i]);  // bit for bit
  }
  CHECK(i == w.models.size());
  CHECK(stream.produced() == w.models.size());
  CHECK_FALSE(stream.next(r));  // and it stays ended
}

}  // namespace

TEST_CASE("a workload stream gives generate()'s schedule for every registered type",
          "[workloads][stream]") {
  for (const WorkloadTypeHelp& arrival : arrival_processes()) {
    for (const WorkloadTypeHelp& access : access_patterns()) {
      for (uint32_t models : {1u, 7u}) {
        INFO(arrival.name << " / " << access.name << ", " << models << " models");
        WorkloadSpec s = spec_of(arrival.name, access.name, models);
        s.requests = 4000;  // a count limit
        check_same_schedule(s);
        if (arrival.name == "closed") continue;  // closed loops have a count only
        s.requests = 0;  // a duration limit
        s.duration = 9.5;
        check_same_schedule(s);
        s.requests = 2500;  // both: the first reached ends it
        s.duration = 4.25;
        check_same_schedule(s);
      }
    }
  }
}

TEST_CASE("a workload stream rejects what generate() rejects, with its message",
          "[workloads][stream]") {
  WorkloadSpec none = spec_of("poisson", "uniform", 2);
  none.requests = 0;
  none.duration = 1e-12;  // the first gap is longer: no request at all
  std::string expected;
  try {
    generate(none);
  } catch (const std::invalid_argument& e) {
    expected = e.what();
  }
  REQUIRE_FALSE(expected.empty());
  CHECK_THROWS_WITH(WorkloadStream(none), expected);

  WorkloadSpec bad = spec_of("sine", "weights", 3);
  bad.requests = 10;
  bad.access.weights = {1, 2};  // one short
  CHECK_THROWS_AS(WorkloadStream(bad), std::invalid_argument);
}
