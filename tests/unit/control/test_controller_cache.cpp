// Cache accounting in the Controller: loads, holds, evictions, budgets, removal.
#include <catch2/catch.hpp>

#include "engine/control/controller.h"
#include "engine/control/policy_registry.h"
#include "mini_sim.h"

using namespace servelab;
using servelab::test::MiniSim;

namespace {

ControllerConfig config(uint32_t workers = 1, TierBudget host = {}, const char* evict = "lru") {
  ControllerConfig c;
  c.workers = workers;
  c.budgets[int(Tier::Host)] = host;
  c.eviction = {evict, {}};
  return c;
}

ModelInfo cache_model(uint64_t size = 100) { return ModelInfo{.name = "m", .size_bytes = size}; }

const RequestOutcome& outcome_of(const MiniSim& s, RequestId id) {
  for (const auto& o : s.outcomes)
    if (o.request.id == id) return o;
  FAIL("no outcome for request " << id);
  throw;
}

}  // namespace

TEST_CASE("a batch waiting for a load is dispatched at load end with waited_for_load") {
  Controller c(config());
  c.add_model(0, cache_model());
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 0);
  s.run(5);
  CHECK(c.free_workers() == 0);  // reserved while the model loads
  CHECK(c.model_state(0).ref_count == 1);
  CHECK(c.model_state(0).loading);
  s.arrive(12.0, 2, 0);
  s.run();
  REQUIRE(s.loads.size() == 1);
  CHECK(s.loads[0].at == 0.0);
  CHECK(s.loads[0].load.from == Tier::Disk);
  CHECK(s.loads[0].load.to == Tier::Host);
  REQUIRE(s.batches.size() == 2);
  CHECK(s.batches[0].at == Approx(10.0));
  CHECK(s.batches[0].batch.waited_for_load);
  CHECK(s.batches[0].batch.assigned == 0.0);
  CHECK(outcome_of(s, 1).assigned == 0.0);
  CHECK(outcome_of(s, 1).started == Approx(10.0));
  CHECK(outcome_of(s, 1).finished == Approx(11.0));
  CHECK(outcome_of(s, 1).waited_for_load);
  CHECK_FALSE(outcome_of(s, 2).waited_for_load);
  CHECK(c.stats().misses == 1);
  CHECK(c.stats().hits == 1);
  CHECK(c.model_state(0).resident[int(Tier::Host)]);
}

TEST_CASE("one load in flight at a time - a second model's worker is not reserved meanwhile") {
  Controller c(config(2));
  c.add_model(0, cache_model());
  c.add_model(1, cache_model());
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 0);
  s.arrive(0.0, 2, 1);
  s.run(5);
  CHECK(c.free_workers() == 1);
  s.run();
  REQUIRE(s.loads.size() == 2);
  CHECK(s.loads[0].at == 0.0);
  CHECK(s.loads[1].at == Approx(10.0));
  CHECK(outcome_of(s, 2).assigned == Approx(10.0));
  CHECK(outcome_of(s, 2).started == Approx(20.0));
}

TEST_CASE("max_loads_in_flight 2 loads two models at once") {
  ControllerConfig cfg = config(2);
  cfg.max_loads_in_flight = 2;
  Controller c(cfg);
  c.add_model(0, cache_model());
  c.add_model(1, cache_model());
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 0);
  s.arrive(0.0, 2, 1);
  s.run();
  REQUIRE(s.loads.size() == 2);
  CHECK(s.loads[1].at == 0.0);
  CHECK(outcome_of(s, 2).started == Approx(10.0));
}

TEST_CASE("a model in use is never evicted - the load waits for it to finish") {
  Controller c(config(2, {UINT64_MAX, 1}));
  c.add_model(0, cache_model(), Tier::Host);
  c.add_model(1, cache_model());
  MiniSim s(c, 5.0, 10.0);
  s.arrive(0.0, 1, 0);  // runs 0..5
  s.arrive(1.0, 2, 1);  // needs the only slot
  s.run(4);
  CHECK(s.evicts.empty());
  CHECK(c.free_workers() == 1);  // not reserved: its load cannot start yet
  s.run();
  REQUIRE(s.evicts.size() == 1);
  CHECK(s.evicts[0].at == Approx(5.0));
  CHECK(s.evicts[0].evict.model == 0);
  REQUIRE(s.loads.size() == 1);
  CHECK(s.loads[0].at == Approx(5.0));
  CHECK(outcome_of(s, 2).started == Approx(15.0));
  CHECK(c.stats().resident_models[int(Tier::Host)] == 1);
}

