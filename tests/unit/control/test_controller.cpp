// Hand-computed schedules: the Controller driven with explicit event times.
#include <catch2/catch.hpp>

#include <span>
#include <string>

#include "engine/control/controller.h"
#include "engine/control/policy_registry.h"
#include "mini_sim.h"

using namespace servelab;
using servelab::test::MiniSim;

namespace {

PolicyParams params(std::map<std::string, std::string> v) { return PolicyParams(std::move(v)); }

ControllerConfig config(const std::string& batching, PolicyParams p = {}, uint32_t workers = 1) {
  ControllerConfig c;
  c.workers = workers;
  c.batching = {batching, std::move(p)};
  return c;
}

ModelInfo model(uint64_t size = 100, uint32_t max_batch = 0) {
  return ModelInfo{.name = "m", .size_bytes = size, .max_batch = max_batch};
}

const RequestOutcome& outcome(const MiniSim& s, RequestId id) {
  for (const auto& o : s.outcomes)
    if (o.request.id == id) return o;
  FAIL("no outcome for request " << id);
  throw;
}

}  // namespace

TEST_CASE("none with one worker dispatches one request at a time in FIFO order") {
  Controller c(config("none"));
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 1.0);
  s.arrive(0.0, 1, 0);
  s.arrive(0.1, 2, 0);
  s.arrive(0.2, 3, 0);
  s.run();
  REQUIRE(s.batches.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(s.batches[i].at == Approx(i));
    REQUIRE(s.batches[i].batch.requests.size() == 1);
    CHECK(s.batches[i].batch.requests[0].id == RequestId(i + 1));
  }
  CHECK(outcome(s, 3).assigned == Approx(2.0));
  CHECK(outcome(s, 3).started == Approx(2.0));
  CHECK(outcome(s, 3).finished == Approx(3.0));
  CHECK(outcome(s, 3).status == RequestStatus::Ok);
  CHECK(outcome(s, 3).batch_size == 1);
  CHECK_FALSE(outcome(s, 3).waited_for_load);
  CHECK(c.stats().hits == 3);
  CHECK(c.free_workers() == 1);
}

TEST_CASE("fixed size 4 waits for four requests") {
  Controller c(config("fixed", params({{"size", "4"}})));
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 1.0);
  for (int i = 0; i < 5; ++i) s.arrive(i, i + 1, 0);
  s.run();
  REQUIRE(s.batches.size() == 1);
  CHECK(s.batches[0].at == Approx(3.0));
  CHECK(s.batches[0].batch.requests.size() == 4);
  CHECK(s.outcomes.size() == 4);
  CHECK(c.total_queued() == 1);
  CHECK(c.next_wakeup() == kNever);
}

TEST_CASE("fixed with max_wait dispatches a partial batch when the oldest has waited") {
  Controller c(config("fixed", params({{"size", "4"}, {"max_wait", "0.5"}})));
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 1.0);
  s.arrive(0.0, 1, 0);
  s.arrive(0.2, 2, 0);
  s.run();
  REQUIRE(s.batches.size() == 1);
  CHECK(s.batches[0].at == Approx(0.5));
  CHECK(s.batches[0].batch.requests.size() == 2);
}

TEST_CASE("max-delay dispatches at oldest + delay, or at once when full") {
  Controller c(config("max-delay", params({{"max_batch", "4"}, {"max_delay", "0.5"}})));
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 1.0);
  s.arrive(0.0, 1, 0);
  s.arrive(0.1, 2, 0);
  s.run(0.2);
  CHECK(c.next_wakeup() == Approx(0.5));
  for (int i = 0; i < 4; ++i) s.arrive(2.0 + 0.1 * i, 10 + i, 0);
  s.run();
  REQUIRE(s.batches.size() == 2);
  CHECK(s.batches[0].at == Approx(0.5));
  CHECK(s.batches[0].batch.requests.size() == 2);
  CHECK(s.batches[1].at == Approx(2.3));
  CHECK(s.batches[1].batch.requests.size() == 4);
}

