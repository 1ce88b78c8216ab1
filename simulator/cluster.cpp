#include "simulator/cluster.h"

#include "simulator/cluster_placement.h"

#include <algorithm>
#include <cmath>

namespace servelab::sim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
double finite_or_nan(Time t) { return std::isfinite(t) ? t : kNaN; }

// Server 0 draws from the run's own seed (a one-server run is the simulator it always was);
// server k > 0 from a stream of its own.
uint64_t server_seed(uint64_t seed, uint32_t k) {
  return k == 0 ? seed : seed ^ (0xd1b54a32d192ed03ULL * (k + 1));
}

}  // namespace

Cluster::Cluster(RunContext& ctx) : ctx_(ctx), groups_(ctx, *this) {
  const SimulationSetup& s = ctx.setup;
  if (s.cluster.servers == 0) throw ConfigError("cluster.servers must be at least 1");
  for (uint32_t k = 0; k < s.cluster.servers; ++k) {
    uint64_t seed = server_seed(s.seed, k);
    servers_.push_back(std::make_unique<Server>(ctx, *this, k, seed));
    front_ends_.push_back(
        std::make_unique<FrontEnd>(ctx, *servers_.back(), groups_, seed ^ 0xc2b2ae3d27d4eb4fULL));
  }
  if (servers_.size() > 1) router_ = route::make_router(s.cluster.router, s.seed ^ 0x94d049bb133111ebULL);
  placement_ = place_models(s, &ctx.schedule);  // counts only for a placement by load
  everywhere_ = placement_.everywhere();
  if (router_ && !router_->reads_load()) {  // index-only views, built once
    if (everywhere_) {
      index_views_.emplace_back();
      for (uint32_t k = 0; k < servers_.size(); ++k) index_views_[0].push_back({k, 0, 0, 0});
    } else {
      index_views_.resize(placement_.hosts.size());
      for (size_t m = 0; m < placement_.hosts.size(); ++m)
        for (const uint32_t k : placement_.hosts[m]) index_views_[m].push_back({k, 0, 0, 0});
    }
  }
  start_backups();
  for (auto& server : servers_) {
    const uint32_t k = server->index();
    if (everywhere_) server->add_models();
    else server->add_models([this, k](ModelId m) { return placement_.hosts_model(m, k); });
  }
}

Cluster::~Cluster() = default;

void Cluster::start(Clients& clients) {
  clients_ = &clients;
  clients.start();
  for (auto& server : servers_) server->start();
}

size_t Cluster::pick_server(RequestId id, Time now) {
  if (servers_.size() == 1) return 0;
  const ModelId model = ctx_.model_of(id);
  // A router that reads no load: the candidates' indices, without a visit to their state.
  if (!index_views_.empty())
    return route_over(id, model, index_views_[everywhere_ ? 0 : model], now);
  views_.clear();
  if (everywhere_) {
    for (const auto& s : servers_)
      views_.push_back({s->index(), s->outstanding(), s->queued(), s->free_workers()});
  } else {  // the model's hosts, in ascending index order
    for (const uint32_t k : placement_.hosts[model]) {
      const Server& s = *servers_[k];
      views_.push_back({k, s.outstanding(), s.queued(), s.free_workers()});
    }
  }
  return route_over(id, model, views_, now);
}

size_t Cluster::route_over(RequestId id, ModelId model, std::span<const route::ServerView> views,
                           Time now) {
  size_t k = router_->route(id, model, views, now);
  if (k >= views.size()) {
    ctx_.violation("router picked server " + std::to_string(k) + " of " +
                   std::to_string(views.size()));
    k = 0;
  }
  return views[k].index;
}

void Cluster::submit(RequestId id, Time now) {
  size_t k = pick_server(id, now);
  ctx_.window.server(id) = uint32_t(k);
  if (ctx_.setup.client_timeout < kNever)
    ctx_.sim.schedule<&Cluster::on_give_up>(now + ctx_.setup.client_timeout, this, id);
  if (backups_) watch_for_backup(id, uint32_t(k), now);
  front_ends_[k]->receive(id, now);
}

