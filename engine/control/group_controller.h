// One model group served by an ensemble dispatcher (Rafiki 5.2; ensemble_dispatch.h): the
// group's queue, its dispatcher's decisions, its wake-ups and the batches it released, as an
// event-driven state machine beside the Controller. Both bodies carry out what it decides:
// the engine's server::GroupDispatch (engine/server/group_dispatch.h) and the simulator's
// sim::GroupRequests (simulator/group_requests.h) keep only their own carrying-out (member
// requests, timers, answers).
//
// Events in: arrive (a group request joins the queue), a member answered or a wake-up came
// (ask again), a released request has its final answer (the dispatcher's feedback), a
// request's client is gone (it leaves the queue), the group is closed (the queue drains).
// Actions out, one at a time so that the body's member state is current at every decision:
//   next_release(members, now) -> the oldest `size` requests to release to `members` now;
//   the body carries it out and asks again until it gets none, then arm_wake() says when
//   (if at all) to call wake() and ask again.
// A queued request ends in one of four ways: released, expired (expire: timed out, or dropped
// at its deadline, under the same rules as a model's queue in the Controller), cancelled
// (cancel) or drained (close).
// No clock, threads or I/O; one thread (the body serializes its calls).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/control/ensemble.h"
#include "engine/control/ensemble_dispatch.h"
#include "engine/control/types.h"

namespace servelab {

// The body's members now: whether each is idle (nothing of it queued or running, nothing
// released to it unanswered), read at each decision.
class GroupMembersView {
 public:
  virtual ~GroupMembersView() = default;
  virtual bool idle(uint32_t member) const = 0;
};

// A batch released by the dispatcher: `requests` (oldest first) go to every member in
// `members`; `batch` (its first request's id) names it in batch_request_answered.
struct GroupRelease {
  std::vector<Request> requests;
  MemberMask members = 0;
  RequestId batch = 0;
};

// When a queued group request ends without a release (ControllerConfig's rules for a model's
// queue): still queued at arrival + request_timeout, it times out (Timeout); with drop_late,
// still queued at its deadline, it is dropped (Dropped).
struct GroupExpiry {
  Time request_timeout = kNever;
  bool drop_late = false;
};

// A queued request whose time is up: the body answers it with `status`, as of `at`.
struct GroupExpired {
  Request request;
  RequestStatus status = RequestStatus::Timeout;
  Time at = 0;
};

class GroupController {
 public:
  // `members`: the members' names (in member order, at most kMaxGroupMembers) for the
  // dispatcher; `costs`: each member's mean batch costs (the dispatcher's c(m, b)), by member;
  // `accuracy`: the measured accuracy of every subset, as the dispatcher reads it. Throws
  // ConfigError for a bad dispatcher or member list.
  GroupController(std::string group, std::vector<std::string> members, const PolicySpec& dispatch,
                  std::vector<std::vector<BatchSeconds>> costs, EnsembleAccuracy accuracy,
                  GroupExpiry expiry = {});
  ~GroupController();

  // Events in.
  void arrive(const Request& r);  // joins the queue's tail; then ask next_release
  // A wake-up armed by arm_wake() came at `at`: true when it is still the current one (then
  // ask next_release); false when an earlier or later decision superseded it.
  bool wake(Time at);
  // Request `id` of batch `batch` has its final answer; `overdue`: past its deadline. The
  // batch's last one tells the dispatcher (EnsembleDispatcher::on_batch_answered).
  void batch_request_answered(RequestId batch, bool overdue, Time now);
  // Request `id`'s client is gone: true when it was still queued (it leaves the queue and no
  // answer will come from here); false when released or unknown.
  bool cancel(RequestId id);
  // The group is gone: the queued requests, oldest first, for the body to answer.
  std::vector<Request> close();
  // The queued requests whose time is up at `now`, oldest first; they leave the queue. Heads
  // only: a request expires once it is the head (with one timeout and one SLO per group,
  // expiry times rise along the queue). Ask before and after next_release.
  std::vector<GroupExpired> expire(Time now);

  // Actions out. The next batch to release now, or none (then arm_wake). A decision that
  // releases to no member is refused: `violation` says so, and nothing is released.
  std::optional<GroupRelease> next_release(const GroupMembersView& members, Time now);
  // After next_release gave none: the time to arm a wake-up for (the dispatcher's wait or the
  // head's expiry, whichever is first; earlier than any armed one, after now), or none.
  std::optional<Time> arm_wake(Time now);
  const std::string& violation() const { return violation_; }

  size_t queued() const { return queue_.size() - head_; }
  std::span<const Request> waiting() const { return {queue_.data() + head_, queued()}; }
  size_t open_batches() const { return batches_.size(); }
  const std::string& name() const { return group_; }

 private:
  struct OpenBatch {
    uint32_t size = 0, open = 0, overdue = 0;
    MemberMask selected = 0;
  };
  GroupDecision decide(const GroupMembersView& members, Time now);
  Time expiry_of(const Request& r) const;
  GroupRelease take_front(uint32_t size, MemberMask mask);

  std::string group_;
  std::string dispatch_name_;
  std::vector<std::string> member_names_;
  std::unique_ptr<EnsembleDispatcher> dispatcher_;
  std::vector<std::vector<BatchSeconds>> costs_;  // by member
  EnsembleAccuracy accuracy_;
  GroupExpiry expiry_;
  std::vector<GroupMemberView> views_;  // scratch of decide()
  std::vector<Request> queue_;          // queue_[head_..], oldest first
  size_t head_ = 0;
  GroupDecision last_;                  // the last decision (its wait_until for arm_wake)
  Time wake_at_ = kNever;               // the armed wake-up that is still current
  std::unordered_map<RequestId, OpenBatch> batches_;  // by the batch's first request
  std::string violation_;
};

}  // namespace servelab