TEST_CASE("rafiqi-ewma in quantum mode: thresholds 1.5, 1.25, 0.625 decide the ticks") {
  ControllerConfig cfg = config("rafiqi-ewma");
  cfg.quantum = 1.0;
  Controller c(cfg);
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 0.1);
  // Quantum 1: c = 3 -> t = 0.5*0 + 0.5*3 = 1.5; 3 queued > 1.5: dispatched at the tick.
  for (int i = 0; i < 3; ++i) s.arrive(0.5, i + 1, 0);
  // Quantum 2: c = 1 -> t = 0.75 + 0.5 = 1.25; 1 queued, not > 1.25: waits.
  s.arrive(1.5, 4, 0);
  // Quantum 3: c = 0 -> t = 0.625; 1 > 0.625: dispatched at t = 3.
  s.run(10);
  REQUIRE(s.batches.size() == 2);
  CHECK(s.batches[0].at == Approx(1.0));
  CHECK(s.batches[0].batch.requests.size() == 3);
  CHECK(s.batches[1].at == Approx(3.0));
  CHECK(s.batches[1].batch.requests.size() == 1);
  CHECK(c.next_wakeup() == kNever);  // every queue empty: no tick needs a wake-up
}

TEST_CASE("quantum mode: ticks skipped while idle are replayed in order before the next event") {
  ControllerConfig cfg = config("rafiqi-ewma");
  cfg.quantum = 1.0;
  Controller c(cfg);
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 0.1);
  // Quantum 1: c = 3 -> t = 1.5, dispatched at 1. Then idle: no wake-up is asked for.
  for (int i = 0; i < 3; ++i) s.arrive(0.5, i + 1, 0);
  s.run(4.4);
  CHECK(c.next_wakeup() == kNever);
  // The ticks at 2, 3 and 4 still decay the threshold: 0.75, 0.375, 0.1875. At tick 5, c = 1:
  // t = 0.09375 + 0.5 = 0.59375 < 1, dispatched at 5. (Without the replay t would be
  // 0.75 + 0.5 = 1.25 at tick 5 and the request would wait until tick 6.)
  s.arrive(4.5, 4, 0);
  s.run(10);
  REQUIRE(s.batches.size() == 2);
  CHECK(s.batches[1].at == Approx(5.0));
}

TEST_CASE("quantum mode: a long idle stretch is counted tick for tick, whatever the rounding") {
  // Quiet ticks are counted at once, not replayed; the next tick must still be the one the
  // ticks k * q, one by one, give: the least k * q > now, counted here the slow way. 0.1 is
  // not a binary fraction, so k * 0.1 and now / 0.1 round.
  for (double gap : {0.3, 1000.05, 12345.6789, 1e6 + 0.1}) {
    ControllerConfig cfg = config("rafiqi-ewma");
    cfg.quantum = 0.1;
    Controller c(cfg);
    c.add_model(0, model(), Tier::Host);
    ActionBuffer out;
    c.on_arrival(Request{1, 0, 0.05}, 0.05, out);
    c.on_timer(0.1, out);  // tick 1: ready and dispatched
    REQUIRE(out.dispatches.size() == 1);
    c.on_batch_done(out.dispatches[0].id, true, 0.12, out);
    c.on_arrival(Request{2, 0, gap}, gap, out);
    uint64_t k = 1;
    while (double(k + 1) * 0.1 <= gap) ++k;
    CAPTURE(gap, k);
    CHECK(c.next_wakeup() == double(k + 1) * 0.1);
  }
}

TEST_CASE("quantum mode: a ready model stays ready until a worker takes a batch") {
  ControllerConfig cfg = config("none");
  cfg.quantum = 1.0;
  Controller c(cfg);
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 2.5);
  s.arrive(0.2, 1, 0);
  s.arrive(0.3, 2, 0);
  s.run(10);
  // Tick 1: ready, request 1 runs 1..3.5. Tick 2 and 3: worker busy, model stays ready.
  // Worker frees at 3.5 and takes request 2 at once (ready is sticky), not at tick 4.
  REQUIRE(s.batches.size() == 2);
  CHECK(s.batches[0].at == Approx(1.0));
  CHECK(s.batches[1].at == Approx(3.5));
}

TEST_CASE("gre under a quantum serves each request as it arrives, none waits for the ticks") {
  for (const char* name : {"gre", "none"}) {
    ControllerConfig cfg = config(name);
    cfg.quantum = 1.0;
    Controller c(cfg);
    c.add_model(0, model(), Tier::Host);
    MiniSim s(c, 0.25);
    s.arrive(0.2, 1, 0);
    s.arrive(0.3, 2, 0);  // the worker is busy until 0.45: taken when it frees
    s.arrive(2.6, 3, 0);
    s.run(10);
    REQUIRE(s.batches.size() == 3);
    bool gre = std::string(name) == "gre";
    CHECK(s.batches[0].at == Approx(gre ? 0.2 : 1.0));
    CHECK(s.batches[1].at == Approx(gre ? 0.45 : 2.0));  // none: one batch a tick
    CHECK(s.batches[2].at == Approx(gre ? 2.6 : 3.0));
    for (const auto& b : s.batches) CHECK(b.batch.requests.size() == 1);
  }
}

