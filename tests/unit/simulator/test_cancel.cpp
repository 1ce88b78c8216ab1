// Cancellation: the controller's cancel() on queued and running requests, and clients that
// give up (simulation.client_timeout_s) with cancellations that reach the server later,
// against schedules computed by hand.
#include <catch2/catch.hpp>

#include "engine/control/controller.h"
#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

ControllerConfig one_worker() {
  ControllerConfig c;
  c.workers = 1;
  c.batching = {"none", {}};
  return c;
}

}  // namespace

TEST_CASE("cancel removes a queued request and marks a running one", "[control][cancel]") {
  Controller ctl(one_worker());
  ctl.add_model(0, ModelInfo{"m", 1, 1, 0}, Tier::Host);
  ActionBuffer out;
  for (RequestId id = 0; id < 3; ++id) ctl.on_arrival({id, 0, 0.0, kNever}, 0.0, out);
  REQUIRE(out.dispatches.size() == 1);  // request 0 runs, 1 and 2 wait
  BatchId running = out.dispatches[0].id;
  out.clear();

  REQUIRE(ctl.cancel(2, 0, 0.001, out));  // queued: removed now
  REQUIRE(out.completions.size() == 1);
  CHECK(out.completions[0].request.id == 2);
  CHECK(out.completions[0].status == RequestStatus::Cancelled);
  CHECK(out.completions[0].finished == 0.001);
  CHECK(ctl.total_queued() == 1);
  out.clear();

  REQUIRE(ctl.cancel(0, 0, 0.002, out));   // running: completes when its batch ends
  CHECK(out.completions.empty());
  CHECK_FALSE(ctl.cancel(7, 0, 0.002, out));  // never arrived
  ctl.on_batch_done(running, true, 0.010, out);
  REQUIRE(out.completions.size() == 1);
  CHECK(out.completions[0].status == RequestStatus::Cancelled);
  REQUIRE(out.dispatches.size() == 1);  // request 1 takes the worker
  CHECK(out.dispatches[0].requests[0].id == 1);
  CHECK(ctl.stats().per_model[0].cancelled == 2);
  CHECK_FALSE(ctl.cancel(0, 0, 0.011, out));  // already completed
}

TEST_CASE("a client that gives up cancels its request at the server",
          "[simulator][cancel][ground-truth]") {
  // One worker, 10 ms a request, requests at 0, 0, 0 and 30 ms; clients give up after 15 ms
  // and their cancellation reaches the server 1 ms later. Request 0 runs 0..10 ms (ok).
  // Request 1 runs 10..20 ms; its client gives up at 15 ms and the server discards its result.
  // Request 2 is still queued at 16 ms and is removed: it never runs. So request 3 finds the
  // worker idle at 30 ms and ends at 40 ms (with request 2 run, it would end at 50 ms).
  SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(0.010));
  s.client_timeout = 0.015;
  s.cancel_delay = 0.001;
  workloads::Workload w;
  w.send_times = {0, 0, 0, 0.030};
  w.models = {0, 0, 0, 0};
  SimulationResult r = simulate(s, w);
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  const auto& q = r.records.requests;
  CHECK(q[0].status == RequestStatus::Ok);
  CHECK(q[0].finish == Approx(0.010));
  CHECK(q[1].status == RequestStatus::Cancelled);
  CHECK(q[1].finish == Approx(0.015));
  CHECK(q[2].status == RequestStatus::Cancelled);
  CHECK(q[2].finish == Approx(0.015));
  CHECK(q[3].status == RequestStatus::Ok);
  CHECK(q[3].dispatch == Approx(0.030));
  CHECK(q[3].finish == Approx(0.040));
  CHECK(r.records.mean_batch_size == 1);
  const nlohmann::json sum = results::summarize(r.records);
  CHECK(sum["completed"] == 2);
  CHECK(sum["failed_by_status"]["cancelled"] == 2);
}

TEST_CASE("a closed-loop client sends its next request when it gives up",
          "[simulator][cancel][ground-truth]") {
  // One client, 10 ms service, room for one model on the device, loads of 50 ms; the client
  // gives up after 45 ms. Request 0 (model 0) runs 0..10 ms. Request 1 (model 1), sent at
  // 10 ms, waits for its load (10..60 ms); its client gives up at 55 ms and sends request 2
  // (model 1) then. Request 1's batch still runs (60..70 ms, result discarded), so request 2
  // takes the worker at 70 ms and ends at 80 ms, before its own give-up (100 ms).
  SimulationSetup s = test::cache_setup(2, 1, test::constant_profile(0.010, 0, 0.050));
  s.client_timeout = 0.045;
  SimulationResult r = simulate(s, test::closed_loop({0, 1, 1}));
  INFO((r.violations.empty() ? "" : r.violations[0]));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  const auto& q = r.records.requests;
  CHECK(q[0].finish == Approx(0.010));
  CHECK(q[1].status == RequestStatus::Cancelled);
  CHECK(q[1].finish == Approx(0.055));
  CHECK(q[2].arrival == Approx(0.055));
  CHECK(q[2].status == RequestStatus::Ok);
  CHECK(q[2].dispatch == Approx(0.070));
  CHECK(q[2].start == Approx(0.070));
  CHECK(q[2].finish == Approx(0.080));
  CHECK(r.records.loads == 1);
}