TEST_CASE("lru victim chosen by the controller from the access order") {
  Controller c(config(1, {300, UINT32_MAX}));
  for (ModelId m = 0; m < 4; ++m) c.add_model(m, cache_model(), m < 3 ? Tier::Host : Tier::Disk);
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 2);
  s.arrive(1.0, 2, 0);
  s.arrive(2.0, 3, 1);
  s.arrive(3.0, 4, 0);
  s.arrive(4.0, 5, 3);  // full: evict least recently used = 2
  s.run();
  REQUIRE(s.evicts.size() == 1);
  CHECK(s.evicts[0].evict.model == 2);
  CHECK(s.evicts[0].at == Approx(4.0));
}

TEST_CASE("a model larger than the tier fails its requests") {
  Controller c(config(1, {150, UINT32_MAX}));
  c.add_model(0, cache_model(200));
  MiniSim s(c);
  s.arrive(0.0, 1, 0);
  s.run();
  REQUIRE(s.outcomes.size() == 1);
  CHECK(s.outcomes[0].status == RequestStatus::Failed);
  CHECK(s.loads.empty());
}

TEST_CASE("preloading more than the budget is a ConfigError") {
  Controller c(config(1, {150, UINT32_MAX}));
  c.add_model(0, cache_model(100), Tier::Host);
  CHECK_THROWS_AS(c.add_model(1, cache_model(100), Tier::Host), ConfigError);
  CHECK_THROWS_AS(c.add_model(0, cache_model(100)), ConfigError);  // already registered
}

TEST_CASE("device exec tier loads disk->host then host->device") {
  ControllerConfig cfg = config();
  cfg.exec_tier = Tier::Device;
  Controller c(cfg);
  c.add_model(0, cache_model());
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 0);
  s.run();
  REQUIRE(s.loads.size() == 2);
  CHECK(s.loads[0].load.to == Tier::Host);
  CHECK(s.loads[1].load.from == Tier::Host);
  CHECK(s.loads[1].load.to == Tier::Device);
  CHECK(s.loads[1].at == Approx(10.0));
  CHECK(outcome_of(s, 1).started == Approx(20.0));
  ModelState st = c.model_state(0);
  CHECK(st.resident[1]);
  CHECK(st.resident[2]);
}

TEST_CASE("device exec: a host copy under a device copy is not a host victim") {
  ControllerConfig cfg = config(1, {200, UINT32_MAX});
  cfg.exec_tier = Tier::Device;
  cfg.budgets[int(Tier::Device)] = {100, UINT32_MAX};
  Controller c(cfg);
  c.add_model(0, cache_model(), Tier::Device);
  c.add_model(1, cache_model(), Tier::Host);
  c.add_model(2, cache_model());
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 2);  // host is full: victim must be 1 (0 is on device)
  s.run();
  REQUIRE(!s.evicts.empty());
  CHECK(s.evicts[0].evict.model == 1);
  CHECK(s.evicts[0].evict.tier == Tier::Host);
  // then device: 0 is evicted from device (its host copy may stay)
  REQUIRE(s.evicts.size() == 2);
  CHECK(s.evicts[1].evict.model == 0);
  CHECK(s.evicts[1].evict.tier == Tier::Device);
}

TEST_CASE("failed load fails the waiting batch and frees the worker") {
  Controller c(config());
  c.add_model(0, cache_model());
  ActionBuffer out;
  c.on_arrival(Request{1, 0, 0.0}, 0.0, out);
  REQUIRE(out.loads.size() == 1);
  out.clear();
  c.on_load_done(0, Tier::Host, false, 3.0, out);
  REQUIRE(out.completions.size() == 1);
  CHECK(out.completions[0].status == RequestStatus::Failed);
  CHECK(c.free_workers() == 1);
  CHECK_FALSE(c.model_state(0).resident[int(Tier::Host)]);
  CHECK(c.stats().resident_bytes[int(Tier::Host)] == 0);
}

