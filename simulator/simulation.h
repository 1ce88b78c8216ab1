// The simulation facade: a virtual clock plus an event list. Model code (simulated workers,
// loader, clients) sees only now() and schedule(), as in ns-3's Simulator, but there is no
// process-wide instance: each Simulation is a value, so several can coexist in one process.
// Not thread-safe: one thread runs a simulation; different simulations are independent.
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>

#include "simulator/event_list.h"

namespace servelab::sim {

// Something that reacts to its own events. Called from Simulation::run_one() with the clock
// already at `now`; may schedule further events.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(uint64_t tag, Time now) = 0;
};

// Virtual time: starts at 0, only moves forward.
class VirtualClock {
 public:
  Time now() const { return now_; }
  void advance_to(Time t) {
    assert(t >= now_);
    now_ = t;
  }

 private:
  Time now_ = 0;
};

class Simulation {
 public:
  // Owns `list`; the default is the binary heap.
  explicit Simulation(std::unique_ptr<EventList> list = std::make_unique<BinaryHeapEventList>())
      : list_(std::move(list)) {}

  Time now() const { return clock_.now(); }

  // Calls handler->on_event(tag, at) at virtual time `at` (>= now; earlier times are clamped
  // to now). Events at equal times run in the order they were scheduled. Cost: one insert.
  void schedule(Time at, EventHandler* handler, uint64_t tag) {
    list_->insert(Event{at < now() ? now() : at, next_seq_++, handler, tag});
  }
  void schedule_in(Time delay, EventHandler* handler, uint64_t tag) {
    schedule(now() + delay, handler, tag);
  }

  // Runs the earliest event; false when none is pending.
  bool run_one() {
    if (list_->empty()) return false;
    Event e = list_->pop();
    clock_.advance_to(e.time);
    ++events_;
    e.handler->on_event(e.tag, e.time);
    return true;
  }
  // Runs events until none is pending, stop() is called, or the next event is after `until`.
  void run(Time until = kNever) {
    stopped_ = false;
    while (!stopped_ && !list_->empty() && list_->top().time <= until) run_one();
  }
  void stop() { stopped_ = true; }  // from inside a handler: run() returns after it

  size_t pending() const { return list_->size(); }
  uint64_t events_processed() const { return events_; }

 private:
  std::unique_ptr<EventList> list_;
  VirtualClock clock_;
  uint64_t next_seq_ = 0;
  uint64_t events_ = 0;
  bool stopped_ = false;
};

}  // namespace servelab::sim
