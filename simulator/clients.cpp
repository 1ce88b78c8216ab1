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
  double own_work = ctx_.overhead(ctx_.model_of(id)).client;
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

bool ClosedLoopClients::start_together() const {
  const workloads::Workload& w = ctx_.work;
  size_t first = std::min<size_t>(w.concurrency, w.models.size());
  size_t thinks = std::min(first, w.think_times.size());
  return std::all_of(w.think_times.begin(), w.think_times.begin() + thinks,
                     [](double t) { return t == 0; });
}

void ClosedLoopClients::start() {
  const workloads::Workload& w = ctx_.work;
  uint64_t first = std::min<uint64_t>(w.concurrency, w.models.size());
  for (next_ = 0; next_ < first; ++next_)
    schedule_send(next_, w.think_times.empty() ? 0 : w.think_times[next_]);
}

void ClosedLoopClients::answered(RequestId, Time at) {
  const workloads::Workload& w = ctx_.work;
  if (next_ >= w.models.size()) return;
  Time think = w.think_times.empty() ? 0 : w.think_times[next_];
  schedule_send(next_, at + think);
  ++next_;
}

void OpenLoopClients::start() {
  if (!ctx_.work.models.empty()) schedule_send(0, ctx_.work.send_times[0]);
}

void OpenLoopClients::sent(RequestId id, Time) {
  if (id + 1 < ctx_.work.models.size()) schedule_send(id + 1, ctx_.work.send_times[id + 1]);
}

std::unique_ptr<Clients> make_clients(RunContext& ctx, RequestSink& sink) {
  const workloads::Workload& w = ctx.work;
  size_t n = w.models.size();
  const size_t targets = ctx.setup.models.size() + ctx.setup.groups.size();  // groups follow
  for (uint32_t m : w.models) {
    if (m >= targets) {
      throw ConfigError("workload requests model index " + std::to_string(m) + " but only " +
                        std::to_string(ctx.setup.models.size()) + " models" +
                        (ctx.setup.groups.empty()
                             ? std::string()
                             : " and " + std::to_string(ctx.setup.groups.size()) + " groups") +
                        " are configured");
    }
  }
  if (w.closed_loop) {
    if (w.concurrency == 0 && n > 0) throw ConfigError("closed-loop workload with concurrency 0");
    if (!w.think_times.empty() && w.think_times.size() != n)
      throw ConfigError("workload: think_times and models differ in length");
    return std::make_unique<ClosedLoopClients>(ctx, sink);
  }
  if (w.send_times.size() != n) throw ConfigError("workload: send_times and models differ in length");
  return std::make_unique<OpenLoopClients>(ctx, sink);
}

}  // namespace servelab::sim
