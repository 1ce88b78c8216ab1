// Requests to model groups (ensembles) in flight. A group request that reaches a server's
// controller fans out there into one member request (member_requests.h) per member its group's
// subset policy selects; each waits in its member model's queue as an ordinary request (the
// batching policies, SLO deadlines and the cache see nothing else). The group request's answer
// is final once every selected member has answered:
//   - its finish is the latest member answer (latency = the slowest member's); dispatch,
//     start, batch size and waited-for-load are that member's;
//   - the members that answered Ok voted; a member that failed, timed out, was dropped past
//     its deadline or rejected does not vote. With at least one voter the status is Ok and the
//     expected accuracy is the measured accuracy of exactly the voters (the group's table:
//     Rafiki's majority vote, ties to the more accurate model); with none, the status is the
//     last member's and the accuracy unknown (NaN);
//   - a group request its client gave up on cancels its members that have not answered.
// A group with an ensemble dispatcher (SimGroup::dispatch, engine/control/ensemble_dispatch.h)
// queues its requests on each server instead, in a GroupController per server
// (engine/control/group_controller.h, the engine's too): it releases the oldest b of them to
// a subset of members at once (each selected member gets the b member requests together, so
// that its batching policy can run them as one batch), when a group request arrives, when a
// member answers, and when it asked to be woken; this class carries its releases out.
// Owned by the cluster; the front ends call fan_out. A part of one run; one thread.
#pragma once

#include <cstdint>
#include <span>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/control/ensemble.h"
#include "engine/control/ensemble_dispatch.h"
#include "engine/control/group_controller.h"
#include "simulator/run_context.h"

namespace servelab::sim {

class OutcomeSink;
class Server;

// The combined answer of a group request, for its record.
struct GroupAnswer {
  Time finish = 0;       // when the client has the last member's answer
  Time dispatch = 0, start = 0;
  uint32_t batch_size = 0;
  bool waited_for_load = false;
  RequestStatus status = RequestStatus::Failed;
  MemberMask voters = 0;
  double accuracy = 0;   // NaN without voters
};

class GroupRequests {
 public:
  // Makes each group's subset policy; throws ConfigError for a bad one. A group request that
  // leaves its group's queue unsent (timed out, or dropped at its deadline: the engine's
  // request_timeout and drop_late) is answered through `expired`, as its server's outcome.
  GroupRequests(RunContext& ctx, OutcomeSink& expired);
  ~GroupRequests();

  // Group request `id` reaches `server`'s controller at `now`: the members the policy picks
  // (from that server's queue lengths) arrive there; with a dispatcher, it joins the group's
  // queue on that server.
  void fan_out(RequestId id, Server& server, Time now);
  // Member `model` of some groups answered on `server`: their dispatchers may release more.
  void member_answered(Server& server, ModelId model, Time now);
  // A member request's outcome, its answer reaching the client at `answered`. The group
  // request's answer once that was the last selected member; nothing before (or for a member
  // unknown or answered twice: a contract violation).
  std::optional<GroupAnswer> on_member(const RequestOutcome& o, Time answered);
  // Group request `id`'s client is gone: it leaves its group's queue (Unsent: no answer will
  // come), or `server` cancels its members still held (their answers complete it).
  enum class Cancelled { Unsent, Members, Nothing };
  Cancelled cancel(RequestId id, Server& server, Time now);

  size_t in_flight() const { return pending_.size(); }
  size_t queued() const { return queued_; }  // in group queues, every server

  // Event: a dispatcher asked to be woken (`queue`: index into queues_).
  void on_wake(uint32_t queue, Time now);

 private:
  struct Pending {
    MemberMask selected = 0, answered = 0, voted = 0;
    GroupAnswer last;  // the latest answer so far
    RequestId batch = kNoBatch;  // released by a dispatcher: its batch's first request
    uint32_t queue = 0;          // ... from queues_[queue]
    Time deadline = kNever;
  };
  static constexpr RequestId kNoBatch = ~RequestId(0);
  class MembersIdle;
  MemberMask select(const SimGroup& g, const Server& server);
  void make_dispatchers();
  size_t queue_index(const Server& server, const SimGroup& g) const;
  void queue_up(RequestId id, ModelId group, Server& server, Time now);
  void dispatch(uint32_t index, Server& server, Time now);
  void carry_out(uint32_t index, const SimGroup& g, const GroupRelease& release, Server& server,
                 Time now);
  void answer_expired(GroupController& q, Server& server, Time now);

  RunContext& ctx_;
  OutcomeSink& expired_;
  std::vector<Server*> servers_;  // by index, as they fan out
  // [server * groups + group]: a group's queue on a server; null for a group without a
  // dispatcher.
  std::vector<std::unique_ptr<GroupController>> queues_;
  size_t queued_ = 0;
  std::vector<std::unique_ptr<SubsetPolicy>> policies_;  // per group
  std::vector<MemberView> views_;                        // scratch
  std::unordered_map<RequestId, Pending> pending_;       // by group request id
};

}  // namespace servelab::sim
