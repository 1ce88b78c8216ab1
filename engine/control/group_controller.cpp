// A dispatched group's queue and decisions (group_controller.h).
#include "engine/control/group_controller.h"

#include <algorithm>
#include <utility>

namespace servelab {

namespace {

MemberMask all_of(size_t n) { return MemberMask((uint64_t(1) << n) - 1); }

}  // namespace

GroupController::GroupController(std::string group, std::vector<std::string> members,
                                 const PolicySpec& dispatch,
                                 std::vector<std::vector<BatchSeconds>> costs,
                                 EnsembleAccuracy accuracy, GroupExpiry expiry)
    : group_(std::move(group)),
      dispatch_name_(dispatch.name),
      member_names_(std::move(members)),
      costs_(std::move(costs)),
      accuracy_(std::move(accuracy)),
      expiry_(expiry) {
  if (member_names_.empty() || member_names_.size() > kMaxGroupMembers)
    throw ConfigError("group '" + group_ + "' needs 1.." + std::to_string(kMaxGroupMembers) +
                      " members");
  costs_.resize(member_names_.size());
  dispatcher_ = make_ensemble_dispatcher(dispatch, member_names_);
}

GroupController::~GroupController() = default;

void GroupController::arrive(const Request& r) { queue_.push_back(r); }

bool GroupController::wake(Time at) {
  if (at != wake_at_) return false;  // superseded
  wake_at_ = kNever;
  return true;
}

std::optional<GroupRelease> GroupController::next_release(const GroupMembersView& members,
                                                          Time now) {
  last_ = {};
  violation_.clear();
  if (queued() == 0) return std::nullopt;
  const GroupDecision d = decide(members, now);
  if (d.size == 0) {
    last_ = d;
    return std::nullopt;
  }
  const MemberMask mask = d.members & all_of(member_names_.size());
  if (mask == 0) {
    violation_ = "dispatcher " + dispatch_name_ + " of group " + group_ +
                 " released a batch to no member";
    return std::nullopt;
  }
  return take_front(d.size, mask);
}

std::optional<Time> GroupController::arm_wake(Time now) {
  Time at = last_.size == 0 && last_.wait_until > now ? last_.wait_until : kNever;
  if (queued() > 0) {
    const Time head = expiry_of(queue_[head_]);
    if (head > now) at = std::min(at, head);
  }
  if (!(at < wake_at_)) return std::nullopt;
  wake_at_ = at;
  return at;
}

Time GroupController::expiry_of(const Request& r) const {
  const Time timeout = r.arrival + expiry_.request_timeout;
  return expiry_.drop_late ? std::min(timeout, r.deadline) : timeout;
}

std::vector<GroupExpired> GroupController::expire(Time now) {
  std::vector<GroupExpired> out;
  while (queued() > 0 && expiry_of(queue_[head_]) <= now) {
    const Request& r = queue_[head_];
    const Time timeout = r.arrival + expiry_.request_timeout;
    const bool dropped = expiry_.drop_late && r.deadline < timeout;
    out.push_back({r, dropped ? RequestStatus::Dropped : RequestStatus::Timeout,
                   dropped ? r.deadline : timeout});
    ++head_;
  }
  if (head_ == queue_.size()) {
    queue_.clear();
    head_ = 0;
  }
  return out;
}

GroupDecision GroupController::decide(const GroupMembersView& members, Time now) {
  views_.clear();
  for (uint32_t k = 0; k < member_names_.size(); ++k)
    views_.push_back({ModelId(k), members.idle(k), &costs_[k]});
  return dispatcher_->decide({waiting(), views_, &accuracy_}, now);
}

// The oldest `size` requests leave the queue as one batch.
GroupRelease GroupController::take_front(uint32_t size, MemberMask mask) {
  const size_t n = std::min<size_t>(size, queued());
  GroupRelease out;
  out.requests.assign(queue_.begin() + head_, queue_.begin() + head_ + n);
  out.members = mask;
  out.batch = out.requests.front().id;
  head_ += n;
  if (head_ * 2 > queue_.size()) {  // drop the released front now and then
    queue_.erase(queue_.begin(), queue_.begin() + head_);
    head_ = 0;
  }
  batches_[out.batch] = {uint32_t(n), uint32_t(n), 0, mask};
  return out;
}

void GroupController::batch_request_answered(RequestId batch, bool overdue, Time now) {
  auto it = batches_.find(batch);
  if (it == batches_.end()) return;
  OpenBatch& b = it->second;
  if (overdue) ++b.overdue;
  if (--b.open > 0) return;
  const OpenBatch done = b;
  batches_.erase(it);
  dispatcher_->on_batch_answered(batch, done.size, done.selected, done.overdue, now);
}

bool GroupController::cancel(RequestId id) {
  auto held = std::find_if(queue_.begin() + head_, queue_.end(),
                           [&](const Request& r) { return r.id == id; });
  if (held == queue_.end()) return false;
  queue_.erase(held);
  return true;
}

std::vector<Request> GroupController::close() {
  std::vector<Request> drained(queue_.begin() + head_, queue_.end());
  queue_.clear();
  head_ = 0;
  last_ = {};
  wake_at_ = kNever;
  return drained;
}

}  // namespace servelab
