// Backup requests with cross-server cancellation (DLIS section 5, "The Tail at Scale"'s tied
// requests): a request not answered cluster.backup_after_s after it was sent, or its model's
// cluster.backup_percentile of latency so far, goes a second time to another host of its
// model. With cluster.cancel_copies the first server to dequeue a
// copy has the other copy cancelled, simulation.cancel_delay_s later (queued: removed;
// running: its result discarded), and no backup is sent for a request already dequeued. The
// first answer that is not a cancellation is the request's; the other copy's work, where it
// ran, is counted as wasted.
#include <cmath>

#include "simulator/cluster.h"

namespace servelab::sim {

namespace {
// A percentile delay reads the model's last this many answered requests (docs/config.md).
constexpr size_t kPercentileWindow = 1000;
}  // namespace

void Cluster::start_backups() {
  const SimulationSetup::Cluster& c = ctx_.setup.cluster;
  ctx_.records.backups = c.backups();  // the records carry their backup columns
  if (!c.backups() || servers_.size() < 2) return;
  if (!ctx_.setup.groups.empty())
    throw ConfigError(std::string(std::isnan(c.backup_percentile) ? "cluster.backup_after_s"
                                                                  : "cluster.backup_percentile") +
                      ": backup requests do not support model groups");
  backups_ = true;
  if (!std::isnan(c.backup_percentile))
    latencies_.assign(ctx_.setup.models.size(),
                      route::LatencyPercentile(c.backup_percentile, kPercentileWindow));
  if (c.cancel_copies)
    for (auto& s : servers_) s->notify_dequeues(true);
}

void Cluster::watch_for_backup(RequestId id, uint32_t server, Time now) {
  const ModelId model = ctx_.model_of(id);
  if (!everywhere_ && placement_.hosts[model].size() < 2) return;  // nowhere else to send it
  const Time delay = latencies_.empty() ? ctx_.setup.cluster.backup_after
                                        : latencies_[model].value();
  if (std::isnan(delay)) return;  // no answer of its model yet: no percentile to wait for
  copies_[id] = Copies{server};
  ++ctx_.in_flight;
  ctx_.sim.schedule<&Cluster::on_backup>(now + delay, this, id);
}

// Request `id` was answered: its latency joins its model's (percentile delays only).
void Cluster::observe_latency(RequestId id) {
  const results::RequestRecord& r = ctx_.window.at(id);
  if (r.status == RequestStatus::Ok && r.model < latencies_.size())
    latencies_[r.model].add(r.finish - r.arrival);
}

void Cluster::on_backup(RequestId id, Time now) {
  --ctx_.in_flight;
  auto it = copies_.find(id);
  if (it == copies_.end()) return;  // answered already
  Copies& c = it->second;
  if (!ctx_.window.holds(id) || ctx_.window.state(id) != kOpen || c.dequeued) {
    copies_.erase(it);  // given up, or a server works on it: no backup
    return stop_when_done();
  }
  const ModelId model = ctx_.model_of(id);
  views_.clear();
  for (const auto& s : servers_)
    if (s->index() != c.primary && (everywhere_ || placement_.hosts_model(model, s->index())))
      views_.push_back({s->index(), s->outstanding(), s->queued(), s->free_workers()});
  size_t k = router_->route(id, model, views_, now);
  if (k >= views_.size()) k = 0;
  c.backup = views_[k].index;
  c.outcomes = 2;
  ctx_.window.hold(id);  // the second copy's outcome
  ++ctx_.result.backups_sent;
  ctx_.window.at(id).backup_sent = true;
  front_ends_[c.backup]->receive(id, now);
}

void Cluster::on_dequeued(Server& server, RequestId id, Time now) {
  auto it = copies_.find(id);
  if (it == copies_.end() || it->second.dequeued) return;
  Copies& c = it->second;
  c.dequeued = true;
  if (c.backup == kNoServer) return;  // no other copy (yet: none will be sent)
  c.cancelled = server.index() == c.primary ? c.backup : c.primary;
  c.cancel_pending = true;
  ++ctx_.in_flight;
  ctx_.window.hold(id);  // the cancellation needs the request's model
  ctx_.sim.schedule<&Cluster::on_copy_cancel>(now + ctx_.setup.cancel_delay, this, id);
}

void Cluster::on_copy_cancel(RequestId id, Time now) {
  --ctx_.in_flight;
  auto it = copies_.find(id);
  if (servers_[it->second.cancelled]->cancel(id, now)) {
    ++ctx_.result.copies_cancelled;
    ctx_.window.at(id).copy_cancelled = true;  // held until now
  }
  it->second.cancel_pending = false;
  forget_when_done(it);
  ctx_.window.release(id);
  stop_when_done();
}

// A request's copies are forgotten once both outcomes and the cancellation are in.
void Cluster::forget_when_done(std::unordered_map<RequestId, Copies>::iterator it) {
  if (it->second.outcomes == 0 && !it->second.cancel_pending) copies_.erase(it);
}

// An outcome of a request that had a backup sent: true when it is not the request's answer
// (a copy cancelled by the other's dequeue, or the copy that lost), which is then only
// counted. A request without a backup is left to on_outcome (false).
bool Cluster::copy_outcome(Server& server, const RequestOutcome& o, Time now) {
  const RequestId id = o.request.id;
  auto it = copies_.find(id);
  if (it == copies_.end()) return false;
  Copies& c = it->second;
  if (c.backup == kNoServer) {  // answered before a backup went out
    copies_.erase(it);
    stop_when_done();  // a given-up request's last word
    return false;
  }
  --c.outcomes;
  const bool cancelled_copy = server.index() == c.cancelled && o.status != RequestStatus::Ok;
  results::RequestRecord& r = ctx_.window.at(id);  // held for this outcome
  if (ctx_.window.state(id) == kOpen && !cancelled_copy) {  // the answer
    if (o.status == RequestStatus::Ok)
      r.won_by = server.index() == c.primary ? results::RequestRecord::Copy::Primary
                                             : results::RequestRecord::Copy::Backup;
    forget_when_done(it);
    return false;
  }
  forget_when_done(it);
  if (std::isfinite(o.started)) {  // this copy ran, for nothing
    const Time wasted = (std::isfinite(o.finished) ? o.finished : now) - o.started;
    ++ctx_.result.copies_wasted;
    ctx_.result.wasted_seconds += wasted;
    r.wasted += wasted;
  }
  ctx_.window.release(id);  // the second copy's outcome is in
  stop_when_done();
  return true;
}

}  // namespace servelab::sim
