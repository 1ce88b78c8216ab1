// Ensemble dispatchers (engine/control/ensemble_dispatch.h) in the simulator against schedules
// computed by hand: a group queues its requests, and Rafiki's Clipper baseline and greedy
// (Algorithm 3 with all members synchronous, or one member per batch) release batches of the
// oldest requests to subsets of members; each selected member runs the batch as one batch.
// Also: the config key groups.NAME.dispatch and its errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "config/yaml_util.h"
#include "simulator/sim_config.h"
#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;
using Catch::Matchers::Contains;

namespace {

// Members a, b, c cost c(b) = 10 + (b - 1), 20 + 2 (b - 1) and 40 + 4 (b - 1) ms; three
// workers, one context each, all resident, batching max-delay with no delay up to 8: a
// released batch runs at once as one batch on an idle member. Group g = {a, b, c} (workload index 3) with
// `dispatch`; every subset's accuracy is 0.5 + mask / 100 (a alone 0.51, b 0.52, c 0.54).
SimulationSetup dispatch_setup(PolicySpec dispatch) {
  SimulationSetup s = test::cache_setup(3, 3, test::constant_profile(0.010, 0.001));
  s.models[1].profile = test::constant_profile(0.020, 0.002);
  s.models[2].profile = test::constant_profile(0.040, 0.004);
  s.control.workers = 3;
  s.control.max_batch = 8;
  s.control.batching = {"max-delay", {}};
  s.control.batching.params.set("max_delay", "0");
  SimGroup g{"g", {0, 1, 2}, {"all", {}}, std::move(dispatch), {}, {}};
  g.accuracy.by_mask.assign(8, NAN);
  for (MemberMask m = 1; m < 8; ++m) g.accuracy.by_mask[m] = 0.5 + m / 100.0;
  s.groups.push_back(g);
  return s;
}

PolicySpec spec(const std::string& name, std::vector<std::pair<std::string, std::string>> kv) {
  PolicySpec p{name, {}};
  for (const auto& [k, v] : kv) p.params.set(k, v);
  return p;
}

// Open loop: every request to the group, at `times` (seconds).
workloads::Workload to_group(std::vector<double> times) {
  workloads::Workload w = test::arrivals(std::move(times));
  w.models.assign(w.send_times.size(), 3);
  return w;
}

}  // namespace

TEST_CASE("clipper releases full batches to every member once all are idle",
          "[simulator][groups][dispatch][ground-truth]") {
  // batch_size 2. At 1 ms two wait and all are idle: a runs 1..12, b 1..23, c 1..45 ms. r2
  // (2 ms) and r3 (3 ms) make a full batch, but the members are busy until c answers at
  // 45 ms; then c runs them 45..89 ms.
  SimulationResult r = simulate(dispatch_setup(spec("clipper", {{"batch_size", "2"}})),
                                to_group({0, 0.001, 0.002, 0.003}));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  const auto& rec = r.records.requests;
  CHECK(rec[0].finish == Approx(0.045));
  CHECK(rec[1].finish == Approx(0.045));
  CHECK(rec[2].finish == Approx(0.089));
  CHECK(rec[3].finish == Approx(0.089));
  CHECK(rec[2].start == Approx(0.045));
  for (const auto& x : rec) {
    CHECK(x.batch_size == 2);
    CHECK(x.accuracy == Approx(0.57));  // every member voted
  }
  CHECK(r.records.mean_batch_size == Approx(2.0));
}

TEST_CASE("clipper sends a queue below its batch once the oldest reaches its deadline",
          "[simulator][groups][dispatch][ground-truth]") {
  // batch_size 4, SLO 100 ms: r0 (0 ms) and r1 (10 ms) never make a batch of 4; at r0's
  // deadline (100 ms) both go to every member, and c ends them at 100 + 40 + 4 = 144 ms.
  SimulationSetup s = dispatch_setup(spec("clipper", {{"batch_size", "4"}}));
  s.slo = 0.100;
  SimulationResult r = simulate(s, to_group({0, 0.010}));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  const auto& rec = r.records.requests;
  REQUIRE(rec.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    INFO("request " << i);
    CHECK(rec[i].status == RequestStatus::Ok);
    CHECK(rec[i].dispatch == Approx(0.100));
    CHECK(rec[i].finish == Approx(0.144));
    CHECK(rec[i].batch_size == 2);
  }
}

