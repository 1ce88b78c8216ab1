#include "simulator/clients.h"

#include <algorithm>

namespace servelab::sim {

void Clients::schedule_send(RequestId id, Time at) {
  ++ctx_.in_flight;
  ctx_.sim.schedule<&Clients::on_send>(at, this, id);
}

void Clients::on_send(RequestId id, Time now) {
  sent(id, now);
  // The load generator's thread sends one request at a time: a send that finds it busy goes
  // out when it is free.
  const double own_work = client_work_ ? ctx_.overhead(ctx_.model_of(id)).client : 0;
  if (own_work > 0) {
    Time at = std::max(now, thread_free_);
    thread_free_ = at + own_work;
    if (at > now) {
      ctx_.sim.schedule<&Clients::on_thread_free>(at, this, id);
      return;  // still in flight
    }
  }
  on_thread_free(id, now);
}

void Clients::on_thread_free(RequestId id, Time now) {
  --ctx_.in_flight;
  results::RequestRecord& rec = ctx_.window.at(id);
  rec.arrival = now;  // the client's send, as the load generator records
  if (const std::optional<Time> slo = ctx_.slo_of_request(id)) rec.slo = *slo;
  sink_.submit(id, now);
}

bool Clients::pull(RequestId& id, Time& time) {
  workloads::ScheduledRequest r;
  if (exhausted_ || !ctx_.schedule.next(r)) {
    exhausted_ = true;
    return false;
  }
  const size_t targets = ctx_.setup.models.size() + ctx_.setup.groups.size();  // groups follow
  if (r.model >= targets) {
    throw ConfigError("workload requests model index " + std::to_string(r.model) + " but only " +
                      std::to_string(ctx_.setup.models.size()) + " models" +
                      (ctx_.setup.groups.empty()
                           ? std::string()
                           : " and " + std::to_string(ctx_.setup.groups.size()) + " groups") +
                      " are configured");
  }
  id = ctx_.window.open(r.model);
  time = r.time;
  return true;
}

void Clients::open_unsent() {
  RequestId id;
  Time time;
  while (pull(id, time)) {
  }
}

const std::vector<std::pair<RequestId, Time>>& ClosedLoopClients::opening() {
  if (opened_) return opening_;
  opened_ = true;
  RequestId id;
  Time think;
  while (opening_.size() < ctx_.schedule.concurrency() && pull(id, think))
    opening_.emplace_back(id, think);
  return opening_;
}

bool ClosedLoopClients::start_together() {
  const auto& first = opening();
  return std::all_of(first.begin(), first.end(), [](const auto& r) { return r.second == 0; });
}

void ClosedLoopClients::start() {
  for (const auto& [id, think] : opening()) schedule_send(id, think);
  query_unanswered_ = static_cast<uint32_t>(opening().size());
}

void ClosedLoopClients::answered(RequestId, Time at) {
  RequestId id;
  Time think;
  const uint32_t per_query = ctx_.schedule.samples_per_query();
  if (per_query == 0) {
    if (pull(id, think)) schedule_send(id, at + think);
    return;
  }
  if (--query_unanswered_ > 0) return;
  while (query_unanswered_ < per_query && pull(id, think)) {
    schedule_send(id, at + think);
    ++query_unanswered_;
  }
}

void OpenLoopClients::start() {
  RequestId id;
  Time at;
  if (pull(id, at)) schedule_send(id, at);
}

void OpenLoopClients::sent(RequestId, Time) {
  RequestId id;
  Time at;
  if (pull(id, at)) schedule_send(id, at);
}

std::unique_ptr<Clients> make_clients(RunContext& ctx, RequestSink& sink) {
  if (ctx.schedule.closed_loop()) return std::make_unique<ClosedLoopClients>(ctx, sink);
  return std::make_unique<OpenLoopClients>(ctx, sink);
}

}  // namespace servelab::sim
