// Hand-computed schedules of the SLO-aware batching policies through the real controller
// (event mode, one worker, MiniSim): which batches go at which virtual time.
// Costs are multiples of 1/8 s so that every time below is exact in binary.
#include <catch2/catch.hpp>

#include "engine/control/controller.h"
#include "mini_sim.h"

using namespace servelab;
using servelab::test::MiniSim;

namespace {

struct Expected {
  Time at;
  std::vector<RequestId> ids;
};

ControllerConfig one_worker(const std::string& policy, std::map<std::string, std::string> p) {
  ControllerConfig cfg;
  cfg.workers = 1;
  cfg.max_batch = 8;
  cfg.batching = {policy, PolicyParams(std::move(p))};
  return cfg;
}

void add_model(Controller& c) { c.add_model(0, ModelInfo{.name = "m"}, Tier::Host); }

// Batch cost: `per_request` seconds a request.
void linear_cost(MiniSim& sim, Time per_request) {
  sim.batch_cost = [per_request](const Batch& b) { return per_request * double(b.requests.size()); };
}

void check_schedule(const MiniSim& sim, const std::vector<Expected>& want) {
  REQUIRE(sim.batches.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("batch " << i);
    CHECK(sim.batches[i].at == want[i].at);
    std::vector<RequestId> ids;
    for (const Request& r : sim.batches[i].batch.requests) ids.push_back(r.id);
    CHECK(ids == want[i].ids);
  }
}

// Algorithm 3 with B = {2, 4}, tau = 2, delta = 0.125 tau = 0.25, c(2) = 0.25, c(4) = 0.5.
std::map<std::string, std::string> small_greedy(bool partial) {
  return {{"batch_sizes", "2,4"}, {"costs", "0.25,0.5"}, {"slo_ms", "2000"},
          {"delta", "0.125"}, {"partial", partial ? "true" : "false"}};
}

}  // namespace

// A queue below min(B) waits for arrivals until its head has waited tau = 2, then goes whole.
// t=0    q=[1]        below min(B): wake at 0 + 2
// t=0.5  q=[1,2]      b=2, due = 0 + 2 - 0.25 - c(2) = 1.5: wake at 1.5
// t=1    q=[1,2,3]    b=2, still due 1.5
// t=1.25 q=[1..4]     queue >= max(B): dispatch 4 (runs to 1.75)
// t=1.5  q=[5]        below min(B): wake at 3.5 (the old wake-ups find nothing to do)
// t=3.5  q=[5]        head waited tau: dispatch [5] (overdue)
// t=4    q=[6]        wake at 6: dispatch [6]
// t=10   q=[7]        no arrival follows: dispatch [7] at 12, so every request ends
TEST_CASE("rafiki-greedy schedule by hand") {
  Controller c(one_worker("rafiki-greedy", small_greedy(false)));
  add_model(c);
  MiniSim sim(c);
  linear_cost(sim, 0.125);
  RequestId id = 1;
  for (Time t : {0.0, 0.5, 1.0, 1.25, 1.5, 4.0, 10.0}) sim.arrive(t, id++, 0);
  sim.run();
  check_schedule(sim, {{1.25, {1, 2, 3, 4}}, {3.5, {5}}, {6.0, {6}}, {12.0, {7}}});
  CHECK(c.total_queued() == 0);
}

// Arrivals stop with five requests below min(B) = 16 (Rafiki's default B), tau = 0.5 s: they
// go as one batch once the oldest has waited tau, at 0.125 + 0.5.
TEST_CASE("rafiki-greedy leftovers end when arrivals stop") {
  Controller c(one_worker("rafiki-greedy", {{"slo_ms", "500"}}));
  add_model(c);
  MiniSim sim(c);
  linear_cost(sim, 0.125);
  for (RequestId id = 1; id <= 5; ++id) sim.arrive(0.125 * double(id), id, 0);
  sim.run();
  check_schedule(sim, {{0.625, {1, 2, 3, 4, 5}}});
  CHECK(c.total_queued() == 0);
}

// fixed size 4 (Clipper as Rafiki ran it, scaled down), deadlines 2 s after arrival, no
// max_wait: a queue below 4 goes once its head reaches its deadline.
// t=0, 0.5, 1   q=[1,2,3]   below 4: wake at 2, dispatch [1,2,3] (runs to 2.375)
// t=3           q=[4]       no arrival follows: dispatch [4] at 5
TEST_CASE("fixed batches below their size go at the head's deadline") {
  Controller c(one_worker("fixed", {{"size", "4"}}));
  add_model(c);
  MiniSim sim(c);
  linear_cost(sim, 0.125);
  RequestId id = 1;
  for (Time t : {0.0, 0.5, 1.0, 3.0}) sim.arrive(t, id++, 0, t + 2);
  sim.run();
  check_schedule(sim, {{2.0, {1, 2, 3}}, {5.0, {4}}});
  CHECK(c.total_queued() == 0);
}

