// WorkloadStream hands out generate()'s schedule request by request, and counts its requests
// per model: every registered arrival process with every access pattern, under each kind of
// limit.
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
  // model_counts: the schedule's requests per model, the stream's position unchanged; a
  // bound below the models leaves the others out.
  std::vector<uint64_t> per_model(spec.num_models, 0);
  for (uint32_t m : w.models) ++per_model[m];
  CHECK(stream.model_counts(spec.num_models) == per_model);
  per_model.pop_back();
  CHECK(stream.model_counts(spec.num_models - 1) == per_model);
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

// The stream draws on a thread of its own, in chunks (1024 requests, then 16384 each), a few
// chunks ahead: schedules of several chunks, ending inside one or exactly at the end of one,
// hand out the same requests.
TEST_CASE("a workload stream drawn ahead in chunks gives generate()'s schedule",
          "[workloads][stream]") {
  for (uint64_t requests : {1024 + 3 * 16384 + 17, 1024 + 16384, 1024, 1025}) {
    INFO(requests << " requests");
    WorkloadSpec open = spec_of("poisson", "zipf", 7);
    open.requests = requests;
    check_same_schedule(open);
    WorkloadSpec closed = spec_of("closed", "uniform", 3);
    closed.requests = requests;
    check_same_schedule(closed);
  }
  WorkloadSpec timed = spec_of("sine", "weights", 7);
  timed.duration = 120;  // about 30,000 requests, the last chunk cut by the duration
  check_same_schedule(timed);
}

// A consumer may stop long before the schedule ends (a run's duration, an error) and streams
// move: the drawer thread follows its stream and stops with it.
TEST_CASE("a workload stream can be moved and dropped mid-schedule", "[workloads][stream]") {
  WorkloadSpec prefix = spec_of("poisson", "zipf", 5);
  prefix.requests = 60000;
  const Workload w = generate(prefix);
  WorkloadSpec long_run = prefix;
  long_run.requests = 50'000'000;  // far more than the drawer may run ahead
  size_t i = 0;
  auto take = [&](WorkloadStream& s, size_t n) {
    ScheduledRequest r;
    for (size_t k = 0; k < n; ++k, ++i) {
      REQUIRE(s.next(r));
      REQUIRE(r.model == w.models[i]);
      REQUIRE(r.time == w.send_times[i]);
    }
  };
  WorkloadStream a(long_run);
  take(a, 30000);
  WorkloadStream b(std::move(a));
  take(b, 15000);
  WorkloadStream c(spec_of("closed", "uniform", 2));  // running its own drawer
  c = std::move(b);
  take(c, 15000);
  CHECK(c.produced() == 60000);
  // c, with millions of requests left undrawn, is dropped here: its destructor returns.
}
