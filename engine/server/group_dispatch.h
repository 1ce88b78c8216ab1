// A model group served by an ensemble dispatcher (Rafiki 5.2; engine/control/ensemble_dispatch.h)
// in the HTTP server: the body that carries out its GroupController
// (engine/control/group_controller.h: the queue, the decisions, the wake-ups and the released
// batches, the same controller the simulator's simulator/group_requests.cpp runs). Each
// request's image is prepared for every member when it arrives (Engine::prepare_each). The
// controller is asked when a request arrives, when a member answers and when it asked to be
// woken; each batch it releases goes to every picked member together (Engine::submit_together,
// one controller event, so its batching policy can run them as one batch) with the group
// request's own arrival and deadline. The members that answered vote (group_answer.h); once
// every request of a released batch is answered, the dispatcher hears how many were overdue
// (on_batch_answered: a learning dispatcher's reward).
// A member is idle when nothing of it is queued or running in the engine and none of the
// member requests this group released to it is unanswered (the engine may not have queued
// them yet when the next decision comes).
// Threads: arrive() and close() from any thread; every decision, timer and piece of state
// runs on one strand of the server's group pool. Callbacks hold the object alive; the server
// stops the pool before it destroys the engine.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/control/group_controller.h"
#include "engine/runtime/engine.h"
#include "engine/server/group_definition.h"
#include "engine/server/group_fanout.h"
#include "engine/server/http_message.h"

namespace servelab::server {

// Group requests waiting in one group's queue when neither the engine's queue bound
// (engine.queue_bound) nor anything else limits it; more are answered 503.
constexpr size_t kDefaultGroupQueueLimit = 1024;

class GroupDispatch : public std::enable_shared_from_this<GroupDispatch> {
 public:
  // Makes the group's controller with the dispatcher `dispatch` names (its weights resolved
  // by the caller); throws ConfigError, or the weights file's error. `queue_limit`: at least 1.
  // `expiry`: when a queued request times out or is dropped (the engine's request timeout and
  // late-request rule); it is answered 504 then.
  static std::shared_ptr<GroupDispatch> make(GroupDefinition def, const PolicySpec& dispatch,
                                             runtime::Engine& engine,
                                             boost::asio::thread_pool& pool, size_t queue_limit,
                                             GroupExpiry expiry);
  GroupDispatch(GroupDefinition def, std::unique_ptr<GroupController> controller,
                runtime::Engine& engine, boost::asio::thread_pool& pool, size_t queue_limit);

  // Queues a group request whose image `prepared` holds for every member (all rc 0), arrived
  // now, due `slo` seconds later (none: no deadline); `reply` answers it later. Returns its
  // id (for cancel), or 0 (nothing queued, `reply` not called) when the queue is full.
  RequestId arrive(runtime::Engine::Prepared prepared, std::optional<double> slo, Reply reply);
  // Request `id`'s client is gone: if it is still queued it leaves the queue unsent and is
  // answered 499 (to nobody); once released, its member requests are cancelled in the engine
  // (those still queued leave their queues; a running batch finishes without them).
  void cancel(RequestId id);
  // The group was deleted: its queued requests are answered 404 and nothing more is released.
  void close();
  size_t queued() const { return queued_.load(); }

 private:
  struct Item {
    Request request;
    std::vector<std::shared_ptr<const runtime::Input>> inputs;  // by member
    Reply reply;
  };
  class MembersIdle;

  void dispatch();  // asks the controller until it releases nothing more; arms the wake-up
  void carry_out(const GroupRelease& release);
  void answer_expired();
  void submit_to_member(size_t k, const std::vector<Item>& batch,
                        const std::vector<std::shared_ptr<FanOut>>& fans);
  void member_answered(size_t k);
  void request_answered(RequestId batch, bool overdue);
  void arm_timer(Time at);

  const GroupDefinition def_;  // a copy: answers in flight outlive the group's deletion
  runtime::Engine& engine_;
  boost::asio::strand<boost::asio::thread_pool::executor_type> strand_;
  boost::asio::steady_timer timer_;
  const size_t queue_limit_;
  std::atomic<size_t> queued_{0};
  std::atomic<RequestId> next_id_{1};

  // Strand only.
  std::unique_ptr<GroupController> controller_;  // the queue of requests and the decisions
  std::unordered_map<RequestId, Item> items_;   // the queued requests' inputs and replies
  bool closed_ = false;
  std::vector<uint32_t> outstanding_;           // released member requests unanswered
  // The engine's ids of each released, unanswered group request's member requests.
  std::unordered_map<RequestId, std::vector<RequestId>> released_;
};

}  // namespace servelab::server