TEST_CASE("request timeout fires at exactly arrival + timeout for queued requests only") {
  ControllerConfig cfg = config("none");
  cfg.request_timeout = 2.0;
  Controller c(cfg);
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 5.0);
  s.arrive(0.0, 1, 0);  // runs 0..5: never times out (dispatched)
  s.arrive(1.0, 2, 0);  // queued behind it: times out at 3
  s.run(1.5);
  CHECK(c.next_wakeup() == Approx(3.0));
  s.run();
  CHECK(outcome(s, 2).status == RequestStatus::Timeout);
  CHECK(outcome(s, 2).finished == Approx(3.0));
  CHECK(outcome(s, 2).batch_size == 0);
  CHECK(outcome(s, 1).status == RequestStatus::Ok);
  CHECK(outcome(s, 1).finished == Approx(5.0));
  CHECK(c.stats().per_model[0].timeouts == 1);
}

TEST_CASE("arrival to a full queue is rejected, unknown model fails") {
  ControllerConfig cfg = config("none");
  cfg.queue_bound = 1;
  Controller c(cfg);
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 5.0);
  s.arrive(0.0, 1, 0);  // dispatched
  s.arrive(0.1, 2, 0);  // queued
  s.arrive(0.2, 3, 0);  // rejected
  s.arrive(0.3, 4, 7);  // unregistered: failed
  s.run();
  CHECK(outcome(s, 3).status == RequestStatus::Rejected);
  CHECK(outcome(s, 3).finished == Approx(0.2));
  CHECK(outcome(s, 4).status == RequestStatus::Failed);
  CHECK(outcome(s, 2).status == RequestStatus::Ok);
  CHECK(c.stats().per_model[0].rejected == 1);
}

// fixed is stateless: one instance may decide for every model, and must decide each from its
// own queue. The counters, kept beside each model's state, are each model's own.
TEST_CASE("a stateless batching policy decides each model alone and counts each apart") {
  Controller c(config("fixed", params({{"size", "2"}})));
  c.add_model(0, model(), Tier::Host);
  c.add_model(1, model(), Tier::Host);
  MiniSim s(c, 1.0);
  s.arrive(0.0, 1, 0);
  s.arrive(0.1, 2, 1);
  s.arrive(0.2, 3, 0);  // model 0 has 2: runs 0.2..1.2
  s.arrive(0.3, 4, 1);  // model 1 has 2: runs 1.2..2.2
  s.arrive(0.4, 5, 0);  // alone, no max_wait: stays queued
  s.run();
  REQUIRE(s.batches.size() == 2);
  CHECK(s.batches[0].at == Approx(0.2));
  CHECK(s.batches[0].batch.model == 0);
  CHECK(s.batches[0].batch.requests.size() == 2);
  CHECK(s.batches[1].at == Approx(1.2));
  CHECK(s.batches[1].batch.model == 1);
  CHECK(s.batches[1].batch.requests.size() == 2);
  c.add_model(4, model(), Tier::Host);
  const auto& per_model = c.stats().per_model;
  REQUIRE(per_model.size() == 5);
  CHECK(per_model[0].arrivals == 3);
  CHECK(per_model[0].completed == 2);
  CHECK(per_model[0].batches == 1);
  CHECK(per_model[1].arrivals == 2);
  CHECK(per_model[1].completed == 2);
  CHECK(per_model[1].batches == 1);
  CHECK(per_model[4].arrivals == 0);
  CHECK(c.model_state(0).counters.arrivals == 3);
  CHECK(c.model_state(1).counters.completed == 2);
  CHECK(c.model_state(0).queued == 1);
}