TEST_CASE("greedy with all members follows Algorithm 3 on the slowest member's cost",
          "[simulator][groups][dispatch][ground-truth]") {
  // B = {2, 4}, tau = 100 ms, delta = 10 ms; c(b) of all members is c's: c(2) = 44 ms,
  // c(4) = 52 ms. At 5 ms two wait: b = 2, due at 0 + 100 - 10 - 44 = 46 ms, so r0 and r1 go
  // at 46 ms (a 46..57, b 46..68, c 46..90). r2..r5 (60..63 ms) wait for every member to be
  // idle; at 90 ms four wait, max(B): they go at once (lines 2-5), and c ends them at 142 ms.
  SimulationResult r = simulate(
      dispatch_setup(spec("greedy", {{"batch_sizes", "2,4"}, {"slo_ms", "100"}})),
      to_group({0, 0.005, 0.060, 0.061, 0.062, 0.063}));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  const auto& rec = r.records.requests;
  CHECK(rec[0].dispatch == Approx(0.046));
  CHECK(rec[0].finish == Approx(0.090));
  CHECK(rec[1].finish == Approx(0.090));
  CHECK(rec[1].batch_size == 2);
  for (size_t i = 2; i < 6; ++i) {
    INFO("request " << i);
    CHECK(rec[i].dispatch == Approx(0.090));
    CHECK(rec[i].finish == Approx(0.142));
    CHECK(rec[i].batch_size == 4);
    CHECK(rec[i].accuracy == Approx(0.57));
  }
}

TEST_CASE("greedy ends a lone group request once it has waited tau",
          "[simulator][groups][dispatch][ground-truth]") {
  // B = {2, 4}, tau = 100 ms, no partial: r0 (0 ms) is below min(B) and nothing follows it;
  // it goes alone to every member at 100 ms, and c ends it at 140 ms.
  SimulationResult r = simulate(
      dispatch_setup(spec("greedy", {{"batch_sizes", "2,4"}, {"slo_ms", "100"}})),
      to_group({0}));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  const auto& rec = r.records.requests;
  REQUIRE(rec.size() == 1);
  CHECK(rec[0].status == RequestStatus::Ok);
  CHECK(rec[0].dispatch == Approx(0.100));
  CHECK(rec[0].finish == Approx(0.140));
  CHECK(rec[0].batch_size == 1);
}

TEST_CASE("greedy with one member sends each batch to the most accurate idle member",
          "[simulator][groups][dispatch][ground-truth]") {
  // B = {2, 4}, partial, tau = 50 ms, delta = 5 ms. r0 and r1 (0, 1 ms) go to c (accuracy
  // 0.54) at 1 ms, due then (0 + 45 - 44): c runs 1..45. r2 (2 ms) alone would go to b (0.52,
  // the most accurate idle member) at 2 + 45 - 20 = 27 ms, but with r3 (3 ms) b = 2 is due at
  // 2 + 45 - 22 = 25 ms: b runs them 25..47. r4 (4 ms) is left alone: a (0.51) at
  // 4 + 45 - 10 = 39 ms, 39..49.
  SimulationResult r = simulate(
      dispatch_setup(spec("greedy", {{"batch_sizes", "2,4"}, {"slo_ms", "50"}, {"delta", "0.1"},
                                     {"partial", "true"}, {"members", "one"}})),
      to_group({0, 0.001, 0.002, 0.003, 0.004}));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  const auto& rec = r.records.requests;
  const double dispatch[] = {0.001, 0.001, 0.025, 0.025, 0.039};
  const double finish[] = {0.045, 0.045, 0.047, 0.047, 0.049};
  const double accuracy[] = {0.54, 0.54, 0.52, 0.52, 0.51};
  const uint32_t batch[] = {2, 2, 2, 2, 1};
  for (size_t i = 0; i < 5; ++i) {
    INFO("request " << i);
    CHECK(rec[i].dispatch == Approx(dispatch[i]));
    CHECK(rec[i].finish == Approx(finish[i]));
    CHECK(rec[i].accuracy == Approx(accuracy[i]));
    CHECK(rec[i].batch_size == batch[i]);
  }
}

