// Backup requests with cross-server cancellation in the simulated cluster, on hand-computed
// schedules: two one-worker servers, batching none, m0 takes 10 ms and m1 30 ms, backups 2 ms
// after sending, cancellations arriving at once (cancel_delay 0), round-robin.
#include <catch2/catch.hpp>

#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

SimulationSetup backups(bool cancel_copies) {
  SimulationSetup s = test::cache_setup(2, 2, test::constant_profile(0.010));
  s.models[1].profile = test::constant_profile(0.030);
  s.cluster.servers = 2;
  s.cluster.router = {"round-robin", {}};
  s.cluster.backup_after = 0.002;
  s.cluster.cancel_copies = cancel_copies;
  return s;
}

workloads::Workload requests(std::vector<uint32_t> models, std::vector<double> times) {
  workloads::Workload w;
  w.models = std::move(models);
  w.send_times = std::move(times);
  return w;
}

std::vector<double> finishes(const SimulationResult& r) {
  std::vector<double> f;
  for (const auto& q : r.records.requests) f.push_back(q.finish);
  return f;
}

void check_clean(const SimulationResult& r) {
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  for (const auto& q : r.records.requests) REQUIRE(q.status == RequestStatus::Ok);
}

}  // namespace

TEST_CASE("backups without cancellation run every copy and waste the losers' work",
          "[simulator][cluster][backup]") {
  // r0 (m0, 0) -> server 0, 0..10 ms; r1 (m1, 0) -> server 1, 0..30; r2 (m0, 1 ms) -> server 0,
  // queued. At 2 ms r0 and r1 get copies on the other server, at 3 ms r2. Server 0: r2 10..20
  // (answered), r1's copy 20..50 (r1 answered at 30 by server 1: wasted 30 ms). Server 1 after
  // r1: r0's copy 30..40 and r2's 40..50 (both answered already: 10 + 10 ms wasted).
  const SimulationResult r = simulate(backups(false), requests({0, 1, 0}, {0, 0, 0.001}));
  check_clean(r);
  CHECK(finishes(r) == std::vector<double>{0.010, 0.030, 0.020});
  CHECK(r.backups_sent == 3);
  CHECK(r.copies_cancelled == 0);
  CHECK(r.copies_wasted == 3);
  CHECK(r.wasted_seconds == Approx(0.050));
}

TEST_CASE("with cancellation a dequeued request gets no backup and a dequeue removes the "
          "queued copy", "[simulator][cluster][backup]") {
  // r0 and r1 are dequeued at once: no copies. r2's copy goes to server 1 at 3 ms (queued
  // behind r1 until 30). Server 0 dequeues r2 at 10 ms: the copy is removed from server 1's
  // queue before it ran. Nothing is wasted.
  const SimulationResult r = simulate(backups(true), requests({0, 1, 0}, {0, 0, 0.001}));
  check_clean(r);
  CHECK(finishes(r) == std::vector<double>{0.010, 0.030, 0.020});
  CHECK(r.backups_sent == 1);
  CHECK(r.copies_cancelled == 1);
  CHECK(r.copies_wasted == 0);
}

TEST_CASE("a backup on a server that frees first answers and the primary is removed",
          "[simulator][cluster][backup]") {
  // r0 (m1, 0) -> server 0, 0..30; r1 (m0, 0) -> server 1, 0..10; r2 (m0, 1 ms) -> server 0,
  // behind r0: without backups it ends at 40 ms. Its copy (3 ms) waits on server 1, which
  // dequeues it at 10: it ends at 20 and the primary is taken out of server 0's queue.
  const workloads::Workload w = requests({1, 0, 0}, {0, 0, 0.001});
  SimulationSetup none = backups(true);
  none.cluster.backup_after = kNever;
  CHECK(finishes(simulate(none, w)) == std::vector<double>{0.030, 0.010, 0.040});
  const SimulationResult r = simulate(backups(true), w);
  check_clean(r);
  CHECK(finishes(r) == std::vector<double>{0.030, 0.010, 0.020});
  CHECK(r.backups_sent == 1);
  CHECK(r.copies_cancelled == 1);
  CHECK(r.copies_wasted == 0);
}

TEST_CASE("backups keep the controller contract under every router",
          "[simulator][cluster][backup][contract]") {
  for (const bool cancel : {false, true}) {
    for (const char* router : {"round-robin", "random", "least-outstanding", "power-of-two"}) {
      DYNAMIC_SECTION(router << (cancel ? " with cancellation" : " without")) {
        SimulationSetup s = test::cache_setup(4, 4, test::constant_profile(0.004, 0.001));
        s.control.batching = {"max-delay", {}};
        s.cluster.servers = 3;
        s.cluster.router = {router, {}};
        s.cluster.backup_after = 0.003;
        s.cluster.cancel_copies = cancel;
        s.cancel_delay = 0.0005;
        const workloads::Workload w = test::poisson(3000, 300, 4, 9);
        const SimulationResult a = simulate(s, w), b = simulate(s, w);
        check_clean(a);
        CHECK(a.backups_sent > 0);
        for (size_t i = 0; i < w.models.size(); ++i)
          REQUIRE(a.records.requests[i].finish == b.records.requests[i].finish);
      }
    }
  }
}
