// The cores that a run's servers share (cluster.cores): a real cluster on one machine runs
// its server processes on that machine's few cores, while the simulator otherwise gives every
// worker a core of its own. A job's cost is its work at one core's full speed (what the
// profile measured on an otherwise idle machine): a batch (one intra-op thread), or a
// request's decoding and preprocessing on a server's IO thread (the front end's `preprocess`).
// While n jobs run on K cores, each progresses at min(1, K / n) of that speed, as the
// kernel's scheduler shares the cores among busy threads (egalitarian processor sharing). A
// job's end is therefore moved whenever another starts or ends: one pending completion event,
// superseded (by generation) at each change.
// A part of one run (run_context.h); one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/control/types.h"
#include "simulator/simulation.h"

namespace servelab::sim {

class FrontEnd;
class Server;

class SharedCores {
 public:
  // `cores` >= 1.
  SharedCores(Simulation& sim, uint32_t cores);

  // Starts `work` seconds (at one core's full speed) of `worker`'s batch on `server` at
  // `now`; calls server.on_batch_done(worker, t) at the time t it ends.
  void start(Server& server, WorkerId worker, Time work, Time now);
  // Starts `work` seconds of request `id`'s preprocessing on one of `front`'s IO threads;
  // calls front.on_io_done(id, t) at the time t it ends.
  void start_io(FrontEnd& front, RequestId id, Time work, Time now);
  // Jobs running now.
  size_t running() const { return jobs_.size(); }
  // The speed every running job has now (1: a core each).
  double speed() const;

  // Event: the earliest running job may have ended.
  void on_next_done(uint64_t generation, Time now);

 private:
  struct Job {
    Server* server;    // a batch: its server and worker
    WorkerId worker;
    FrontEnd* front;   // else a preprocessing: its front end and request
    RequestId request;
    Time remaining;  // work left, at one core's full speed
  };
  void add(Job job, Time now);
  void advance(Time now);     // every job's work done since the last change
  void reschedule(Time now);  // the next end under the current speed

  Simulation& sim_;
  double cores_;
  std::vector<Job> jobs_;  // in the order they started
  std::vector<Job> ended_;  // scratch for on_next_done
  Time last_change_ = 0;
  uint64_t generation_ = 0;  // completion events of older generations are stale
};

}  // namespace servelab::sim
