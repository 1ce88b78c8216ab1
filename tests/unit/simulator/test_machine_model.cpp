// MachineModel (calibration/terms/machine_model.h) on its own, noise off so that every cost is
// computed by hand from the profile and the fitted terms: the served extra, the idle
// slowdown (only where the server emptied while the worker idled), a served miss's wait and
// its first batch, a speed trace (which leaves the profile's speed terms out), evictions.
#include <catch2/catch.hpp>

#include "calibration/terms/machine_model.h"
#include "sim_test_util.h"

using namespace servelab;

namespace {

struct Fixture {
  ModelProfile profile = sim::test::constant_profile(0.010, 0.002, 0.050);  // b1 10 ms, load 50
  RequestOverhead overhead;
  IdleSlowdown idle;
  std::vector<SpeedWindow> trace;
  MachineTerms terms() {
    MachineTerms t;
    t.profiles = {&profile};
    t.overheads = {&overhead};
    t.idle_slowdown = &idle;
    t.speed_trace = &trace;
    t.exec_tier = Tier::Device;
    return t;
  }
};

}  // namespace

TEST_CASE("machine model: the profile's cost plus the served extra, slower after idling only "
          "where the server emptied", "[simulator][machine]") {
  Fixture f;
  f.overhead.served_extra = 0.001;
  f.idle.points = {{0.100, 2.0}};  // factor 2 after 100 ms idle, linear from 1 at 0
  MachineModel m(f.terms(), 1);
  CHECK(m.batch_cost(0, 1, 0.0, 0.0, false) == Approx(0.011));
  CHECK(m.batch_cost(0, 8, 0.0, 0.0, false) == Approx(0.010 + 7 * 0.002 + 0.001));
  // 50 ms idle while the server emptied: factor 1.5, then the served extra.
  CHECK(m.batch_cost(0, 1, 0.150, 0.100, true) == Approx(0.010 * 1.5 + 0.001));
  CHECK(m.batch_cost(0, 1, 0.150, 0.100, false) == Approx(0.011));  // requests were queued
  // A measured served batch after idling (30 ms against the profile's 10): reached as the
  // slowdown ramps, and it holds the served extra already.
  f.overhead.served_idle_batch = 0.030;
  MachineModel served(f.terms(), 1);
  CHECK(served.batch_cost(0, 1, 0.150, 0.100, true) == Approx(0.010 * (1 + 2.0 * 0.5)));
}

TEST_CASE("machine model: a miss served from an empty server waits the served load, and its "
          "first batch costs the served first batch", "[simulator][machine]") {
  Fixture f;
  f.overhead.served_miss_load = 0.080;
  f.overhead.served_miss_batch = 0.025;
  MachineModel m(f.terms(), 1);
  const LoadAction to_device{0, Tier::Host, Tier::Device};
  CHECK(m.load_cost(to_device, 1.0, 1.0, false) == Approx(0.050));  // not from empty
  CHECK(m.batch_cost(0, 1, 1.1, 1.0, false) == Approx(0.010));
  // From empty, posted at 1.0 and started at 1.02 (behind an eviction): the served 80 ms from
  // the post, so 60 from its start; the next batch costs 10 + (25 - 10) ms, once.
  CHECK(m.load_cost(to_device, 1.0, 1.02, true) == Approx(0.060));
  CHECK(m.batch_cost(0, 1, 1.1, 1.0, false) == Approx(0.025));
  CHECK(m.batch_cost(0, 1, 1.2, 1.1, false) == Approx(0.010));
  const LoadAction to_host{0, Tier::Disk, Tier::Host};  // not the executing tier
  CHECK(m.load_cost(to_host, 2.0, 2.0, true) == Approx(0.500));
}

TEST_CASE("machine model: a speed trace scales every cost and leaves the profile's speed terms "
          "out", "[simulator][machine]") {
  Fixture f;
  f.overhead.served_extra = 0.001;
  f.overhead.served_miss_load = 0.080;
  f.idle.points = {{0.100, 2.0}};
  f.profile.evict_time[int(Tier::Device)] = 0.004;
  f.trace = {{0.0, 1.0}, {1.0, 2.0}};
  MachineModel m(f.terms(), 1);
  CHECK(m.speed_at(0.5) == 1.0);
  CHECK(m.speed_at(1.5) == 2.0);
  CHECK(m.batch_cost(0, 1, 1.5, 1.0, true) == Approx(0.020));  // no extra, no slowdown
  CHECK(m.load_cost({0, Tier::Host, Tier::Device}, 1.5, 1.5, true) == Approx(0.100));
  CHECK(m.evict_cost(0, Tier::Device, 1.5) == Approx(0.008));
  CHECK(m.evict_cost(0, Tier::Host, 1.5) == 0);  // not costed
  CHECK(speed_factor_at({}, 3.0) == 1.0);
  CHECK(speed_factor_at(f.trace, -1.0) == 1.0);
}

TEST_CASE("machine model: servers on one shared table draw as each on its own, and keep their "
          "own served-miss state", "[simulator][machine]") {
  Fixture f;
  f.profile.batches[0].stddev = 0.002;  // noise on: the draws come from each server's seed
  f.overhead.served_miss_load = 0.080;
  f.overhead.served_miss_batch = 0.025;
  MachineTerms t = f.terms();
  t.noise = CostNoise::Normal;
  auto shared = std::make_shared<const MachineTables>(t);
  MachineModel a(shared, 7), b(shared, 8), own_a(t, 7), own_b(t, 8);
  const LoadAction to_device{0, Tier::Host, Tier::Device};
  // Server a serves a miss from empty: its next batch pays the served first batch; b's not.
  CHECK(a.load_cost(to_device, 1.0, 1.0, true) == own_a.load_cost(to_device, 1.0, 1.0, true));
  for (int i = 0; i < 3; ++i) {
    CHECK(a.batch_cost(0, 1, 1.1, 1.0, false) == own_a.batch_cost(0, 1, 1.1, 1.0, false));
    CHECK(b.batch_cost(0, 1, 1.1, 1.0, false) == own_b.batch_cost(0, 1, 1.1, 1.0, false));
  }
}
