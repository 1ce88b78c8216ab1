// Model groups (ensembles) in the simulator against schedules and accuracies computed by hand:
// a group request fans out into member requests in the members' ordinary queues, its answer
// is final with its slowest member, members that do not answer Ok do not vote, least-loaded
// picks the members with the shortest queues, and a give-up cancels the members.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

// Models a (10 ms), b (20 ms), c (40 ms) a request, batching none, `workers` workers, all
// resident; group g = {a, b, c} (workload index 3) with `subset`. Every subset's accuracy is
// 0.5 + mask / 100, so a record's accuracy names exactly the members that voted.
SimulationSetup group_setup(uint32_t workers, PolicySpec subset = {"all", {}}) {
  SimulationSetup s = test::cache_setup(3, 3, test::constant_profile(0.010));
  s.models[1].profile = test::constant_profile(0.020);
  s.models[2].profile = test::constant_profile(0.040);
  s.control.workers = workers;
  SimGroup g{"g", {0, 1, 2}, std::move(subset), {}, {}, {}};
  g.accuracy.by_mask.assign(8, NAN);
  for (MemberMask m = 1; m < 8; ++m) g.accuracy.by_mask[m] = 0.5 + m / 100.0;
  s.groups.push_back(g);
  return s;
}

// Open loop: request i to workload index targets[i] at times[i].
workloads::Workload sends(std::vector<double> times, std::vector<uint32_t> targets) {
  workloads::Workload w = test::arrivals(std::move(times));
  w.models = std::move(targets);
  return w;
}

double latency(const results::RequestRecord& r) { return r.finish - r.arrival; }

}  // namespace

TEST_CASE("a group request fans out to every member and answers with the slowest",
          "[simulator][groups][ground-truth]") {
  // Three workers, one context per model. Group request 0 at 0: a runs 0..10 ms, b 0..20, c
  // 0..40, so it ends at 40 ms. Group request 1 at 15 ms: a' runs 15..25 on the worker a freed;
  // b' waits for b's context (and a worker) until 20 and runs 20..40; c' waits for c until 40
  // and runs 40..80: latency 65 ms. A plain request to b at 16 ms queues behind b' (40..60).
  SimulationSetup s = group_setup(3);
  SimulationResult r = simulate(s, sends({0, 0.015, 0.016}, {3, 3, 1}));
  REQUIRE(r.violations.empty());
  const auto& rec = r.records.requests;
  REQUIRE(rec.size() == 3);
  CHECK(r.records.model_names == std::vector<std::string>{"m0", "m1", "m2", "g"});
  CHECK(rec[0].model == 3);
  CHECK(rec[0].status == RequestStatus::Ok);
  CHECK(latency(rec[0]) == Approx(0.040));
  CHECK(rec[0].start == Approx(0.0));  // the slowest member's (c) start
  CHECK(latency(rec[1]) == Approx(0.065));
  CHECK(rec[1].start == Approx(0.040));
  CHECK(rec[2].finish == Approx(0.060));
  CHECK(rec[0].accuracy == Approx(0.57));  // all three voted: mask 7
  CHECK(rec[1].accuracy == Approx(0.57));
  CHECK(std::isnan(rec[2].accuracy));      // m1's own accuracy is unknown here
}

TEST_CASE("a fixed subset sends only its members", "[simulator][groups][ground-truth]") {
  // fixed {a, c}: one worker; the group request at 0 runs a 0..10 and c 10..50 (b never
  // runs), so it answers at 50 ms with accuracy of mask 0b101.
  PolicySpec fixed{"fixed", {}};
  fixed.params.set("members", "m0,m2");
  SimulationResult r = simulate(group_setup(1, fixed), sends({0}, {3}));
  REQUIRE(r.violations.empty());
  const auto& rec = r.records.requests;
  CHECK(latency(rec[0]) == Approx(0.050));
  CHECK(rec[0].accuracy == Approx(0.55));
  CHECK(r.records.mean_batch_size == Approx(1.0));
}

TEST_CASE("least-loaded picks the members with the shortest queues",
          "[simulator][groups][ground-truth]") {
  // One worker. At 0 a plain request to a takes the worker (0..10 ms). At 1 ms plain requests
  // to a and b queue: a and b have one queued each, c none. The group request at 2 ms with
  // k = 2 picks c (0 queued) and, of a and b (1 each), a (member order): mask 0b101.
  PolicySpec ll{"least-loaded", {}};
  ll.params.set("k", "2");
  SimulationResult r = simulate(group_setup(1, ll), sends({0, 0.001, 0.001, 0.002}, {0, 0, 1, 3}));
  REQUIRE(r.violations.empty());
  CHECK(r.records.requests[3].accuracy == Approx(0.55));
  ll.params.set("k", "1");  // k = 1: c alone, mask 0b100
  r = simulate(group_setup(1, ll), sends({0, 0.001, 0.001, 0.002}, {0, 0, 1, 3}));
  CHECK(r.records.requests[3].accuracy == Approx(0.54));
}

