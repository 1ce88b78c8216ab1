// Contract test over EVERY registered batching x eviction x scheduling policy, in event and
// quantum mode: a seeded random scenario (3 models, room for 2, 2 workers, timeout) must
// never evict a model in use or loading, never exceed a budget, never dispatch a
// non-resident model, and complete every request exactly once with Ok or Timeout.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "engine/control/controller.h"
#include "engine/control/policy_registry.h"
#include "mini_sim.h"

using namespace servelab;
using servelab::test::MiniSim;

namespace {

constexpr uint64_t kSize = 100;

struct Checker {
  Controller* c = nullptr;
  std::map<ModelId, int> running;             // dispatched, not done (by our own count)
  std::set<std::pair<ModelId, int>> loading;  // (model, tier) loads emitted, not done
  std::set<std::pair<ModelId, int>> resident;
  std::map<BatchId, ModelId> batch_model;
  uint64_t host_bytes = 0;
  int violations = 0;

  void check(bool ok, const char* what) {
    if (!ok && violations++ < 5) FAIL_CHECK(what);
  }
};

std::vector<RequestOutcome> run_scenario(const std::string& b, const std::string& e, const std::string& s, Time quantum,
                  uint32_t seed) {
  ControllerConfig cfg;
  cfg.workers = 2;
  cfg.quantum = quantum;
  cfg.max_batch = 8;
  cfg.request_timeout = 3.0;
  cfg.budgets[int(Tier::Host)] = {2 * kSize, 2};
  cfg.batching = {b, {}};
  cfg.eviction = {e, {}};
  cfg.scheduling = {s, {}};
  Controller c(cfg);
  for (ModelId m = 0; m < 3; ++m) {
    ModelInfo info;
    info.name = "m" + std::to_string(m);
    info.size_bytes = kSize;
    info.contexts = 1 + m % 2;
    c.add_model(m, info, m == 0 ? Tier::Host : Tier::Disk);
  }
  MiniSim sim(c, 0.05, 0.5);
  Checker k;
  k.c = &c;
  k.resident.insert({0, 1});
  k.host_bytes = kSize;

  std::mt19937 rng(seed);
  std::exponential_distribution<double> gap(10.0);
  std::discrete_distribution<int> pick({6, 3, 1});
  const int n = 300;
  Time t = 0;
  for (int i = 0; i < n; ++i) {
    t += gap(rng);
    ModelId m = ModelId(pick(rng));
    sim.arrive(t, RequestId(i + 1), m, t + 0.5);
  }
  const Time end = t + 10;

  // Actions of one event are checked in the order an executor carries them out.
  sim.observe = [&](Time, const ActionBuffer& out) {
    for (const EvictAction& ev : out.evicts) {
      auto key = std::make_pair(ev.model, int(ev.tier));
      k.check(k.running[ev.model] == 0, "evicted a model with a running batch");
      k.check(!k.loading.count(key), "evicted a model while loading it");
      k.check(k.resident.count(key) == 1, "evicted a model that was not resident");
      k.resident.erase(key);
      k.host_bytes -= kSize;
    }
    for (const LoadAction& l : out.loads) {
      auto key = std::make_pair(l.model, int(l.to));
      k.check(!k.resident.count(key) && !k.loading.count(key), "duplicate load");
      k.loading.insert(key);
      k.host_bytes += kSize;
      k.check(k.host_bytes <= 2 * kSize, "host byte budget exceeded");
      k.check(k.resident.size() + k.loading.size() <= 2, "host model budget exceeded");
    }
    for (const Batch& bt : out.dispatches) {
      k.check(k.resident.count({bt.model, 1}) == 1, "dispatched a non-resident model");
      for (const Request& r : bt.requests) k.check(r.model == bt.model, "mixed batch");
      k.check(bt.requests.size() <= 8, "batch over max_batch");
      ++k.running[bt.model];
      k.batch_model[bt.id] = bt.model;
    }
    k.check(c.stats().resident_bytes[1] <= 2 * kSize, "stats: byte budget exceeded");
    k.check(c.stats().resident_models[1] <= 2, "stats: model budget exceeded");
  };
  sim.before_load_done = [&](Time, const LoadAction& l) {
    auto key = std::make_pair(l.model, int(l.to));
    k.check(k.loading.erase(key) == 1, "load done without a load");
    k.resident.insert(key);
  };
  sim.before_batch_done = [&](Time, BatchId id) {
    k.check(k.batch_model.count(id) == 1, "unknown batch done");
    --k.running[k.batch_model[id]];
  };
  sim.run(end);

  std::map<RequestId, int> seen;
  size_t ok = 0;
  for (const RequestOutcome& o : sim.outcomes) {
    ++seen[o.request.id];
    ok += o.status == RequestStatus::Ok;
    CHECK((o.status == RequestStatus::Ok || o.status == RequestStatus::Timeout));
    if (o.status == RequestStatus::Timeout) CHECK(o.finished == Approx(o.request.arrival + 3.0));
  }
  CHECK(seen.size() == size_t(n));
  for (auto& [id, count] : seen) {
    if (count != 1) FAIL_CHECK("request " << id << " completed " << count << " times");
  }
  CHECK(c.total_queued() == 0);
  CHECK(c.free_workers() == 2);
  CHECK(k.violations == 0);
  // The scenario must exercise the cache and serve most requests.
  CHECK(c.stats().loads > 0);
  CHECK(ok > size_t(n) / 2);
  return sim.outcomes;
}

}  // namespace

TEST_CASE("every policy combination keeps the controller contract") {
  for (const auto& b : PolicyRegistry::batching_names())
    for (const auto& e : PolicyRegistry::eviction_names())
      for (const auto& s : PolicyRegistry::scheduling_names())
        for (Time q : {0.0, 0.05}) {
          INFO("batching=" << b << " eviction=" << e << " scheduling=" << s << " quantum=" << q);
          auto first = run_scenario(b, e, s, q, 42);
          auto again = run_scenario(b, e, s, q, 42);  // deterministic: same outcomes
          REQUIRE(first.size() == again.size());
          for (size_t i = 0; i < first.size(); ++i) {
            CHECK(first[i].request.id == again[i].request.id);
            CHECK(first[i].finished == again[i].finished);
          }
        }
}
