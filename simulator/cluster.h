// The cluster: N simulated servers, each with its front end and the models the placement
// gives it (cluster_placement.h), and the router that sends each client request to one of its
// model's hosts. It keeps the request-level bookkeeping of a run: which
// server holds a request, its outcome in the records, the answer handed back to its client,
// client give-ups (simulation.client_timeout_s) and the cancellations they send to the server
// (arriving simulation.cancel_delay_s later: a queued request is removed, a running one's
// result is discarded). One server, the default, routes nothing and draws nothing.
// A part of one run (run_context.h); one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/route/latency_percentile.h"
#include "engine/route/placement.h"
#include "engine/route/router.h"
#include "simulator/clients.h"
#include "simulator/front_end.h"
#include "simulator/group_requests.h"
#include "simulator/server.h"

namespace servelab::sim {

class Cluster final : public RequestSink, public OutcomeSink {
 public:
  explicit Cluster(RunContext& ctx);
  ~Cluster() override;

  // Starts the clients, then every server's timer.
  void start(Clients& clients);

  // RequestSink: a client sent request `id`.
  void submit(RequestId id, Time now) override;

  // OutcomeSink.
  void on_outcome(Server& server, const RequestOutcome& o, Time now) override;
  bool quiet() const override;
  void on_dequeued(Server& server, RequestId id, Time now) override;
  size_t queued() const override;
  Time last_progress() const override { return last_progress_; }

  const std::vector<std::unique_ptr<Server>>& servers() const { return servers_; }
  const route::Placement& placement() const { return placement_; }
  FrontEnd& front_end(size_t k) { return *front_ends_[k]; }
  uint64_t completed() const { return completed_; }

  // Events.
  void on_give_up(RequestId id, Time now);   // the client stops waiting for `id`
  void on_cancel(RequestId id, Time now);    // the cancellation reaches id's server
  // Backup requests (cluster.backup_after_s or backup_percentile; cluster_backups.cpp).
  void on_backup(RequestId id, Time now);       // id's backup delay has passed
  void on_copy_cancel(RequestId id, Time now);  // a copy's cancellation reaches its server

 private:
  static constexpr RunContext::State kOpen = RunContext::Open, kDone = RunContext::Done,
                                     kGivenUp = RunContext::GivenUp;
  size_t pick_server(RequestId id, Time now);
  // The server index the router picks among `views` (a violation and the first if it errs).
  size_t route_over(RequestId id, ModelId model, std::span<const route::ServerView> views,
                    Time now);
  Server& server_of(RequestId id) { return *servers_[ctx_.window.server(id)]; }
  void on_member_outcome(Server& server, const RequestOutcome& o, Time now);
  void record_member_outcome(Server& server, const RequestOutcome& o, Time now);
  void finish(RequestId id, Time now);
  void stop_when_done();
  // Backups: a request's copies, while any is out.
  static constexpr uint32_t kNoServer = ~0u;
  struct Copies {
    uint32_t primary = 0, backup = kNoServer;
    uint32_t cancelled = kNoServer;  // the copy the first dequeue had cancelled
    bool dequeued = false;           // a copy left its queue (cancel mode only)
    bool cancel_pending = false;     // the cancellation of `cancelled` is on its way
    uint8_t outcomes = 1;            // outcomes still to come
  };
  void start_backups();
  void watch_for_backup(RequestId id, uint32_t server, Time now);
  bool copy_outcome(Server& server, const RequestOutcome& o, Time now);
  void observe_latency(RequestId id);
  void forget_when_done(std::unordered_map<RequestId, Copies>::iterator it);
  RunContext& ctx_;
  Clients* clients_ = nullptr;
  GroupRequests groups_;  // before the front ends, which fan group requests out through it
  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<std::unique_ptr<FrontEnd>> front_ends_;
  route::Placement placement_;  // which servers host which models (cluster.placement)
  bool everywhere_ = true;      // every model on every server: route over all servers
  std::unique_ptr<route::Router> router_;
  std::vector<route::ServerView> views_;       // scratch for the router
  // A router that reads no load: the candidates as index-only views, built once: every
  // server (one list) or, with a placement, each model's hosts (by ModelId). Empty otherwise.
  std::vector<std::vector<route::ServerView>> index_views_;
  bool backups_ = false;                       // a backup delay is set
  std::unordered_map<RequestId, Copies> copies_;
  // Percentile delays: each model's latencies so far, by ModelId; empty otherwise.
  std::vector<route::LatencyPercentile> latencies_;
  uint64_t completed_ = 0;
  Time last_progress_ = 0;
};

}  // namespace servelab::sim
