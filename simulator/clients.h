// Simulated clients: where requests come from. A closed loop keeps N requests in flight (the
// next one sent when an answer comes back, after its think time); an open loop sends at the
// workload's send times (Poisson, constant, sine, or a replayed trace's timestamps). Each
// request is pulled from the run's schedule when its send is scheduled, and enters the record
// window then (it gets the next id). Both send
// through one load-generator thread whose own work per request (RequestOverhead::client)
// spaces out requests sent at the same moment, as `servelab load` does.
// Parts of one run (run_context.h); one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "simulator/run_context.h"

namespace servelab::sim {

// Where clients hand their requests (the cluster): `submit` is the moment the request leaves
// the client, recorded as its arrival.
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void submit(RequestId id, Time now) = 0;
};

class Clients {
 public:
  Clients(RunContext& ctx, RequestSink& sink)
      : ctx_(ctx), sink_(sink), client_work_(ctx.any_overhead(&RequestOverhead::client)) {}
  virtual ~Clients() = default;
  // Schedules the first sends.
  virtual void start() = 0;
  // The answer to request `id` reached its client at `at` (>= now).
  virtual void answered(RequestId id, Time at) = 0;
  // Every request of the schedule has been pulled.
  bool exhausted() const { return exhausted_; }
  // The end of the run: the requests never pulled enter the window (their records follow).
  void open_unsent();

  // Events.
  void on_send(RequestId id, Time now);         // the client wants to send `id`
  void on_thread_free(RequestId id, Time now);  // the load generator's thread sends it

 protected:
  void schedule_send(RequestId id, Time at);
  virtual void sent(RequestId id, Time now) {}  // after on_send, before the thread's delay
  // The schedule's next request, opened in the window: its id and time; false once none is
  // left. Throws ConfigError for a target the run does not have.
  bool pull(RequestId& id, Time& time);

  RunContext& ctx_;

 private:
  RequestSink& sink_;
  const bool client_work_;  // some target's sends cost the load generator's thread time
  Time thread_free_ = 0;  // the load generator's thread is busy until then
  bool exhausted_ = false;
};

// N requests in flight; request i + N is sent when an answer comes back (in answer order),
// after its think time. With every think time zero the first N leave together. In queries
// (Schedule::samples_per_query N): the next N leave when the last of the previous N answers.
class ClosedLoopClients final : public Clients {
 public:
  using Clients::Clients;
  void start() override;
  void answered(RequestId id, Time at) override;
  // The first requests (up to N), pulled before the run starts: their ids and think times.
  const std::vector<std::pair<RequestId, Time>>& opening();
  bool start_together();  // the first requests are all sent at time 0

 private:
  std::vector<std::pair<RequestId, Time>> opening_;
  bool opened_ = false;
  uint32_t query_unanswered_ = 0;  // in queries: samples of the current query not answered
};

// Request i is sent at its send time; each send schedules the next, so one send is pending.
class OpenLoopClients final : public Clients {
 public:
  using Clients::Clients;
  void start() override;
  void answered(RequestId, Time) override {}

 private:
  void sent(RequestId id, Time now) override;
};

// The clients the schedule asks for (closed or open loop).
std::unique_ptr<Clients> make_clients(RunContext& ctx, RequestSink& sink);

}  // namespace servelab::sim
