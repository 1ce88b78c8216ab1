// A simulated server: the Controller (engine/control) with simulated workers, loader and tiers
// in virtual time. A dispatch of b requests of model m finishes at now + its cost; a load
// finishes at now + its load time, after the evictions emitted before it where the profile
// costs them (else they complete at once). Every cost comes from the server's MachineModel
// (calibration/terms/machine_model.h: the cost profile and the terms fitted to the machine). The server checks the controller's
// contract as it carries the actions out, with the engine's checker
// (engine/control/contract_monitor.h), and the run reports its violations. Completions go to
// the server's OutcomeSink (the cluster).
// A part of one run (run_context.h); one thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "engine/control/action_carrier.h"
#include "engine/control/cache_trace.h"
#include "engine/control/contract_monitor.h"
#include "engine/control/controller.h"
#include "calibration/terms/machine_model.h"
#include "simulator/run_context.h"

namespace servelab::sim {

class Server;

// The machine's terms of `setup`, for its servers to share (RunContext::machine).
std::shared_ptr<const MachineTables> machine_tables(const SimulationSetup& setup);

// Who learns what happened to each request a server finished, and whether the whole system
// is quiet (for the stall check of a server's timer).
class OutcomeSink {
 public:
  virtual ~OutcomeSink() = default;
  virtual void on_outcome(Server& server, const RequestOutcome& o, Time now) = 0;
  // Nothing but timers can happen any more; `queued`: requests still queued anywhere.
  virtual bool quiet() const = 0;
  virtual size_t queued() const = 0;
  virtual Time last_progress() const = 0;
  // Request `id` left `server`'s queue for a worker (only while dequeue notices are on).
  virtual void on_dequeued(Server& server, RequestId id, Time now) {}
};

class Server {
 public:
  // `index`: the server's number in its cluster; `seed`: its batch and load draws' streams.
  Server(RunContext& ctx, OutcomeSink& sink, uint32_t index, uint64_t seed);

  uint32_t index() const { return index_; }
  // Registers every model it hosts (`hosts(id)`; empty: all), resident as far as the tier
  // budgets allow (initial placement).
  void add_models(const std::function<bool(ModelId)>& hosts = {});
  void start() { arm_timer(0); }
  // Tells the sink of each request it dispatches (OutcomeSink::on_dequeued); off by default.
  void notify_dequeues(bool on) { notify_dequeues_ = on; }

  // Request `id` reaches the controller at `now`.
  void arrive(RequestId id, Time now);
  // Requests made elsewhere (a group's batch for one member: their ids, arrival and deadline
  // are the group requests') reach the controller together at `now`.
  void arrive_together(std::span<const Request> requests, Time now);
  // Request `id` is cancelled at `now`: removed if still queued, its result discarded if its
  // batch is running (the worker stays busy until the batch ends). False if the server no
  // longer holds it.
  bool cancel(RequestId id, Time now);

  // For routers and the stall check.
  uint64_t outstanding() const { return outstanding_; }  // arrived, not yet completed
  Time emptied_at() const { return emptied_at_; }  // when it last held no request
  size_t queued() const { return ctl_.total_queued(); }
  uint64_t queued_of(ModelId m) const { return ctl_.queued(m); }    // subset policies
  uint32_t running_of(ModelId m) const { return ctl_.running(m); }  // its batches
  uint32_t free_workers() const { return ctl_.free_workers(); }
  bool busy() const { return busy_workers_ > 0 || contract_.loads_in_flight() > 0; }
  const ControllerStats& stats() const { return ctl_.stats(); }
  uint64_t batches() const { return batches_; }
  uint64_t batched_requests() const { return batched_requests_; }
  uint64_t arrived() const { return arrived_; }  // requests that reached its controller
  Time compute_seconds() const { return compute_seconds_; }  // its workers' batches, summed
  const ContractMonitor& contract() const { return contract_; }
  // The executing tier's trace (SimulationSetup::cache_optimum); null when not recorded.
  const CacheTrace* cache_trace() const { return cache_trace_.get(); }
  // engine.weights: private: when the batch whose outcomes are being reported began to
  // compute, its own load done (the engine's answer counts that load as a load wait).
  Time private_compute_start() const { return private_compute_start_; }

  // Events.
  void on_batch_done(WorkerId worker, Time now);
  struct LoadDone {
    ModelId model;
    Tier to;
  };
  void on_load_done(LoadDone done, Time now);
  // engine.weights: private: a batch's own copy of its model is loaded; it computes now.
  void on_private_load_done(WorkerId worker, Time now);
  void on_timer(uint64_t generation, Time now);

 private:
  struct Worker {
    bool busy = false;
    BatchId batch = 0;
    ModelId model = 0;
    uint32_t size = 0;    // its batch's requests
    Time idle_since = 0;  // when its last batch ended (the run's start before its first)
    Time computing_since = 0;  // when its batch began to compute
  };

  struct Carrier;
  void start_cache_trace(const std::function<bool(ModelId)>& hosts);
  void carry_out(Time now);
  void dispatch(const Batch& b, Time now);
  void compute(WorkerId worker, Time now);
  Time post_on_loader(const LoadAction& l, Time now);
  void check_requests(const Batch& b);
  void occupy_loader(const EvictAction& e, Time now);
  void load(const LoadAction& l, Time now);
  void complete(const RequestOutcome& o, Time now);
  void arm_timer(Time now);
  bool stalled(Time now) const;

  RunContext& ctx_;
  OutcomeSink& sink_;
  uint32_t index_;
  Controller ctl_;
  ContractMonitor contract_;
  ActionBuffers actions_;  // the controller's, carried out at each event (action_carrier.h)
  // Every cost of a batch, a load or an eviction (calibration/terms/machine_model.h).
  MachineModel machine_;
  Time private_compute_start_ = 0;  // of the batch whose outcomes are being reported
  Time emptied_at_ = 0;  // when the server last held no request (the run's start at first)
  Time loader_idle_since_ = 0;  // when the loader's last load ended

  std::vector<Worker> workers_;
  uint32_t busy_workers_ = 0;
  uint64_t outstanding_ = 0;
  uint64_t batches_ = 0, batched_requests_ = 0;
  uint64_t arrived_ = 0;
  Time compute_seconds_ = 0;  // from each batch's compute start to its end, over all batches
  bool notify_dequeues_ = false;
  std::unique_ptr<CacheTrace> cache_trace_;

  Time loader_busy_until_ = 0;  // the loader's jobs posted so far (loads, costed evictions) end then
  Time timer_at_ = kNever;  // the earliest timer event that is still current
  uint64_t timer_gen_ = 0;  // timers of older generations are stale and skipped
  Time last_timer_ = -1;
  uint64_t same_time_timers_ = 0;
};

}  // namespace servelab::sim