TEST_CASE("a queued group request its client gave up on never reaches a member",
          "[simulator][groups][dispatch]") {
  // clipper batch_size 2, clients give up after 50 ms: r0 (0 ms) leaves the queue at 50 ms;
  // r1 (60 ms) and r2 (61 ms) make the first batch (c ends it at 105 ms, within 50 ms of
  // r1), so no member ever runs r0.
  SimulationSetup s = dispatch_setup(spec("clipper", {{"batch_size", "2"}}));
  s.client_timeout = 0.050;
  SimulationResult r = simulate(s, to_group({0, 0.060, 0.061}));
  REQUIRE(r.violations.empty());
  const auto& rec = r.records.requests;
  CHECK(rec[0].status == RequestStatus::Cancelled);
  CHECK(rec[0].finish == Approx(0.050));
  CHECK(rec[1].status == RequestStatus::Ok);
  CHECK(rec[1].start == Approx(0.061));
  CHECK(rec[2].finish == Approx(0.105));
  CHECK(r.records.mean_batch_size == Approx(2.0));
}

TEST_CASE("a queued group request ends at the request timeout, or dropped at its deadline",
          "[simulator][groups][dispatch][ground-truth]") {
  // clipper batch_size 2. Timeout 50 ms: r0 (0 ms) alone times out at 50 ms; r1 (60 ms) and
  // r2 (70 ms) make a batch at 70 ms (c ends it at 114 ms); r3 (200 ms) is alone again and
  // times out at 250 ms. Without the timeout r0 and r3 were never answered (lost).
  SimulationSetup s = dispatch_setup(spec("clipper", {{"batch_size", "2"}}));
  s.control.request_timeout = 0.050;
  SimulationResult r = simulate(s, to_group({0, 0.060, 0.070, 0.200}));
  REQUIRE(r.violations.empty());
  CHECK(r.lost == 0);
  const auto& rec = r.records.requests;
  CHECK(rec[0].status == RequestStatus::Timeout);
  CHECK(rec[0].finish == Approx(0.050));
  CHECK(rec[0].batch_size == 0);
  CHECK(rec[1].status == RequestStatus::Ok);
  CHECK(rec[2].finish == Approx(0.114));
  CHECK(rec[3].status == RequestStatus::Timeout);
  CHECK(rec[3].finish == Approx(0.250));

  // Late requests dropped, SLO 30 ms, no timeout: r0 and r3 are dropped at their deadlines.
  s.control.request_timeout = kNever;
  s.control.drop_late = true;
  s.slo = 0.030;
  r = simulate(s, to_group({0, 0.060, 0.070, 0.200}));
  REQUIRE(r.violations.empty());
  CHECK(r.lost == 0);
  CHECK(r.records.requests[0].status == RequestStatus::Dropped);
  CHECK(r.records.requests[0].finish == Approx(0.030));
  CHECK(r.records.requests[1].status == RequestStatus::Ok);
  CHECK(r.records.requests[3].status == RequestStatus::Dropped);
  CHECK(r.records.requests[3].finish == Approx(0.230));
}