TEST_CASE("a member dropped past its deadline does not vote but the group waits for it",
          "[simulator][groups][ground-truth]") {
  // Two workers, SLO 30 ms, late requests dropped. A plain request to c at 0 holds c's only
  // context until 40 ms. The group request at 1 ms: a' runs 1..11 ms (ok), b' waits for a
  // worker and runs 11..31 ms (ok), c' waits for c and is dropped at its deadline, 31 ms
  // (before b's completion at the same instant: the controller's deadlines come first). The
  // group answer is final at 31 ms with a and b voting: accuracy of mask 0b011, status Ok.
  SimulationSetup s = group_setup(2);
  s.slo = 0.030;
  s.control.drop_late = true;
  SimulationResult r = simulate(s, sends({0, 0.001}, {2, 3}));
  REQUIRE(r.violations.empty());
  const auto& g = r.records.requests[1];
  CHECK(g.status == RequestStatus::Ok);
  CHECK(g.finish == Approx(0.031));
  CHECK(g.accuracy == Approx(0.53));
  CHECK(g.batch_size == 1);  // the record's batch fields are the last member's: b', alone

  // With only c in the group's subset nobody votes: the request is dropped, accuracy unknown.
  PolicySpec only_c{"fixed", {}};
  only_c.params.set("members", "m2");
  s.groups[0].subset = only_c;
  r = simulate(s, sends({0, 0.001}, {2, 3}));
  CHECK(r.records.requests[1].status == RequestStatus::Dropped);
  CHECK(std::isnan(r.records.requests[1].accuracy));
}

TEST_CASE("a group request given up on cancels its queued members",
          "[simulator][groups][cancel][ground-truth]") {
  // One worker; a and b cost 10 ms, c 30 ms; clients give up after 25 ms, cancellations arrive
  // at once. A plain request to c runs 0..30 ms. The group request {a, b} at 1 ms queues both
  // members; its client gives up at 26 ms and both are removed. A plain request to a at 27 ms
  // then runs 30..40 ms (had the members stayed, a' and b' would run first: 50..60 ms).
  SimulationSetup s = group_setup(1);
  s.models[1].profile = test::constant_profile(0.010);
  s.models[2].profile = test::constant_profile(0.030);
  PolicySpec ab{"fixed", {}};
  ab.params.set("members", "m0,m1");
  s.groups[0].subset = ab;
  s.client_timeout = 0.025;
  SimulationResult r = simulate(s, sends({0, 0.001, 0.027}, {2, 3, 0}));
  REQUIRE(r.violations.empty());
  const auto& rec = r.records.requests;
  CHECK(rec[1].status == RequestStatus::Cancelled);
  CHECK(rec[1].finish == Approx(0.026));
  CHECK(rec[2].status == RequestStatus::Ok);
  CHECK(rec[2].finish == Approx(0.040));
  CHECK(r.lost == 0);
}

TEST_CASE("group runs are deterministic and stream their records in id order",
          "[simulator][groups][determinism]") {
  PolicySpec ll{"least-loaded", {}};
  ll.params.set("k", "2");
  SimulationSetup s = group_setup(2, ll);
  s.noise = CostNoise::Normal;
  for (SimModel& m : s.models) m.profile.batches[0].stddev = 0.002;
  s.slo = 0.060;
  s.control.drop_late = true;
  workloads::Workload w = test::poisson(2000, 60, 4, 11);  // models and the group, uniformly
  SimulationResult a = simulate(s, w), b = simulate(s, w);
  REQUIRE(a.violations.empty());
  REQUIRE(a.records.requests.size() == 2000);
  REQUIRE(a.lost == 0);
  size_t groups = 0;
  for (size_t i = 0; i < 2000; ++i) {
    const auto& x = a.records.requests[i];
    const auto& y = b.records.requests[i];
    REQUIRE(x.id == i);
    groups += x.model == 3;
    CHECK(x.finish == y.finish);
    CHECK(x.status == y.status);
    CHECK((x.accuracy == y.accuracy || (std::isnan(x.accuracy) && std::isnan(y.accuracy))));
  }
  CHECK(groups > 400);
}
