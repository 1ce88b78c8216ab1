// A group's queue and its ensemble dispatcher on the real engine (group_dispatch.h).
#include "engine/server/group_dispatch.h"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cmath>

namespace servelab::server {

namespace net = boost::asio;

namespace {

MemberMask all_of(size_t n) { return MemberMask((uint64_t(1) << n) - 1); }

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

GroupDispatch::GroupDispatch(GroupDefinition def,
                             std::unique_ptr<EnsembleDispatcher> dispatcher,
                             runtime::Engine& engine, net::thread_pool& pool, size_t queue_limit)
    : def_(std::move(def)),
      dispatcher_(std::move(dispatcher)),
      engine_(engine),
      strand_(net::make_strand(pool.get_executor())),
      timer_(strand_),
      queue_limit_(std::max<size_t>(1, queue_limit)),
      outstanding_(def_.members.size(), 0),
      accuracy_(singleton_accuracy(def_)) {
  for (const std::string& m : def_.members) {
    auto st = engine.model(m);
    costs_.push_back(st ? st->batch_seconds : std::vector<BatchSeconds>{});
  }
}

bool GroupDispatch::arrive(runtime::Engine::Prepared prepared, std::optional<double> slo,
                           Reply reply) {
  if (queued_.fetch_add(1) >= queue_limit_) {
    --queued_;
    return false;
  }
  Item item;
  const Time now = engine_.now();
  item.request = {next_id_.fetch_add(1), 0, now, slo ? now + *slo : kNever};
  item.inputs = std::move(prepared.inputs);
  item.reply = std::move(reply);
  net::post(strand_, [self = shared_from_this(), item = std::move(item)]() mutable {
    if (self->closed_) {
      --self->queued_;
      item.reply(error_response(404, "group '" + self->def_.name + "' was deleted"));
      return;
    }
    self->waiting_.push_back(item.request);
    self->items_.push_back(std::move(item));
    self->dispatch();
  });
  return true;
}

void GroupDispatch::close() {
  net::post(strand_, [self = shared_from_this()] {
    self->closed_ = true;
    self->timer_.cancel();
    for (size_t i = self->head_; i < self->items_.size(); ++i)
      self->items_[i].reply(error_response(404, "group '" + self->def_.name + "' was deleted"));
    self->queued_ -= self->items_.size() - self->head_;
    self->items_.clear();
    self->waiting_.clear();
    self->head_ = 0;
  });
}

void GroupDispatch::dispatch() {
  const MemberMask all = all_of(def_.members.size());
  while (!closed_ && head_ < items_.size()) {
    const Time now = engine_.now();
    const GroupDecision d = decide(now);
    if (d.size == 0) {
      if (d.wait_until > now && d.wait_until < kNever) wake_at(d.wait_until);
      return;
    }
    if ((d.members & all) == 0) return;  // a batch to no member: nothing to run (a bad policy)
    release(d.size, d.members & all);
  }
}

GroupDecision GroupDispatch::decide(Time now) {
  members_.clear();
  for (size_t k = 0; k < def_.members.size(); ++k) {
    bool idle = outstanding_[k] == 0;
    if (idle) {
      auto st = engine_.model(def_.members[k]);
      idle = st && st->queued == 0 && st->ref_count == 0;
    }
    members_.push_back({ModelId(k), idle, &costs_[k]});
  }
  const std::span<const Request> queue(waiting_.data() + head_, waiting_.size() - head_);
  return dispatcher_->decide({queue, members_, &accuracy_}, now);
}

void GroupDispatch::wake_at(Time at) {
  if (at >= wake_at_) return;  // an earlier wake-up is armed; it asks again
  wake_at_ = at;
  const auto delay = std::chrono::duration<double>(std::max(0.0, at - engine_.now()));
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay));
  timer_.async_wait(net::bind_executor(
      strand_, [self = shared_from_this(), at](const boost::system::error_code& ec) {
        if (ec || at != self->wake_at_) return;  // cancelled, or superseded
        self->wake_at_ = kNever;
        self->dispatch();
      }));
}

// The oldest `size` requests leave the queue and go to every member in `mask`.
void GroupDispatch::release(uint32_t size, MemberMask mask) {
  const size_t n = std::min<size_t>(size, items_.size() - head_);
  std::vector<Item> batch(std::make_move_iterator(items_.begin() + head_),
                          std::make_move_iterator(items_.begin() + head_ + n));
  head_ += n;
  queued_ -= n;
  if (head_ * 2 > items_.size()) {  // drop the released front now and then
    items_.erase(items_.begin(), items_.begin() + head_);
    waiting_.erase(waiting_.begin(), waiting_.begin() + head_);
    head_ = 0;
  }
  const RequestId first = batch.front().request.id;
  batches_[first] = {uint32_t(n), uint32_t(n), 0, mask};
  std::vector<std::shared_ptr<FanOut>> fans;
  for (Item& item : batch) {
    auto fan = std::make_shared<FanOut>();
    fan->owner = shared_from_this();
    fan->def = &def_;
    fan->asked = mask;
    fan->reply = std::move(item.reply);
    fan->answers.resize(def_.members.size());
    fan->remaining = size_t(std::popcount(mask));
    const Time deadline = item.request.deadline;
    fan->finished = [self = shared_from_this(), first, deadline] {
      const bool overdue = self->engine_.now() > deadline;
      net::post(self->strand_, [self, first, overdue] { self->request_answered(first, overdue); });
    };
    fans.push_back(std::move(fan));
  }
  for (size_t k = 0; k < def_.members.size(); ++k)
    if (mask >> k & 1) submit_to_member(k, batch, fans);
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
  const int rc = engine_.submit_together(
      model, std::move(inputs), std::move(options), /*top_k=*/1,
      [self = shared_from_this(), fans, k, model](size_t i, runtime::ClassifyResult r) {
        fans[i]->done(k, member_answer(model, r));
        net::post(self->strand_, [self, k] { self->member_answered(k); });
      });
  if (rc == 0) return;
  outstanding_[k] -= uint32_t(batch.size());
  for (const auto& fan : fans) fan->done(k, member_refused(model, rc));
}

void GroupDispatch::member_answered(size_t k) {
  --outstanding_[k];
  dispatch();
}

void GroupDispatch::request_answered(RequestId first, bool overdue) {
  auto it = batches_.find(first);
  if (it == batches_.end()) return;
  OpenBatch& b = it->second;
  if (overdue) ++b.overdue;
  if (--b.open > 0) return;
  const OpenBatch done = b;
  batches_.erase(it);
  dispatcher_->on_batch_answered(first, done.size, done.selected, done.overdue, engine_.now());
}

}  // namespace servelab::server