TEST_CASE("groups.NAME.dispatch in a run configuration", "[simulator][groups][dispatch][config]") {
  const std::string kSource = SERVELAB_SOURCE_DIR;
  auto yaml = [&](const std::string& group) {
    return "profile: " + kSource + "/experiments/profiles/rafiqi-caffenet.yaml\n"
           "models:\n"
           "  - {name: digits_linear, profile_model: caffenet}\n"
           "  - {name: digits_cnn, profile_model: caffenet}\n"
           "groups:\n  ens: {members: [digits_linear, digits_cnn], accuracy_table: " +
           kSource + "/experiments/profiles/digits-ensembles.json, " + group + "}\n"
           "engine: {max_batch: 16, slo_ms: 200}\n"
           "policies: {batching: {name: max-delay, max_delay: 0}}\n"
           "workload: {requests: 60, arrival: {type: poisson, rate: 50}, access: {type: "
           "weights, weights: [0, 0, 1]}}\n";
  };
  auto parse = [&](const std::string& y) {
    return sim::parse_sim_config(YAML::Load(y), "g.yaml", kSource);
  };
  auto error_of = [&](const std::string& y) -> std::string {
    try {
      parse(y);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  };

  sim::SimConfig c =
      parse(yaml("dispatch: {name: greedy, members: one, batch_sizes: [4, 8], partial: true}"));
  REQUIRE(c.setup.groups.size() == 1);
  CHECK(c.setup.groups[0].dispatch.name == "greedy");
  CHECK(c.setup.groups[0].dispatch.params.get_string("members", "") == "one");
  SimulationResult r = simulate(c.setup, workloads::generate(c.run.workload));
  CHECK(r.violations.empty());
  CHECK(r.lost == 0);
  CHECK(r.records.mean_batch_size > 1.0);  // the dispatcher batches what waits

  CHECK_THAT(error_of(yaml("subset: all, dispatch: clipper")), Contains("not both"));
  CHECK_THAT(error_of(yaml("dispatch: {name: rafiki-magic}")),
             Contains("unknown ensemble dispatcher 'rafiki-magic'") && Contains("greedy"));
  CHECK_THAT(error_of(yaml("dispatch: {name: greedy, members: two}")),
             Contains("members must be 'all' or 'one'"));
  CHECK_THAT(error_of(yaml("dispatch: {name: clipper, size: 4}")),
             Contains("unknown parameter 'size'"));
}

TEST_CASE("every dispatcher keeps the run whole: servers, give-ups, late drops, plain requests",
          "[simulator][groups][dispatch][contract]") {
  // Poisson arrivals to the group and to its members directly, two servers, an SLO with late
  // requests dropped, clients that give up and cancel: whatever the dispatcher does, every
  // request gets exactly one final record, the contract holds, nothing is lost, and a seed
  // gives the same run.
  const std::vector<PolicySpec> dispatchers = {
      spec("clipper", {{"batch_size", "4"}}),
      spec("greedy", {{"batch_sizes", "2,4,8"}, {"partial", "true"}}),
      spec("greedy", {{"batch_sizes", "2,4"}, {"partial", "true"}, {"members", "one"}}),
  };
  for (const PolicySpec& d : dispatchers) {
    INFO("dispatch " << d.name << " " << d.params.get_string("members", "all"));
    SimulationSetup s = dispatch_setup(d);
    s.cluster.servers = 2;
    s.cluster.router = {"least-outstanding", {}};
    s.slo = 0.150;
    s.control.drop_late = true;
    s.client_timeout = 0.400;
    s.cancel_delay = 0.002;
    workloads::Workload w = test::poisson(3000, 120, 4, 7);  // indices 0..2 models, 3 group
    SimulationResult a = simulate(s, w);
    CHECK(a.violations.empty());
    CHECK(a.records.requests.size() == 3000);
    size_t group_ok = 0;
    for (const auto& r : a.records.requests) {
      CHECK(std::isfinite(r.finish));
      if (r.model == 3 && r.status == RequestStatus::Ok) ++group_ok;
    }
    if (d.name != "clipper") CHECK(a.lost == 0);  // clipper may keep < 4 waiting at the end
    CHECK(group_ok > 0);
    SimulationResult b = simulate(s, w);
    REQUIRE(b.records.requests.size() == a.records.requests.size());
    for (size_t i = 0; i < a.records.requests.size(); ++i)
      CHECK(a.records.requests[i].finish == b.records.requests[i].finish);
  }
}
