// A dispatched group's controller carried out on the real engine (group_dispatch.h).
#include "engine/server/group_dispatch.h"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cmath>

#include "engine/server/server_impl.h"  // request_failure

namespace servelab::server {

namespace net = boost::asio;

namespace {

// The subset accuracy table from the members' own accuracies: singletons only (a larger
// subset's accuracy is measured, not derived; NaN here). Greedy's "most accurate idle member"
// reads singletons; a learning dispatcher's reward is not earned in deployment.
EnsembleAccuracy singleton_accuracy(const GroupDefinition& def) {
  EnsembleAccuracy a;
  a.by_mask.assign(size_t(1) << def.members.size(), std::nan(""));
  for (size_t k = 0; k < def.members.size(); ++k) a.by_mask[size_t(1) << k] = def.accuracy_of(k);
  return a;
}

}  // namespace

// The members' idleness as the dispatcher reads it: nothing of the member queued or running
// in the engine, and nothing this group released to it unanswered.
class GroupDispatch::MembersIdle final : public GroupMembersView {
 public:
  explicit MembersIdle(const GroupDispatch& group) : group_(group) {}
  bool idle(uint32_t k) const override {
    if (group_.outstanding_[k] != 0) return false;
    auto st = group_.engine_.model(group_.def_.members[k]);
    return st && st->queued == 0 && st->ref_count == 0;
  }

 private:
  const GroupDispatch& group_;
};

std::shared_ptr<GroupDispatch> GroupDispatch::make(GroupDefinition def, const PolicySpec& dispatch,
                                                   runtime::Engine& engine, net::thread_pool& pool,
                                                   size_t queue_limit, GroupExpiry expiry) {
  std::vector<std::vector<BatchSeconds>> costs;  // the members' batch-cost priors
  for (const std::string& m : def.members) {
    auto st = engine.model(m);
    costs.push_back(st ? st->batch_seconds : std::vector<BatchSeconds>{});
  }
  auto controller = std::make_unique<GroupController>(
      def.name, def.members, dispatch, std::move(costs), singleton_accuracy(def), expiry);
  return std::make_shared<GroupDispatch>(std::move(def), std::move(controller), engine, pool,
                                         queue_limit);
}

GroupDispatch::GroupDispatch(GroupDefinition def, std::unique_ptr<GroupController> controller,
                             runtime::Engine& engine, net::thread_pool& pool, size_t queue_limit)
    : def_(std::move(def)),
      engine_(engine),
      strand_(net::make_strand(pool.get_executor())),
      timer_(strand_),
      queue_limit_(std::max<size_t>(1, queue_limit)),
      controller_(std::move(controller)),
      outstanding_(def_.members.size(), 0) {}

RequestId GroupDispatch::arrive(runtime::Engine::Prepared prepared, std::optional<double> slo,
                                Reply reply) {
  if (queued_.fetch_add(1) >= queue_limit_) {
    --queued_;
    return 0;
  }
  Item item;
  const Time now = engine_.now();
  const RequestId item_id = next_id_.fetch_add(1);
  item.request = {item_id, 0, now, slo ? now + *slo : kNever};
  item.inputs = std::move(prepared.inputs);
  item.reply = std::move(reply);
  net::post(strand_, [self = shared_from_this(), item = std::move(item)]() mutable {
    if (self->closed_) {
      --self->queued_;
      item.reply(error_response(404, "group '" + self->def_.name + "' was deleted"));
      return;
    }
    self->controller_->arrive(item.request);
    const RequestId id = item.request.id;
    self->items_.emplace(id, std::move(item));
    self->dispatch();
  });
  return item_id;
}

void GroupDispatch::cancel(RequestId id) {
  net::post(strand_, [self = shared_from_this(), id] {
    if (!self->closed_ && self->controller_->cancel(id)) {
      auto it = self->items_.find(id);
      it->second.reply(error_response(499, "the client closed the connection"));
      self->items_.erase(it);
      --self->queued_;
      self->dispatch();  // the head may have changed: decide and re-arm the wake-up
      return;
    }
    // Released already: its member requests go too (their answers come back Cancelled).
    auto released = self->released_.find(id);
    if (released == self->released_.end()) return;
    for (RequestId member_request : released->second) self->engine_.cancel(member_request);
  });
}

void GroupDispatch::close() {
  net::post(strand_, [self = shared_from_this()] {
    self->closed_ = true;
    self->timer_.cancel();
    for (const Request& r : self->controller_->close()) {
      auto it = self->items_.find(r.id);
      it->second.reply(error_response(404, "group '" + self->def_.name + "' was deleted"));
      self->items_.erase(it);
      --self->queued_;
    }
  });
}

void GroupDispatch::dispatch() {
  if (closed_) return;
  const MembersIdle members(*this);
  answer_expired();
  while (auto release = controller_->next_release(members, engine_.now())) carry_out(*release);
  answer_expired();
  if (auto at = controller_->arm_wake(engine_.now())) arm_timer(*at);
}

// Requests whose time is up leave the queue unsent: 504, as a model's queue answers them.
void GroupDispatch::answer_expired() {
  for (const GroupExpired& e : controller_->expire(engine_.now())) {
    auto it = items_.find(e.request.id);
    runtime::ClassifyResult r;
    r.status = e.status;
    it->second.reply(e.status == RequestStatus::Timeout
                         ? error_response(504, "request to group '" + def_.name +
                                                   "' timed out in its queue")
                         : *request_failure(def_.name, r));
    items_.erase(it);
    --queued_;
  }
}

void GroupDispatch::arm_timer(Time at) {
  const auto delay = std::chrono::duration<double>(std::max(0.0, at - engine_.now()));
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay));
  timer_.async_wait(net::bind_executor(
      strand_, [self = shared_from_this(), at](const boost::system::error_code& ec) {
        if (ec || !self->controller_->wake(at)) return;  // cancelled, or superseded
        self->dispatch();
      }));
}