// queued() and running() are model_state()'s queued and ref_count, read without the rest.
TEST_CASE("queued and running read a model's queue and batches as model_state does") {
  Controller c(config("fixed", params({{"size", "2"}})));
  c.add_model(0, model(), Tier::Host);
  c.add_model(2, model(), Tier::Host);
  ActionBuffer out;
  for (RequestId id = 1; id <= 3; ++id) c.on_arrival(Request{id, 0, 0.0}, 0.0, out);
  c.on_arrival(Request{4, 2, 0.0}, 0.0, out);
  REQUIRE(out.dispatches.size() == 1);  // model 0's first two; one left queued
  CHECK(c.queued(0) == 1);
  CHECK(c.running(0) == 1);
  CHECK(c.queued(2) == 1);
  CHECK(c.running(2) == 0);
  for (ModelId m : {0u, 2u}) {
    CHECK(c.queued(m) == c.model_state(m).queued);
    CHECK(c.running(m) == c.model_state(m).ref_count);
  }
  CHECK(c.queued(1) == 0);  // never added
  CHECK(c.running(99) == 0);  // past the table
  c.on_batch_done(out.dispatches[0].id, true, 1.0, out);
  CHECK(c.running(0) == 0);
}

TEST_CASE("batches never mix models and respect max_batch") {
  Controller c(config("max-delay", params({{"max_delay", "1"}})));
  c.add_model(0, model(100, 2), Tier::Host);
  c.add_model(1, model(100, 2), Tier::Host);
  MiniSim s(c, 1.0);
  for (int i = 0; i < 5; ++i) {
    s.arrive(0.1 * i, 2 * i + 1, 0);
    s.arrive(0.1 * i, 2 * i + 2, 1);
  }
  s.run();
  CHECK(s.outcomes.size() == 10);
  for (const auto& b : s.batches) {
    CHECK(b.batch.requests.size() <= 2);
    for (const auto& r : b.batch.requests) CHECK(r.model == b.batch.model);
  }
}

TEST_CASE("unknown policy names are ConfigErrors") {
  ControllerConfig cfg;
  cfg.batching.name = "nope";
  CHECK_THROWS_AS(Controller(cfg), ConfigError);
  cfg = ControllerConfig{};
  cfg.eviction.name = "nope";
  CHECK_THROWS_AS(Controller(cfg), ConfigError);
  cfg = ControllerConfig{};
  cfg.scheduling.name = "nope";
  CHECK_THROWS_WITH(Controller(cfg), Catch::Contains("oldest-first"));
}

TEST_CASE("quantum mode: a timeout at a tick time goes before the tick") {
  ControllerConfig cfg = config("none");
  cfg.quantum = 1.0;
  cfg.request_timeout = 0.5;
  Controller c(cfg);
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 0.1);
  s.arrive(0.5, 1, 0);  // deadline 1.0 == first tick: times out, never dispatched
  s.arrive(1.8, 2, 0);  // deadline 2.3: dispatched at tick 2
  s.run(3);
  CHECK(outcome(s, 1).status == RequestStatus::Timeout);
  CHECK(outcome(s, 1).finished == Approx(1.0));
  REQUIRE(s.batches.size() == 1);
  CHECK(s.batches[0].at == Approx(2.0));
}

TEST_CASE("event mode lru-order serves the least recently dispatched model first") {
  ControllerConfig cfg = config("none");
  cfg.scheduling = {"lru-order", {}};
  Controller c(cfg);
  for (ModelId m = 0; m < 3; ++m) c.add_model(m, model(), Tier::Host);
  MiniSim s(c, 1.0);
  s.arrive(0.0, 1, 1);  // runs 0..1: model 1 dispatched at 0
  s.arrive(0.1, 2, 1);
  s.arrive(0.2, 3, 2);
  s.arrive(0.3, 4, 0);
  s.run();
  // At 1: models 0 and 2 never dispatched (tie: lowest id), then 2, then 1.
  REQUIRE(s.batches.size() == 4);
  CHECK(s.batches[1].batch.model == 0);
  CHECK(s.batches[2].batch.model == 2);
  CHECK(s.batches[3].batch.model == 1);
}