// partial: a lone request is due at arrival + 2 - 0.25 - c(1), c(1) = 0.125: +1.625.
// t=0    q=[1]        b=1, due 1.625
// t=0.5  q=[1,2]      b=2, due 1.5
// t=1.25 q=[1..4]     dispatch 4 (runs to 1.75)
// t=1.5  q=[5]        b=1, due 3.125; t=3.125: dispatch [5]
// t=4    q=[6]        due 5.625: dispatch [6];  t=10: q=[7], due 11.625: dispatch [7]
TEST_CASE("rafiki-greedy partial schedule by hand") {
  Controller c(one_worker("rafiki-greedy", small_greedy(true)));
  add_model(c);
  MiniSim sim(c);
  linear_cost(sim, 0.125);
  RequestId id = 1;
  for (Time t : {0.0, 0.5, 1.0, 1.25, 1.5, 4.0, 10.0}) sim.arrive(t, id++, 0);
  sim.run();
  check_schedule(sim, {{1.25, {1, 2, 3, 4}}, {3.125, {5}}, {5.625, {6}}, {11.625, {7}}});
  CHECK(c.total_queued() == 0);
}

// The first batch holds the worker until 3. Requests 5 and 6 are due at 0.1 + 1.5 = 1.6
// (b = 2) while it is busy; 7 and 8 arrive before it frees. Algorithm 3 decides when the
// worker is free: the queue is 4 = max(B) then, so the batch is 4, not the 2 of time 1.6.
TEST_CASE("rafiki-greedy sizes the batch when the worker frees") {
  Controller c(one_worker("rafiki-greedy", small_greedy(false)));
  add_model(c);
  MiniSim sim(c);
  sim.batch_cost = [](const Batch& b) { return b.id == 1 ? 3.0 : 0.125 * b.requests.size(); };
  RequestId id = 1;
  for (Time t : {0.0, 0.0, 0.0, 0.0, 0.125, 0.25, 2.0, 2.5}) sim.arrive(t, id++, 0);
  sim.run();
  check_schedule(sim, {{0.0, {1, 2, 3, 4}}, {3.0, {5, 6, 7, 8}}});
}

// SLO 1 s, cost 0.25 s a request (a batch of 4 takes exactly the SLO, 5 exceeds it), no
// delay, cap from 1. Twelve requests at t=0, eight at t=5:
//   t=0     [1]           cap 1 (arrival 1 finds the worker free)
//   t=0.25  [2,3]         full batch of 1 in 0.25: cap 2
//   t=0.75  [4,5,6]       cap 3
//   t=1.5   [7..10]       cap 4
//   t=2.5   [11,12]       4 in 1.0 (= SLO, within): cap 5; only 2 queued
//   t=3                   2 < cap: no change
//   t=5     [13]          arrives to a free worker: goes alone (no delayed batching)
//   t=5.25  [14..18]      cap 5
//   t=6.5   [19,20]       5 in 1.25 > SLO: cap 5 * 0.9 = 4.5
void run_clipper(bool slo_from_deadlines) {
  std::map<std::string, std::string> p;
  if (!slo_from_deadlines) p["slo_ms"] = "1000";
  Controller c(one_worker("clipper-aimd", p));
  add_model(c);
  MiniSim sim(c);
  linear_cost(sim, 0.25);
  Time slo = slo_from_deadlines ? 1.0 : kNever;
  for (RequestId id = 1; id <= 20; ++id) {
    Time at = id <= 12 ? 0.0 : 5.0;
    sim.arrive(at, id, 0, at + slo);
  }
  sim.run();
  check_schedule(sim, {{0, {1}}, {0.25, {2, 3}}, {0.75, {4, 5, 6}}, {1.5, {7, 8, 9, 10}},
                       {2.5, {11, 12}}, {5, {13}}, {5.25, {14, 15, 16, 17, 18}},
                       {6.5, {19, 20}}});
}

TEST_CASE("clipper-aimd schedule by hand") {
  SECTION("slo_ms") { run_clipper(false); }
  SECTION("SLO from the requests' deadlines") { run_clipper(true); }
}

// Delayed batching, cap 4, delay 0.5:
//   t=0, 0.125, 0.25: [1,2,3] wait for the delay: dispatched at 0 + 0.5 (runs 0.75)
//   t=2: four arrive; the fourth fills the cap: [4..7] at 2
TEST_CASE("clipper-aimd delayed batching schedule by hand") {
  Controller c(one_worker("clipper-aimd", {{"slo_ms", "1000"}, {"initial", "4"}, {"delay", "0.5"}}));
  add_model(c);
  MiniSim sim(c);
  linear_cost(sim, 0.25);
  RequestId id = 1;
  for (Time t : {0.0, 0.125, 0.25, 2.0, 2.0, 2.0, 2.0}) sim.arrive(t, id++, 0);
  sim.run();
  check_schedule(sim, {{0.5, {1, 2, 3}}, {2.0, {4, 5, 6, 7}}});
}
