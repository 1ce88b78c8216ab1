#include "simulator/group_requests.h"

#include <cmath>
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
  const SimGroup& g = ctx_.group(ctx_.model_of(id));
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
  pending_.erase(it);
  return a;
}

void GroupRequests::cancel(RequestId id, Server& server, Time now) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;  // not fanned out yet, or every member answered
  // Copied: a cancelled member may complete at once, and the last one erases the entry.
  const MemberMask open = it->second.selected & ~it->second.answered;
  for (uint32_t k = 0; k < kMaxGroupMembers; ++k)
    if (open >> k & 1) server.cancel(member_request_id(id, k), now);
}

}  // namespace servelab::sim