TEST_CASE("late requests: served late by default, dropped before compute with drop_late") {
  // One worker, batches of one taking 1 s. Requests 1..3 arrive at 0 with deadlines 0.5, 0.8
  // and 3.0. Request 1 starts at 0, in time (it finishes late, at 1). Request 2 is still
  // queued at its deadline 0.8: served late (1..2, then request 3 runs 2..3), or dropped at
  // 0.8 (request 3 runs 1..2).
  for (bool drop : {false, true}) {
    ControllerConfig cfg = config("none");
    cfg.drop_late = drop;
    Controller c(cfg);
    c.add_model(0, model(), Tier::Host);
    MiniSim s(c, 1.0);
    s.arrive(0.0, 1, 0, 0.5);
    s.arrive(0.0, 2, 0, 0.8);
    s.arrive(0.0, 3, 0, 3.0);
    s.run(10);
    CHECK(outcome(s, 1).status == RequestStatus::Ok);  // started in time, finished late
    if (!drop) {
      CHECK(outcome(s, 2).status == RequestStatus::Ok);  // served late: 1..2
      CHECK(outcome(s, 2).finished == Approx(2.0));
      CHECK(outcome(s, 3).finished == Approx(3.0));
    } else {
      CHECK(outcome(s, 2).status == RequestStatus::Dropped);  // at its deadline: never run
      CHECK(outcome(s, 2).finished == Approx(0.8));
      CHECK(outcome(s, 2).batch_size == 0);
      CHECK(outcome(s, 3).finished == Approx(2.0));  // runs 1..2 instead
      CHECK(c.stats().per_model[0].dropped == 1);
    }
  }
}

TEST_CASE("drop_late answers a request its policy never batches at its deadline") {
  // fixed (size 8, no max_wait) never makes one request ready; with drop_late the request is
  // answered Dropped at its deadline, 0.5, and the controller asks to be woken then.
  ControllerConfig cfg = config("fixed");
  cfg.drop_late = true;
  Controller c(cfg);
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 1.0);
  s.arrive(0.0, 1, 0, 0.5);
  s.run(0.1);  // the arrival
  CHECK(c.next_wakeup() == Approx(0.5));
  s.run(10);
  CHECK(outcome(s, 1).status == RequestStatus::Dropped);
  CHECK(outcome(s, 1).finished == Approx(0.5));
  CHECK(c.next_wakeup() == kNever);  // nothing queued, nothing to wake for
  CHECK(s.batches.empty());
}

namespace {

// Counts the batch callbacks it gets; says whether it observes batches as told.
struct CallbackCounts {
  int taken = 0, done = 0, finished = 0;
};
class CountingBatching final : public BatchingPolicy {
 public:
  CountingBatching(CallbackCounts& counts, bool observes) : counts_(counts), observes_(observes) {}
  BatchDecision decide(const ModelView& m, Time) override { return {m.queued > 0 ? 1u : 0u}; }
  void on_batch_taken(const ModelView&, std::span<const Request>, Time) override {
    ++counts_.taken;
  }
  void on_batch_done(const ModelView&, uint32_t, Time, Time) override { ++counts_.done; }
  void on_batch_finished(const ModelView&, std::span<const Request>, Time) override {
    ++counts_.finished;
  }
  bool observes_batches() const override { return observes_; }

 private:
  CallbackCounts& counts_;
  bool observes_;
};

// Three requests, one batch each, under a policy that says it observes batches or not.
CallbackCounts run_three_batches(bool observes) {
  static CallbackCounts counts;
  counts = {};
  const std::string name = observes ? "test-observing" : "test-not-observing";
  PolicyRegistry::add_batching(name, "test only",
                               [observes](const PolicyParams&, const ModelInfo&) {
                                 return std::make_unique<CountingBatching>(counts, observes);
                               });
  Controller c(config(name));
  c.add_model(0, model(), Tier::Host);
  MiniSim s(c, 1.0);
  for (RequestId id = 1; id <= 3; ++id) s.arrive(0.1 * double(id), id, 0);
  s.run();
  REQUIRE(s.outcomes.size() == 3);
  return counts;
}

}  // namespace

TEST_CASE("batch callbacks reach a policy that observes batches, and only such a policy") {
  const CallbackCounts observing = run_three_batches(true);
  CHECK(observing.taken == 3);
  CHECK(observing.done == 3);
  CHECK(observing.finished == 3);
  const CallbackCounts blind = run_three_batches(false);
  CHECK(blind.taken == 0);
  CHECK(blind.done == 0);
  CHECK(blind.finished == 0);
}

TEST_CASE("built-in policies without batch callbacks say so and the learning ones observe") {
  for (const std::string name : {"none", "fixed", "max-delay", "rafiqi-ewma", "rafiqi-aimd"})
    CHECK_FALSE(PolicyRegistry::batching({name, {}}, ModelInfo{})->observes_batches());
  for (const std::string name : {"clipper-aimd", "rafiki-greedy"})
    CHECK(PolicyRegistry::batching({name, {}}, ModelInfo{})->observes_batches());
}
