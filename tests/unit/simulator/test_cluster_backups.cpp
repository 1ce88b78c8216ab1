// Backup requests with cross-server cancellation in the simulated cluster, on hand-computed
// schedules: two one-worker servers, batching none, m0 takes 10 ms and m1 30 ms, backups 2 ms
// after sending (or at a percentile of each model's latency), cancellations arriving at once
// (cancel_delay 0), round-robin; and each request's backup fields against the run's counters.
#include <catch2/catch.hpp>

#include <cmath>

#include "results/records.h"
#include "sim_test_util.h"
#include "tests/support/temp_dir.h"

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
  CHECK(test::finish_times(r) == std::vector<double>{0.010, 0.030, 0.020});
  CHECK(r.backups_sent == 3);
  CHECK(r.copies_cancelled == 0);
  CHECK(r.copies_wasted == 3);
  CHECK(r.wasted_seconds == Approx(0.050));
  // Per request: every one had a copy, answered by its primary; the losers ran 30, 10, 10 ms.
  std::vector<double> wasted;
  for (const auto& q : r.records.requests) {
    CHECK(q.backup_sent);
    CHECK(q.won_by == results::RequestRecord::Copy::Primary);
    CHECK_FALSE(q.copy_cancelled);
    wasted.push_back(q.wasted);
  }
  CHECK(wasted[0] == Approx(0.010));
  CHECK(wasted[1] == Approx(0.030));
  CHECK(wasted[2] == Approx(0.010));
}

TEST_CASE("with cancellation a dequeued request gets no backup and a dequeue removes the "
          "queued copy", "[simulator][cluster][backup]") {
  // r0 and r1 are dequeued at once: no copies. r2's copy goes to server 1 at 3 ms (queued
  // behind r1 until 30). Server 0 dequeues r2 at 10 ms: the copy is removed from server 1's
  // queue before it ran. Nothing is wasted.
  const SimulationResult r = simulate(backups(true), requests({0, 1, 0}, {0, 0, 0.001}));
  check_clean(r);
  CHECK(test::finish_times(r) == std::vector<double>{0.010, 0.030, 0.020});
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
  CHECK(test::finish_times(simulate(none, w)) == std::vector<double>{0.030, 0.010, 0.040});
  const SimulationResult r = simulate(backups(true), w);
  check_clean(r);
  CHECK(test::finish_times(r) == std::vector<double>{0.030, 0.010, 0.020});
  CHECK(r.backups_sent == 1);
  CHECK(r.copies_cancelled == 1);
  CHECK(r.copies_wasted == 0);
  const auto& q = r.records.requests;
  CHECK(q[2].backup_sent);
  CHECK(q[2].won_by == results::RequestRecord::Copy::Backup);
  CHECK(q[2].copy_cancelled);
  CHECK(q[2].wasted == 0);
  CHECK_FALSE(q[0].backup_sent);
  CHECK(q[0].won_by == results::RequestRecord::Copy::None);
}

TEST_CASE("a percentile delay follows each model's answered latencies so far",
          "[simulator][cluster][backup][percentile]") {
  // Round-robin sends r0, r2, r4 to server 0 and r1, r3, r5 to server 1. r0 (m0, 0): 0..10,
  // r1 (m1, 0): 0..30. r2 (m0, 1 ms) waits behind r0 (10..20) and r3 (m1, 2 ms) behind r1
  // (30..60): neither model has an answer yet when they are sent, so no backup. r4 (m0, 21
  // ms) runs at once (21..31). r5 (m0, 22 ms) would wait behind r3 until 60; m0's answers so
  // far took 10 and 19 ms, so its backup goes at 22 plus their p50 of 14.5 ms (p95: 18.55
  // ms) to server 0, idle since 31, and ends 10 ms later; its primary leaves server 1's queue.
  const workloads::Workload w = requests({0, 1, 0, 1, 0, 0}, {0, 0, 0.001, 0.002, 0.021, 0.022});
  SimulationSetup s = backups(true);
  s.cluster.backup_after = kNever;
  CHECK(test::finish_times(simulate(s, w)) ==
        std::vector<double>{0.010, 0.030, 0.020, 0.060, 0.031, 0.070});
  for (const auto& [p, r5] : {std::pair{50.0, 0.0465}, std::pair{95.0, 0.05055}}) {
    s.cluster.backup_percentile = p;
    const SimulationResult r = simulate(s, w);
    check_clean(r);
    const std::vector<double> f = test::finish_times(r);
    CHECK(std::vector<double>(f.begin(), f.end() - 1) ==
          std::vector<double>{0.010, 0.030, 0.020, 0.060, 0.031});
    CHECK(f.back() == Approx(r5).margin(1e-12));
    CHECK(r.backups_sent == 1);
    CHECK(r.copies_cancelled == 1);
    CHECK(r.copies_wasted == 0);
  }
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

TEST_CASE("per-request backup rows add up to the run's counters and its summary",
          "[simulator][cluster][backup][records]") {
  // Cancellations that take 1 ms let some losing copies start: every field is exercised.
  SimulationSetup s = test::cache_setup(4, 4, test::constant_profile(0.004, 0.001));
  s.cluster.servers = 3;
  s.cluster.router = {"random", {}};
  s.cluster.backup_percentile = 50;
  s.cancel_delay = 0.001;
  const SimulationResult r = simulate(s, test::poisson(3000, 500, 4, 5));
  check_clean(r);
  REQUIRE(r.records.backups);
  uint64_t sent = 0, cancelled = 0, wasted = 0, by_backup = 0;
  double wasted_s = 0;
  for (const auto& q : r.records.requests) {
    sent += q.backup_sent;
    cancelled += q.copy_cancelled;
    wasted += q.wasted > 0;
    wasted_s += q.wasted;
    by_backup += q.won_by == results::RequestRecord::Copy::Backup;
    if (!q.backup_sent) REQUIRE(q.won_by == results::RequestRecord::Copy::None);
  }
  CHECK(sent == r.backups_sent);
  CHECK(cancelled == r.copies_cancelled);
  CHECK(wasted == r.copies_wasted);
  CHECK(wasted_s == Approx(r.wasted_seconds));
  REQUIRE(r.copies_wasted > 0);
  REQUIRE(by_backup > 0);
  const nlohmann::json b = results::summarize(r.records)["backups"];
  CHECK(b["sent"] == sent);
  CHECK(b["won_by_backup"] == by_backup);
  CHECK(b["copies_cancelled"] == cancelled);
  CHECK(b["copies_wasted"] == wasted);
  CHECK(b["extra_load"].get<double>() == Approx(double(sent) / 3000));
  // requests.csv keeps them.
  servelab::testutil::TempDir dir("servelab-backup-rows");
  const std::string path = (dir / "requests.csv").string();
  results::write_requests_csv(path, r.records);
  const results::RunRecords back = results::read_requests_csv(path);
  REQUIRE(back.backups);
  CHECK(results::summarize(back)["backups"]["won_by_backup"] == by_backup);
  CHECK(results::summarize(back)["backups"]["wasted_seconds"].get<double>() ==
        Approx(wasted_s));
}
