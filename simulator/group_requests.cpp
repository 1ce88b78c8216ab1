#include "simulator/group_requests.h"

#include <cmath>
#include <algorithm>
#include <limits>
#include <string>

#include "simulator/server.h"

namespace servelab::sim {

namespace {

std::vector<std::string> member_names(const SimulationSetup& s, const SimGroup& g) {
  std::vector<std::string> names;
  for (ModelId m : g.members) names.push_back(s.models[m].name);
  return names;
}

}  // namespace

GroupRequests::GroupRequests(RunContext& ctx) : ctx_(ctx) {
  for (const SimGroup& g : ctx.setup.groups) {
    if (g.members.empty() || g.members.size() > kMaxGroupMembers)
      throw ConfigError("group '" + g.name + "' needs 1.." + std::to_string(kMaxGroupMembers) +
                        " members");
    for (ModelId m : g.members)
      if (m >= ctx.setup.models.size())
        throw ConfigError("group '" + g.name + "' names model index " + std::to_string(m));
    policies_.push_back(make_subset_policy(g.subset, member_names(ctx.setup, g)));
  }
  make_dispatchers();
}

// One queue per (server, group) for the groups that have a dispatcher, each with its own
// dispatcher (a learning one keeps per-queue state).
void GroupRequests::make_dispatchers() {
  const SimulationSetup& s = ctx_.setup;
  const uint32_t servers = std::max(1u, s.cluster.servers);
  queues_.resize(size_t(servers) * s.groups.size());
  servers_.assign(servers, nullptr);
  bool any = false;
  for (uint32_t k = 0; k < servers; ++k)
    for (size_t g = 0; g < s.groups.size(); ++g)
      if (!s.groups[g].dispatch.name.empty()) {
        queues_[k * s.groups.size() + g].dispatcher =
            make_ensemble_dispatcher(s.groups[g].dispatch, member_names(s, s.groups[g]));
        any = true;
      }
  if (!any) return;
  for (const SimModel& m : s.models) costs_.push_back(m.profile.mean_batch_seconds());
}

GroupRequests::~GroupRequests() = default;

MemberMask GroupRequests::select(const SimGroup& g, const Server& server) {
  views_.clear();
  for (ModelId m : g.members) views_.push_back({m, server.queued_of(m)});
  const size_t index = &g - ctx_.setup.groups.data();
  const MemberMask all = MemberMask((uint64_t(1) << g.members.size()) - 1);
  MemberMask mask = policies_[index]->select(views_) & all;
  if (mask == 0) {
    ctx_.violation("subset policy " + g.subset.name + " of group " + g.name + " picked no member");
    mask = all;
  }
  return mask;
}

void GroupRequests::fan_out(RequestId id, Server& server, Time now) {
  const ModelId target = ctx_.model_of(id);
  const SimGroup& g = ctx_.group(target);
  if (!g.dispatch.name.empty()) return queue_up(id, target, server, now);
  Pending& p = pending_[id];
  p.selected = select(g, server);
  p.last.finish = -std::numeric_limits<double>::infinity();
  for (uint32_t k = 0; k < g.members.size(); ++k)
    if (p.selected >> k & 1) server.arrive(member_request_id(id, k), now);
}

std::optional<GroupAnswer> GroupRequests::on_member(const RequestOutcome& o, Time answered) {
  const RequestId id = group_request_of(o.request.id);
  const MemberMask bit = MemberMask(1) << member_index_of(o.request.id);
  auto it = pending_.find(id);
  if (it == pending_.end() || !(it->second.selected & bit) || (it->second.answered & bit)) {
    ctx_.violation("member request " + std::to_string(member_index_of(o.request.id)) +
                   " of group request " + std::to_string(id) + " completed twice or unknown");
    return std::nullopt;
  }
  Pending& p = it->second;
  p.answered |= bit;
  if (o.status == RequestStatus::Ok) p.voted |= bit;
  if (answered >= p.last.finish)
    p.last = {answered, o.assigned, o.started, o.batch_size, o.waited_for_load, o.status};
  if (p.answered != p.selected) return std::nullopt;
  GroupAnswer a = p.last;
  a.voters = p.voted;
  if (a.voters) a.status = RequestStatus::Ok;
  a.accuracy = ctx_.group(ctx_.model_of(id)).accuracy.of(a.voters);
  if (p.batch != kNoBatch) batch_member_final(p, a.finish);
  pending_.erase(it);
  return a;
}

// A request of a dispatcher's batch is final; the batch's last one tells the dispatcher.
void GroupRequests::batch_member_final(const Pending& p, Time answered) {
  auto it = batches_.find(p.batch);
  if (it == batches_.end()) return;
  OpenBatch& b = it->second;
  if (answered > p.deadline) ++b.overdue;
  if (--b.open > 0) return;
  const OpenBatch done = b;
  batches_.erase(it);
  queues_[done.queue].dispatcher->on_batch_answered(p.batch, done.size, done.selected,
                                                    done.overdue, answered);
}

GroupRequests::Cancelled GroupRequests::cancel(RequestId id, Server& server, Time now) {
  auto it = pending_.find(id);
  if (it == pending_.end()) {  // still in its group's queue, or every member answered
    const SimGroup& g = ctx_.group(ctx_.model_of(id));
    if (g.dispatch.name.empty()) return Cancelled::Nothing;
    GroupQueue& q = queues_[queue_index(server, g)];
    auto held = std::find_if(q.items.begin() + q.head, q.items.end(),
                             [&](const Request& r) { return r.id == id; });
    if (held == q.items.end()) return Cancelled::Nothing;
    q.items.erase(held);
    --queued_;
    return Cancelled::Unsent;
  }
  // Copied: a cancelled member may complete at once, and the last one erases the entry.
  const MemberMask open = it->second.selected & ~it->second.answered;
  for (uint32_t k = 0; k < kMaxGroupMembers; ++k)
    if (open >> k & 1) server.cancel(member_request_id(id, k), now);
  return Cancelled::Members;
}

size_t GroupRequests::queue_index(const Server& server, const SimGroup& g) const {
  return server.index() * ctx_.setup.groups.size() + size_t(&g - ctx_.setup.groups.data());
}

void GroupRequests::queue_up(RequestId id, ModelId group, Server& server, Time now) {
  const SimGroup& g = ctx_.group(group);
  const std::optional<Time>& slo = ctx_.setup.slo;
  GroupQueue& q = queues_[queue_index(server, g)];
  q.items.push_back({id, group, now, slo ? now + *slo : kNever});
  ++queued_;
  servers_[server.index()] = &server;
  dispatch(uint32_t(queue_index(server, g)), server, now);
}

void GroupRequests::member_answered(Server& server, ModelId model, Time now) {
  const std::vector<SimGroup>& groups = ctx_.setup.groups;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].dispatch.name.empty()) continue;
    const std::vector<ModelId>& m = groups[g].members;
    if (std::find(m.begin(), m.end(), model) == m.end()) continue;
    dispatch(uint32_t(queue_index(server, groups[g])), server, now);
  }
}

