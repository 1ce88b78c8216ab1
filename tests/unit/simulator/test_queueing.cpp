// Ground truth from queueing theory: M/D/1 through the whole simulator and controller.
// Pollaczek-Khinchine for deterministic service D at load rho: mean wait rho*D/(2*(1-rho)).
#include <catch2/catch.hpp>

#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

TEST_CASE("M/D/1 mean waiting time matches Pollaczek-Khinchine", "[simulator][ground-truth]") {
  const double D = 0.010;
  struct Case {
    double rho;
    size_t requests;  // enough for a standard error of ~0.5% of the mean wait (by the
                      // autocorrelation of M/D/1 waits, larger at higher load)
  };
  for (Case c : {Case{0.5, 1000000}, Case{0.8, 2000000}}) {
    DYNAMIC_SECTION("rho " << c.rho) {
      SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(D));
      workloads::Workload w = test::poisson(c.requests, c.rho / D, 1, 42);
      SimulationResult r = simulate(s, w);
      REQUIRE(r.violations.empty());
      REQUIRE(r.lost == 0);
      double sum = 0;
      for (const auto& q : r.records.requests) {
        REQUIRE(q.status == RequestStatus::Ok);
        REQUIRE(q.batch_size == 1);
        REQUIRE(q.finish - q.dispatch == Approx(D));
        sum += q.dispatch - q.arrival;
      }
      double mean_wait = sum / r.records.requests.size();
      double theory = c.rho * D / (2 * (1 - c.rho));
      INFO("simulated " << mean_wait << " theory " << theory);
      CHECK(std::abs(mean_wait / theory - 1) < 0.02);
    }
  }
}

TEST_CASE("k workers serve k requests at once", "[simulator]") {
  SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(0.010));
  s.control.workers = 3;
  s.models[0].contexts = 3;
  SimulationResult r = simulate(s, test::closed_loop(std::vector<uint32_t>(300, 0), 3));
  REQUIRE(r.violations.empty());
  // 300 requests, 3 at a time, 10 ms each: 1 s of virtual time.
  CHECK(r.end_time == Approx(1.0));
}

TEST_CASE("a warm-up leaves the opening burst out of the summary", "[simulator][ground-truth]") {
  // One worker, 10 ms a request, 3 in flight: the opening burst waits 10, 20, 30 ms; from then
  // on every request finds the two others ahead of it, so each takes exactly 30 ms.
  SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(0.010));
  workloads::Workload w = test::closed_loop(std::vector<uint32_t>(300, 0), 3);
  const nlohmann::json all = results::summarize(simulate(s, w).records);
  CHECK(all["latency_ms"]["mean"].get<double>() < 30 - 0.05);
  w.warmup = 0.001;  // only the burst sent at t = 0
  SimulationResult r = simulate(s, w);
  REQUIRE(r.violations.empty());
  CHECK(r.records.requests.size() == 300);  // the records keep every request
  const nlohmann::json steady = results::summarize(r.records);
  CHECK(steady["warmup_requests"] == 3);
  CHECK(steady["completed"] == 297);
  CHECK(steady["latency_ms"]["mean"].get<double>() == Approx(30));
  CHECK(steady["latency_ms"]["p50"].get<double>() == Approx(30));
  CHECK(steady["latency_ms"]["max"].get<double>() == Approx(30));
  // Throughput stays the whole run's: 300 in 3 s.
  CHECK(steady["throughput_rps"].get<double>() == Approx(100));
}

TEST_CASE("request overheads: client-side times, IO threads spread a burst", "[simulator]") {
  SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(0.010));
  RequestOverhead& o = s.models[0].overhead;
  o.before = 0.003;      // 1 ms of it pure delay, 2 ms preprocessing on an IO thread
  o.preprocess = 0.002;
  o.after = 0.001;
  s.io_threads = 1;
  SECTION("one client: latency = before + batch + after; next send at the answer") {
    SimulationResult r = simulate(s, test::closed_loop(std::vector<uint32_t>(10, 0), 1));
    REQUIRE(r.violations.empty());
    for (const auto& q : r.records.requests) {
      CHECK(q.finish - q.arrival == Approx(0.014));
      CHECK(q.dispatch - q.arrival == Approx(0.003));
      CHECK(q.queued == Approx(q.dispatch));  // nothing ahead of it
    }
    CHECK(r.records.requests[1].arrival == Approx(r.records.requests[0].finish));
  }
  SECTION("a burst queues for the IO thread: arrivals 2 ms apart") {
    SimulationResult r = simulate(s, test::closed_loop(std::vector<uint32_t>(3, 0), 3));
    REQUIRE(r.violations.empty());
    // The IO thread passes them to the controller at 1 + 2, 1 + 4 and 1 + 6 ms.
    CHECK(r.records.requests[0].queued == Approx(0.003));
    CHECK(r.records.requests[1].queued == Approx(0.005));
    CHECK(r.records.requests[2].queued == Approx(0.007));
    CHECK(r.records.requests[0].dispatch == Approx(0.003));
    CHECK(r.records.requests[1].dispatch == Approx(0.013));  // worker busy until 0.013
    CHECK(r.records.requests[2].finish == Approx(0.033 + 0.001));
  }
}
