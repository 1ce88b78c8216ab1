// A tiny deterministic event loop for driving a Controller in tests: constant batch cost,
// constant load cost, evicts done at once. Records every action with its time.
#pragma once

#include <functional>
#include <queue>
#include <tuple>
#include <vector>

#include "engine/control/controller.h"

namespace servelab::test {

struct TimedBatch {
  Time at;
  Batch batch;
};
struct TimedLoad {
  Time at;
  LoadAction load;
};
struct TimedEvict {
  Time at;
  EvictAction evict;
};

class MiniSim {
 public:
  explicit MiniSim(Controller& c, Time batch_cost = 1.0, Time load_cost = 10.0)
      : c_(c), batch_cost_(batch_cost), load_cost_(load_cost) {}

  // Per-batch cost; default constant.
  std::function<Time(const Batch&)> batch_cost;
  // Called after every controller event with the actions it produced.
  std::function<void(Time, const ActionBuffer&)> observe;
  // Called just before the controller is told that a load or a batch has finished.
  std::function<void(Time, const LoadAction&)> before_load_done;
  std::function<void(Time, BatchId)> before_batch_done;

  void arrive(Time at, RequestId id, ModelId model, Time deadline = kNever) {
    push(at, kArrival, Request{id, model, at, deadline});
  }

  // Runs events up to and including `until`.
  void run(Time until = kNever, size_t max_steps = 10'000'000) {
    for (size_t step = 0; step < max_steps; ++step) {
      Time wake = c_.next_wakeup();
      Time ev = q_.empty() ? kNever : std::get<0>(q_.top().key);
      if (wake == kNever && ev == kNever) return;
      if (std::min(wake, ev) > until) return;
      buf_.clear();
      if (wake < ev) {
        now_ = std::max(now_, wake);
        c_.on_timer(now_, buf_);
      } else {
        Ev e = q_.top();
        q_.pop();
        now_ = ev;
        switch (e.kind) {
          case kLoadDone:
            if (before_load_done) before_load_done(now_, LoadAction{e.model, Tier(int(e.tier) - 1), e.tier});
            c_.on_load_done(e.model, e.tier, true, now_, buf_);
            break;
          case kBatchDone:
            if (before_batch_done) before_batch_done(now_, e.batch);
            c_.on_batch_done(e.batch, true, now_, buf_);
            break;
          case kArrival: c_.on_arrival(e.request, now_, buf_); break;
        }
      }
      handle();
    }
  }

  Time now() const { return now_; }
  std::vector<RequestOutcome> outcomes;
  std::vector<TimedBatch> batches;
  std::vector<TimedLoad> loads;
  std::vector<TimedEvict> evicts;

 private:
  enum Kind { kLoadDone = 0, kBatchDone = 1, kArrival = 2 };
  struct Ev {
    std::tuple<Time, int, uint64_t> key;
    int kind = 0;
    Request request{};
    BatchId batch = 0;
    ModelId model = 0;
    Tier tier = Tier::Host;
    bool operator>(const Ev& o) const { return key > o.key; }
  };

  void push(Time at, Kind k, Request r = {}, BatchId b = 0, ModelId m = 0, Tier t = Tier::Host) {
    Ev e;
    e.key = {at, int(k), seq_++};
    e.kind = k;
    e.request = r;
    e.batch = b;
    e.model = m;
    e.tier = t;
    q_.push(e);
  }

  void handle() {
    if (observe) observe(now_, buf_);
    for (const EvictAction& e : buf_.evicts) evicts.push_back({now_, e});
    for (const LoadAction& l : buf_.loads) {
      loads.push_back({now_, l});
      push(now_ + load_cost_, kLoadDone, {}, 0, l.model, l.to);
    }
    for (const Batch& b : buf_.dispatches) {
      batches.push_back({now_, b});
      Time cost = batch_cost ? batch_cost(b) : batch_cost_;
      push(now_ + cost, kBatchDone, {}, b.id);
    }
    for (const RequestOutcome& o : buf_.completions) outcomes.push_back(o);
    // Evicts are carried out at once.
    std::vector<EvictAction> ev = buf_.evicts;
    for (const EvictAction& e : ev) {
      buf_.clear();
      c_.on_evict_done(e.model, e.tier, now_, buf_);
      if (!buf_.empty()) handle();
    }
  }

  Controller& c_;
  Time batch_cost_, load_cost_;
  Time now_ = 0;
  uint64_t seq_ = 0;
  ActionBuffer buf_;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> q_;
};

}  // namespace servelab::test
