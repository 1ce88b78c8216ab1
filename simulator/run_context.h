// What the parts of one simulation run share: the facade, the setup and the schedule they run,
// the window of requests in play (state and records, which each part fills in: clients:
// arrival; front end: queued; cluster: the outcome), the run's record metadata, the count of
// pending work, and the contract violations found.
// Owned by simulate(); parts hold a reference for the run's duration. One thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "results/records.h"
#include "simulator/member_requests.h"
#include "simulator/record_window.h"
#include "simulator/schedule.h"
#include "simulator/simulation.h"
#include "simulator/simulator.h"

namespace servelab {
struct MachineTables;
}

namespace servelab::sim {

class SharedCores;

struct RunContext {
  RunContext(Simulation& s, const SimulationSetup& st, Schedule& sch, SimulationResult& r,
             results::RecordSink& sink)
      : sim(s), setup(st), schedule(sch), result(r), records(r.records), window(sink) {}

  Simulation& sim;
  const SimulationSetup& setup;
  Schedule& schedule;            // the clients pull the requests from it
  SimulationResult& result;
  results::RunRecords& records;  // model names, SLO, warm-up and counters; no requests
  RecordWindow window;           // the requests in play, their state and records
  // Work that can still make progress without a timer: requests on their way (sends,
  // transfers, IO threads), batches running, loads in flight. Timers alone cannot finish a run.
  uint64_t in_flight = 0;
  // The cores the servers' batches share (cluster.cores); null: a core per worker.
  SharedCores* cores = nullptr;
  // The machine's terms every server draws from (calibration/terms/machine_model.h), built
  // once for the run; null: each server builds its own.
  std::shared_ptr<const MachineTables> machine;
  using State = RecordWindow::State;
  static constexpr State Open = RecordWindow::Open, Done = RecordWindow::Done,
                         GivenUp = RecordWindow::GivenUp;

  const ModelProfile& profile(ModelId m) const { return setup.models[m].profile; }
  // The way in and out of a request to `target`: a model, or a group (SimulationSetup::groups).
  const RequestOverhead& overhead(ModelId target) const {
    const size_t n = setup.models.size();
    return target < n ? setup.models[target].overhead : setup.groups[target - n].overhead;
  }
  // Whether some target's overhead has `field` other than zero: where none has, a part skips
  // its look-up per request.
  bool any_overhead(double RequestOverhead::*field) const {
    for (const SimModel& m : setup.models)
      if (m.overhead.*field != 0) return true;
    for (const SimGroup& g : setup.groups)
      if (g.overhead.*field != 0) return true;
    return false;
  }
  bool is_group(ModelId target) const { return target >= setup.models.size(); }
  const SimGroup& group(ModelId target) const { return setup.groups[target - setup.models.size()]; }
  // What request `id` addresses: for a workload request its model or group (the workload's
  // index), for a group's member request (member_requests.h) the member model.
  // The request must be in play (window.holds).
  ModelId model_of(RequestId id) const {
    if (!is_member_request(id)) return ModelId(window.target(id));
    return group(ModelId(window.target(group_request_of(id)))).members[member_index_of(id)];
  }
  // The latency objective of a request to `target` (a workload index): a model's own, else the
  // run's (groups: the run's; their member requests share their group request's deadline).
  std::optional<Time> slo_of(ModelId target) const {
    if (target < setup.models.size() && setup.models[target].slo) return setup.models[target].slo;
    return setup.slo;
  }
  // The latency objective of request `id` (a workload request or a member request).
  std::optional<Time> slo_of_request(RequestId id) const {
    return slo_of(ModelId(window.target(workload_request_of(id))));
  }
  // The workload request `id` belongs to: itself, or a member request's group request.
  RequestId workload_request_of(RequestId id) const {
    return is_member_request(id) ? group_request_of(id) : id;
  }
  void violation(std::string msg) {
    if (result.violations.size() < 100) result.violations.push_back(std::move(msg));
  }
};

}  // namespace servelab::sim