void GroupRequests::on_wake(uint32_t index, Time now) {
  GroupQueue& q = queues_[index];
  if (now != q.wake_at) return;  // superseded by an earlier wake-up
  q.wake_at = kNever;
  dispatch(index, *servers_[index / ctx_.setup.groups.size()], now);
}

// Asks the queue's dispatcher until it releases nothing more; then arms its wake-up.
void GroupRequests::dispatch(uint32_t index, Server& server, Time now) {
  GroupQueue& q = queues_[index];
  const SimGroup& g = ctx_.setup.groups[index % ctx_.setup.groups.size()];
  while (q.head < q.items.size()) {
    const GroupDecision d = decide(q, g, server, now);
    const MemberMask all = MemberMask((uint64_t(1) << g.members.size()) - 1);
    if (d.size > 0 && (d.members & all) == 0) {
      ctx_.violation("dispatcher " + g.dispatch.name + " of group " + g.name +
                     " released a batch to no member");
      return;
    }
    if (d.size == 0) {
      if (d.wait_until > now && d.wait_until < q.wake_at) {
        q.wake_at = d.wait_until;
        ctx_.sim.schedule<&GroupRequests::on_wake>(d.wait_until, this, index);
      }
      return;
    }
    release(q, g, d.size, d.members & all, server, now);
  }
}

GroupDecision GroupRequests::decide(GroupQueue& q, const SimGroup& g, const Server& server,
                                    Time now) {
  members_.clear();
  for (ModelId m : g.members)
    members_.push_back({m, server.queued_of(m) == 0 && server.running_of(m) == 0, &costs_[m]});
  return q.dispatcher->decide({q.waiting(), members_, &g.accuracy}, now);
}

// The oldest `size` group requests go to every member in `mask`: each member gets their
// member requests together. They leave the queue first: a member that answers at once (a
// failure) asks the dispatcher again from within.
void GroupRequests::release(GroupQueue& q, const SimGroup& g, uint32_t size, MemberMask mask,
                            Server& server, Time now) {
  const size_t n = std::min<size_t>(size, q.items.size() - q.head);
  const std::vector<Request> batch(q.items.begin() + q.head, q.items.begin() + q.head + n);
  q.head += n;
  queued_ -= n;
  if (q.head * 2 > q.items.size()) {  // drop the released front now and then
    q.items.erase(q.items.begin(), q.items.begin() + q.head);
    q.head = 0;
  }
  const uint32_t index = uint32_t(&q - queues_.data());
  batches_[batch.front().id] = {index, uint32_t(n), uint32_t(n), 0, mask};
  for (const Request& r : batch) {
    Pending& p = pending_[r.id];
    p.selected = mask;
    p.last.finish = -std::numeric_limits<double>::infinity();
    p.batch = batch.front().id;
    p.deadline = r.deadline;
  }
  std::vector<Request> members;
  for (uint32_t k = 0; k < g.members.size(); ++k) {
    if (!(mask >> k & 1)) continue;
    members.clear();
    for (const Request& r : batch)
      members.push_back({member_request_id(r.id, k), g.members[k], r.arrival, r.deadline});
    server.arrive_together(members, now);
  }
}

}  // namespace servelab::sim