TEST_CASE("failed batch completes its requests with Failed") {
  Controller c(config());
  c.add_model(0, cache_model(), Tier::Host);
  ActionBuffer out;
  c.on_arrival(Request{1, 0, 0.0}, 0.0, out);
  REQUIRE(out.dispatches.size() == 1);
  BatchId b = out.dispatches[0].id;
  out.clear();
  c.on_batch_done(b, false, 1.0, out);
  REQUIRE(out.completions.size() == 1);
  CHECK(out.completions[0].status == RequestStatus::Failed);
}

TEST_CASE("remove_model fails queued requests, lets running batches finish, then evicts") {
  Controller c(config());
  c.add_model(0, cache_model(), Tier::Host);
  ActionBuffer out;
  c.on_arrival(Request{1, 0, 0.0}, 0.0, out);
  c.on_arrival(Request{2, 0, 0.1}, 0.1, out);
  REQUIRE(out.dispatches.size() == 1);
  BatchId b = out.dispatches[0].id;
  out.clear();
  c.remove_model(0, 0.2, out);
  REQUIRE(out.completions.size() == 1);
  CHECK(out.completions[0].request.id == 2);
  CHECK(out.completions[0].status == RequestStatus::Failed);
  CHECK(out.evicts.empty());  // in use
  CHECK_FALSE(c.model_state(0).registered);
  out.clear();
  c.on_arrival(Request{3, 0, 0.3}, 0.3, out);
  REQUIRE(out.completions.size() == 1);
  CHECK(out.completions[0].status == RequestStatus::Failed);
  out.clear();
  c.on_batch_done(b, true, 1.0, out);
  REQUIRE(out.completions.size() == 1);
  CHECK(out.completions[0].status == RequestStatus::Ok);
  REQUIRE(out.evicts.size() == 1);
  CHECK(out.evicts[0].tier == Tier::Host);
  CHECK(c.stats().resident_bytes[int(Tier::Host)] == 0);
  c.add_model(0, cache_model(), Tier::Host);  // the id can be reused once gone
  CHECK(c.model_state(0).registered);
}

TEST_CASE("remove_model during a load fails the held batch and evicts when the load ends") {
  ControllerConfig cfg = config();
  cfg.exec_tier = Tier::Device;
  Controller c(cfg);
  c.add_model(0, cache_model());
  ActionBuffer out;
  c.on_arrival(Request{1, 0, 0.0}, 0.0, out);
  REQUIRE(out.loads.size() == 1);
  out.clear();
  c.remove_model(0, 1.0, out);
  REQUIRE(out.completions.size() == 1);
  CHECK(out.completions[0].status == RequestStatus::Failed);
  CHECK(out.completions[0].assigned == 0.0);
  CHECK(c.free_workers() == 1);
  CHECK(out.evicts.empty());  // the host load is still in flight
  out.clear();
  c.on_load_done(0, Tier::Host, true, 10.0, out);
  CHECK(out.loads.empty());  // no device hop for a removed model
  REQUIRE(out.evicts.size() == 1);
  CHECK(out.evicts[0].tier == Tier::Host);
  CHECK(c.stats().resident_bytes[int(Tier::Host)] == 0);
}

TEST_CASE("contexts bound the batches of one model running at once") {
  Controller c(config(3));
  ModelInfo two = cache_model();
  two.contexts = 2;
  c.add_model(0, two, Tier::Host);
  MiniSim s(c, 1.0);
  for (int i = 0; i < 3; ++i) s.arrive(0.0, i + 1, 0);
  s.run();
  REQUIRE(s.batches.size() == 3);
  CHECK(s.batches[1].at == 0.0);
  CHECK(s.batches[2].at == Approx(1.0));
}