void Cluster::on_outcome(Server& server, const RequestOutcome& o, Time now) {
  RequestId id = o.request.id;
  if (is_member_request(id)) return on_member_outcome(server, o, now);
  if (backups_ && copy_outcome(server, o, now)) return;
  if (!ctx_.window.holds(id) || ctx_.window.state(id) == kDone) {
    ctx_.violation("request " + std::to_string(id) + " completed twice or unknown");
    return;
  }
  if (ctx_.window.state(id) == kGivenUp) {  // its client gave up: the result is discarded
    ctx_.window.release(id);  // the server is done with it
    return;
  }
  ctx_.window.state(id) = kDone;
  results::RequestRecord& r = ctx_.window.at(id);
  r.dispatch = finite_or_nan(o.assigned);
  r.start = finite_or_nan(o.started);
  // The client has the answer once the response overhead has passed.
  Time finished = std::isfinite(o.finished) ? o.finished : now;
  r.finish = front_ends_[server.index()]->answer_time(r.model, finished);
  r.batch_size = o.batch_size;
  r.waited_for_load = o.waited_for_load;
  if (ctx_.setup.private_loads && o.batch_size > 0) {  // its batch's own load, as the engine
    r.waited_for_load = true;                           // answers it: a load wait
    r.start = server.private_compute_start();
  }
  r.status = o.status;
  if (o.status == RequestStatus::Ok) r.accuracy = ctx_.setup.models[r.model].accuracy;
  finish(id, now);
}

// A group's member answered; the group request's record is final with its last member. Its
// group's dispatcher (if any) may then release more.
void Cluster::on_member_outcome(Server& server, const RequestOutcome& o, Time now) {
  record_member_outcome(server, o, now);
  groups_.member_answered(server, o.request.model, now);
}

void Cluster::record_member_outcome(Server& server, const RequestOutcome& o, Time now) {
  const Time finished = std::isfinite(o.finished) ? o.finished : now;
  const Time answered = front_ends_[server.index()]->answer_time(o.request.model, finished);
  const std::optional<GroupAnswer> a = groups_.on_member(o, answered);
  if (!a) return;  // members still out
  const RequestId id = group_request_of(o.request.id);
  if (!ctx_.window.holds(id) || ctx_.window.state(id) == kDone) {
    ctx_.violation("group request " + std::to_string(id) + " completed twice");
    return;
  }
  if (ctx_.window.state(id) == kGivenUp) {  // its client gave up: the answer is discarded
    ctx_.window.release(id);  // no member is held any more
    return;
  }
  ctx_.window.state(id) = kDone;
  results::RequestRecord& r = ctx_.window.at(id);
  r.dispatch = finite_or_nan(a->dispatch);
  r.start = finite_or_nan(a->start);
  r.finish = a->finish;
  r.batch_size = a->batch_size;
  r.waited_for_load = a->waited_for_load;
  r.status = a->status;
  r.accuracy = a->accuracy;
  finish(id, now);
}

// The request stays in play (held) until the cancellation has reached its server and the
// server's outcome has come back: both may still need its model and server.
void Cluster::on_give_up(RequestId id, Time now) {
  if (!ctx_.window.holds(id) || ctx_.window.state(id) != kOpen) return;
  ctx_.window.state(id) = kGivenUp;
  results::RequestRecord& r = ctx_.window.at(id);
  r.finish = now;
  r.status = RequestStatus::Cancelled;
  ctx_.window.hold(id);  // the cancellation
  ctx_.window.hold(id);  // the server's outcome
  ++ctx_.in_flight;
  ctx_.sim.schedule<&Cluster::on_cancel>(now + ctx_.setup.cancel_delay, this, id);
  finish(id, now);
}

void Cluster::on_cancel(RequestId id, Time now) {
  --ctx_.in_flight;
  if (ctx_.is_group(ctx_.model_of(id))) {
    // Taken out of its group's queue before any member left: no answer will come.
    if (groups_.cancel(id, server_of(id), now) == GroupRequests::Cancelled::Unsent)
      ctx_.window.release(id);
  } else {
    server_of(id).cancel(id, now);
  }
  ctx_.window.release(id);
}

// Request `id` has its final record: its client may send the next request.
void Cluster::finish(RequestId id, Time now) {
  ++completed_;
  last_progress_ = now;
  const Time answered = ctx_.window.at(id).finish;
  if (!latencies_.empty()) observe_latency(id);
  ctx_.window.finalize(id);
  clients_->answered(id, answered);
  stop_when_done();
}

// Every request answered, and no backup copy still out (its work counts as wasted): the end.
void Cluster::stop_when_done() {
  if (clients_->exhausted() && completed_ == ctx_.window.end() && copies_.empty())
    ctx_.sim.stop();
}

bool Cluster::quiet() const {
  if (ctx_.in_flight > 0) return false;
  return std::none_of(servers_.begin(), servers_.end(), [](const auto& s) { return s->busy(); });
}

size_t Cluster::queued() const {
  size_t n = groups_.queued();
  for (const auto& s : servers_) n += s->queued();
  return n;
}

}  // namespace servelab::sim
