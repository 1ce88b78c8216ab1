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

// A member is idle when nothing of it is queued or running on the server.
class GroupRequests::MembersIdle final : public GroupMembersView {
 public:
  MembersIdle(const Server& server, const SimGroup& group) : server_(server), group_(group) {}
  bool idle(uint32_t k) const override {
    const ModelId m = group_.members[k];
    return server_.queued_of(m) == 0 && server_.running_of(m) == 0;
  }

 private:
  const Server& server_;
  const SimGroup& group_;
};

GroupRequests::GroupRequests(RunContext& ctx, OutcomeSink& expired)
    : ctx_(ctx), expired_(expired) {
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

// One controller per (server, group) for the groups that have a dispatcher, each with its own
// dispatcher (a learning one keeps per-queue state).
void GroupRequests::make_dispatchers() {
  const SimulationSetup& s = ctx_.setup;
  const uint32_t servers = std::max(1u, s.cluster.servers);
  queues_.resize(size_t(servers) * s.groups.size());
  servers_.assign(servers, nullptr);
  for (uint32_t k = 0; k < servers; ++k)
    for (size_t g = 0; g < s.groups.size(); ++g) {
      const SimGroup& group = s.groups[g];
      if (group.dispatch.name.empty()) continue;
      std::vector<std::vector<BatchSeconds>> costs;  // the members' mean batch costs
      for (ModelId m : group.members) costs.push_back(s.models[m].profile.mean_batch_seconds());
      queues_[k * s.groups.size() + g] = std::make_unique<GroupController>(
          group.name, member_names(s, group), group.dispatch, std::move(costs), group.accuracy,
          GroupExpiry{s.control.request_timeout, s.control.drop_late});
    }
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
  if (p.batch != kNoBatch)
    queues_[p.queue]->batch_request_answered(p.batch, a.finish > p.deadline, a.finish);
  pending_.erase(it);
  return a;
}

GroupRequests::Cancelled GroupRequests::cancel(RequestId id, Server& server, Time now) {
  auto it = pending_.find(id);
  if (it == pending_.end()) {  // still in its group's queue, or every member answered
    const SimGroup& g = ctx_.group(ctx_.model_of(id));
    if (g.dispatch.name.empty()) return Cancelled::Nothing;
    if (!queues_[queue_index(server, g)]->cancel(id)) return Cancelled::Nothing;
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
  queues_[queue_index(server, g)]->arrive({id, group, now, slo ? now + *slo : kNever});
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
  if (!queues_[index]->wake(now)) return;  // superseded by an earlier wake-up
  dispatch(index, *servers_[index / ctx_.setup.groups.size()], now);
}

// Asks the queue's controller until it releases nothing more; then arms its wake-up.
void GroupRequests::dispatch(uint32_t index, Server& server, Time now) {
  GroupController& q = *queues_[index];
  const SimGroup& g = ctx_.setup.groups[index % ctx_.setup.groups.size()];
  const MembersIdle members(server, g);
  answer_expired(q, server, now);
  while (auto release = q.next_release(members, now)) carry_out(index, g, *release, server, now);
  answer_expired(q, server, now);
  if (!q.violation().empty()) {
    ctx_.violation(q.violation());
    return;
  }
  if (auto at = q.arm_wake(now)) ctx_.sim.schedule<&GroupRequests::on_wake>(*at, this, index);
}

// Requests whose time is up leave the queue unsent, answered as their server's outcome.
void GroupRequests::answer_expired(GroupController& q, Server& server, Time now) {
  for (const GroupExpired& e : q.expire(now)) {
    --queued_;
    RequestOutcome o{e.request, e.status};
    o.finished = e.at;
    expired_.on_outcome(server, o, now);
  }
}

// The released group requests go to every member in the release's mask: each member gets their
// member requests together. They left the queue first: a member that answers at once (a
// failure) asks the controller again from within.
void GroupRequests::carry_out(uint32_t index, const SimGroup& g, const GroupRelease& release,
                              Server& server, Time now) {
  queued_ -= release.requests.size();
  for (const Request& r : release.requests) {
    Pending& p = pending_[r.id];
    p.selected = release.members;
    p.last.finish = -std::numeric_limits<double>::infinity();
    p.batch = release.batch;
    p.queue = index;
    p.deadline = r.deadline;
  }
  std::vector<Request> members;
  for (uint32_t k = 0; k < g.members.size(); ++k) {
    if (!(release.members >> k & 1)) continue;
    members.clear();
    for (const Request& r : release.requests)
      members.push_back({member_request_id(r.id, k), g.members[k], r.arrival, r.deadline});
    server.arrive_together(members, now);
  }
}

}  // namespace servelab::sim