namespace {
// Records every candidate list it is shown; evicts the first.
std::vector<std::vector<EvictionCandidate>>* g_seen = nullptr;
struct SpyEviction final : EvictionPolicy {
  void on_load(ModelId, Time) override {}
  void on_access(ModelId, Time) override {}
  void on_unload(ModelId, Time) override {}
  size_t pick_victim(std::span<const EvictionCandidate> c, Time) override {
    // The registration outlives this test: in one process the contract test later loops over
    // every registered policy, this one included, after g_seen is reset.
    if (g_seen) g_seen->emplace_back(c.begin(), c.end());
    return 0;
  }
};
struct ForgetSeen {
  ~ForgetSeen() { g_seen = nullptr; }
};
}  // namespace

TEST_CASE("eviction candidates carry size, reload cost, last use, uses and queue") {
  std::vector<std::vector<EvictionCandidate>> seen;
  g_seen = &seen;
  ForgetSeen forget;  // before `seen` goes out of scope
  PolicyRegistry::add_eviction("test-spy-candidates", "records candidates",
                               [](const PolicyParams&) { return std::make_unique<SpyEviction>(); });
  // Room for one model on the host. Model 0 is preloaded with a prior reload estimate of 0.5 s;
  // model 1 (300 bytes) starts on disk. MiniSim: batches take 1 s, loads 10 s.
  Controller c(config(1, TierBudget{UINT64_MAX, 1}, "test-spy-candidates"));
  ModelInfo a = cache_model(100);
  a.load_seconds[int(Tier::Host)] = 0.5;
  c.add_model(0, a, Tier::Host);
  c.add_model(1, cache_model(300));
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 0);   // model 0 runs 0..1 s: one use
  s.arrive(2.0, 2, 1);   // model 1 needs the room: model 0 is the candidate
  s.arrive(2.5, 3, 0);   // queued for model 0 while model 1 loads (2..12 s) and runs (12..13)
  s.run(30);
  REQUIRE(seen.size() == 2);
  REQUIRE(seen[0].size() == 1);
  const EvictionCandidate& first = seen[0][0];
  CHECK(first.model == 0);
  CHECK(first.size_bytes == 100);
  CHECK(first.reload_seconds == 0.5);  // the prior: no load of it seen yet
  CHECK(first.last_use == 0.0);
  CHECK(first.uses == 1);
  CHECK(first.queued == 0);
  // Model 0's request makes model 1 the candidate at 13 s, when its batch is done.
  REQUIRE(seen[1].size() == 1);
  const EvictionCandidate& second = seen[1][0];
  CHECK(second.model == 1);
  CHECK(second.size_bytes == 300);
  CHECK(second.reload_seconds == Approx(10.0));  // the load the controller saw
  CHECK(second.last_use == Approx(12.0));
  CHECK(second.uses == 1);
  g_seen = nullptr;
}

TEST_CASE("initial placement: the highest tier that still has room") {
  // Host has room for 250 bytes, the device for one model: a 100-byte model goes to the
  // device, the next to the host only, a 200-byte one no further than disk.
  ControllerConfig cfg = config(1, TierBudget{250, UINT32_MAX});
  cfg.exec_tier = Tier::Device;
  cfg.budgets[int(Tier::Device)] = TierBudget{UINT64_MAX, 1};
  Controller c(cfg);
  CHECK(c.add_model_where_it_fits(0, cache_model(100), Tier::Device) == Tier::Device);
  CHECK(c.add_model_where_it_fits(1, cache_model(100), Tier::Device) == Tier::Host);
  CHECK(c.add_model_where_it_fits(2, cache_model(200), Tier::Device) == Tier::Disk);
  CHECK(c.add_model_where_it_fits(3, cache_model(10), Tier::Host) == Tier::Host);
  CHECK(c.model_state(0).resident[int(Tier::Device)]);
  CHECK(c.model_state(1).resident[int(Tier::Host)]);
  CHECK_FALSE(c.model_state(1).resident[int(Tier::Device)]);
  CHECK_FALSE(c.model_state(2).resident[int(Tier::Host)]);
  CHECK_THROWS_AS(c.add_model_where_it_fits(0, cache_model(1), Tier::Host), ConfigError);
}
