// The contract monitor (engine/control/contract_monitor.h) that the engine and the simulator
// both run: hand-written action sequences, each breaking one rule, must be caught; a correct
// sequence must pass.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/control/action_carrier.h"
#include "engine/control/contract_monitor.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

ControllerConfig two_workers_one_load() {
  ControllerConfig c;
  c.workers = 2;
  c.max_loads_in_flight = 1;
  c.exec_tier = Tier::Host;
  return c;
}

Batch batch(BatchId id, WorkerId w, ModelId m) {
  Batch b;
  b.id = id;
  b.worker = w;
  b.model = m;
  b.requests.push_back(Request{id, m, 0, kNever});
  return b;
}

}  // namespace

TEST_CASE("contract monitor: a correct sequence of actions has no violation", "[control]") {
  ContractMonitor m(two_workers_one_load());
  m.add_model(0, "a", Tier::Host);
  m.add_model(1, "b", Tier::Disk);
  CHECK(m.on_dispatch(batch(1, 0, 0)));
  m.on_load({1, Tier::Disk, Tier::Host});
  m.on_load_done(1, Tier::Host, true);
  CHECK(m.resident(1, Tier::Host));
  CHECK(m.on_dispatch(batch(2, 1, 1)));
  m.on_batch_done(0);
  m.on_evict({0, Tier::Host});  // no batch of model 0 runs any more
  CHECK_FALSE(m.resident(0, Tier::Host));
  m.on_batch_done(1);
  CHECK(m.violation_count() == 0);
}

TEST_CASE("contract monitor: each broken rule is named", "[control]") {
  ContractMonitor m(two_workers_one_load());
  m.add_model(0, "a", Tier::Host);
  m.add_model(1, "b", Tier::Disk);

  CHECK(m.on_dispatch(batch(1, 0, 1)));  // b is on disk only
  CHECK_THAT(m.violations().back(), Contains("not resident in the executing tier"));
  CHECK_FALSE(m.on_dispatch(batch(2, 0, 0)));  // worker 0 is busy
  CHECK_THAT(m.violations().back(), Contains("busy or unknown worker 0"));
  CHECK_FALSE(m.on_dispatch(batch(3, 7, 0)));
  CHECK_FALSE(m.on_dispatch(batch(4, 1, 9)));
  CHECK_THAT(m.violations().back(), Contains("unknown model"));

  m.on_evict({1, Tier::Host});  // b runs on worker 0 and is not resident either
  CHECK_THAT(m.violations()[m.violations().size() - 2], Contains("evicted while a batch uses it"));
  CHECK_THAT(m.violations().back(), Contains("evicted while not resident"));

  m.on_load({0, Tier::Disk, Tier::Host});
  m.on_load({1, Tier::Disk, Tier::Host});  // the second of max_loads_in_flight = 1
  CHECK_THAT(m.violations().back(), Contains("more than max_loads_in_flight"));

  m.on_batch_done(1);  // worker 1 never got a batch
  CHECK_THAT(m.violations().back(), Contains("worker 1 finished a batch it was not running"));
  CHECK(m.violation_count() == 8);
}

TEST_CASE("contract monitor: a removed model's late evictions are not violations", "[control]") {
  ContractMonitor m(two_workers_one_load());
  m.add_model(0, "a", Tier::Host);
  m.remove_model(0);
  m.on_evict({0, Tier::Host});
  CHECK(m.violation_count() == 0);
  CHECK_FALSE(m.resident(0, Tier::Host));
}

// ActionBuffers::carry_out (action_carrier.h) when a carrier's callback carries out actions
// itself, as the engine does when a completion callback cancels a request: every action is
// carried out exactly once, each round in the order evict, load, dispatch, complete, and the
// nested round's actions before the rest of the outer one.
TEST_CASE("carrying out actions carries out nested rounds once each, in order") {
  struct Recorder {
    ActionBuffers& actions;
    ContractMonitor& contract;
    std::vector<std::string> log;
    void evict(const EvictAction& e) { log.push_back("evict " + std::to_string(e.model)); }
    void load(const LoadAction& l) { log.push_back("load " + std::to_string(l.model)); }
    void dispatch(Batch& b, bool ok) {
      log.push_back("dispatch " + std::to_string(b.id) + (ok ? "" : " refused"));
    }
    void complete(const RequestOutcome& o) {
      ActionBuffer& out = actions.out();
      if (o.request.id == 1) {  // a callback acting on the controller: a nested round
        out.completions.push_back(RequestOutcome{Request{10, 0, 0, kNever}});
        out.evicts.push_back(EvictAction{7, Tier::Host});
        log.push_back("complete 1");
        actions.carry_out(contract, *this);
        return;
      }
      log.push_back("complete " + std::to_string(o.request.id));
      if (o.request.id == 2)  // an action left for the outer loop's next round
        out.completions.push_back(RequestOutcome{Request{20, 0, 0, kNever}});
    }
  };
  ContractMonitor contract(two_workers_one_load());
  contract.add_model(0, "m", Tier::Host);
  ActionBuffers actions;
  Recorder r{actions, contract, {}};
  ActionBuffer& out = actions.out();
  out.completions.push_back(RequestOutcome{Request{1, 0, 0, kNever}});
  out.completions.push_back(RequestOutcome{Request{2, 0, 0, kNever}});
  out.dispatches.push_back(batch(5, 0, 0));
  out.loads.push_back(LoadAction{0, Tier::Disk, Tier::Host});
  actions.carry_out(contract, r);
  const std::vector<std::string> want = {"load 0",     "dispatch 5", "complete 1", "evict 7",
                                         "complete 10", "complete 2", "complete 20"};
  REQUIRE(r.log == want);
  REQUIRE(actions.empty());
  REQUIRE(contract.violation_count() == 0);

  // And again from the other buffer: the roles swap every round.
  actions.out().completions.push_back(RequestOutcome{Request{2, 0, 0, kNever}});
  r.log.clear();
  actions.carry_out(contract, r);
  REQUIRE(r.log == std::vector<std::string>{"complete 2", "complete 20"});
  REQUIRE(actions.empty());
}