// The released requests go to every member in the release's mask.
void GroupDispatch::carry_out(const GroupRelease& release) {
  std::vector<Item> batch;
  for (const Request& r : release.requests) {
    auto it = items_.find(r.id);
    batch.push_back(std::move(it->second));
    items_.erase(it);
  }
  queued_ -= batch.size();
  const RequestId first = release.batch;
  std::vector<std::shared_ptr<FanOut>> fans;
  for (Item& item : batch) {
    auto fan = std::make_shared<FanOut>();
    fan->owner = shared_from_this();
    fan->def = &def_;
    fan->asked = release.members;
    fan->reply = std::move(item.reply);
    fan->answers.resize(def_.members.size());
    fan->remaining = size_t(std::popcount(release.members));
    const Time deadline = item.request.deadline;
    const RequestId id = item.request.id;
    released_[id];  // its member requests' ids come as they are submitted
    fan->finished = [self = shared_from_this(), first, deadline, id] {
      const bool overdue = self->engine_.now() > deadline;
      net::post(self->strand_, [self, first, overdue, id] {
        self->released_.erase(id);
        self->request_answered(first, overdue);
      });
    };
    fans.push_back(std::move(fan));
  }
  for (size_t k = 0; k < def_.members.size(); ++k)
    if (release.members >> k & 1) submit_to_member(k, batch, fans);
}

void GroupDispatch::submit_to_member(size_t k, const std::vector<Item>& batch,
                                     const std::vector<std::shared_ptr<FanOut>>& fans) {
  std::vector<std::shared_ptr<const runtime::Input>> inputs;
  std::vector<runtime::RequestOptions> options;
  for (const Item& item : batch) {
    inputs.push_back(item.inputs[k]);
    runtime::RequestOptions ro;
    ro.arrival = item.request.arrival;
    if (item.request.deadline < kNever) ro.deadline = item.request.deadline;
    options.push_back(ro);
  }
  outstanding_[k] += uint32_t(batch.size());
  const std::string& model = def_.members[k];
  std::vector<RequestId> ids;
  const int rc = engine_.submit_together(
      model, std::move(inputs), std::move(options), /*top_k=*/1,
      [self = shared_from_this(), fans, k, model](size_t i, runtime::ClassifyResult r) {
        fans[i]->done(k, member_answer(model, r));
        net::post(self->strand_, [self, k] { self->member_answered(k); });
      },
      &ids);
  if (rc == 0) {  // answers are posted to this strand: the ids are recorded before they erase
    for (size_t i = 0; i < batch.size(); ++i) released_[batch[i].request.id].push_back(ids[i]);
    return;
  }
  outstanding_[k] -= uint32_t(batch.size());
  for (const auto& fan : fans) fan->done(k, member_refused(model, rc));
}

void GroupDispatch::member_answered(size_t k) {
  --outstanding_[k];
  dispatch();
}

void GroupDispatch::request_answered(RequestId first, bool overdue) {
  controller_->batch_request_answered(first, overdue, engine_.now());
}

}  // namespace servelab::server
