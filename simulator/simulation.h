// The simulation facade: a virtual clock plus an event list. Parts of a simulated system
// (clients, front ends, servers, the cluster) see only now() and schedule(), as in ns-3's
// Simulator, but there is no process-wide instance: each Simulation is a value, so several can
// coexist in one process.
//
// Events are typed: an event is a call of one of a part's member functions with one small
// trivially-copyable argument, `void Part::on_x(Arg arg, Time now)`:
//   sim.schedule<&Server::on_batch_done>(at, this, WorkerId{2});
// The argument travels in the event by value (at most 8 bytes); nothing is allocated.
// Not thread-safe: one thread runs a simulation; different simulations are independent.
// The event list is the caller's choice: simulate() passes the one SimulationSetup::event_list
// names (default "radix", the radix heap); without one, the four-ary heap (event_list.h).
#pragma once

#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "simulator/event_list.h"

namespace servelab::sim {

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

namespace detail {

template <class M>
struct EventMethod;
template <class P, class A>
struct EventMethod<void (P::*)(A, Time)> {
  using Part = P;
  using Arg = A;
};

template <class A>
uint64_t pack_arg(const A& a) {
  static_assert(std::is_trivially_copyable_v<A> && sizeof(A) <= sizeof(uint64_t),
                "an event's argument is a trivially copyable value of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &a, sizeof(A));
  return bits;
}

template <class A>
A unpack_arg(uint64_t bits) {
  A a;
  std::memcpy(&a, &bits, sizeof(A));
  return a;
}

template <auto Method>
void invoke(void* target, uint64_t arg, Time now) {
  using M = EventMethod<decltype(Method)>;
  (static_cast<typename M::Part*>(target)->*Method)(unpack_arg<typename M::Arg>(arg), now);
}

}  // namespace detail

class Simulation {
 public:
  // Owns `list`; without one, the four-ary heap (runs built by simulate() pass the radix heap
  // by default, see SimulationSetup::event_list).
  explicit Simulation(std::unique_ptr<EventList> list = std::make_unique<QuadHeapEventList>())
      : list_(std::move(list)), radix_(dynamic_cast<RadixHeapEventList*>(list_.get())) {}

  Time now() const { return clock_.now(); }

  // Calls (part->*Method)(arg, at) at virtual time `at` (>= now; earlier times are clamped to
  // now). Events at equal times run in the order they were scheduled. Cost: one insert.
  template <auto Method, class Part, class Arg>
  void schedule(Time at, Part* part, const Arg& arg) {
    using M = detail::EventMethod<decltype(Method)>;
    static_assert(std::is_base_of_v<typename M::Part, Part>, "Method is not a member of part");
    const Time time = at < now() ? now() : at;
    void* const target = static_cast<typename M::Part*>(part);
    const uint64_t bits = detail::pack_arg(typename M::Arg(arg));
    if (radix_) {  // the default list, called without virtual dispatch
      radix_->push(time, &detail::invoke<Method>, target, bits);
    } else {
      list_->insert(Event{time, next_seq_++, &detail::invoke<Method>, target, bits});
    }
  }
  template <auto Method, class Part, class Arg>
  void schedule_in(Time delay, Part* part, const Arg& arg) {
    schedule<Method>(now() + delay, part, arg);
  }

  // Runs the earliest event; false when none is pending.
  bool run_one() { return run_next(kNever); }
  // Runs events until none is pending, stop() is called, or the next event is after `until`.
  void run(Time until = kNever) {
    stopped_ = false;
    while (!stopped_ && run_next(until)) {
    }
  }
  void stop() { stopped_ = true; }  // from inside an event: run() returns after it

  size_t pending() const { return list_->size(); }
  uint64_t events_processed() const { return events_; }

 private:
  // Runs the earliest event if it is at or before `until`.
  bool run_next(Time until) {
    Event e;
    if (!(radix_ ? radix_->pop_until(until, e) : list_->pop_until(until, e))) return false;
    clock_.advance_to(e.time);
    ++events_;
    e.fn(e.target, e.arg, e.time);
    return true;
  }

  std::unique_ptr<EventList> list_;
  RadixHeapEventList* radix_;  // list_ when it is the radix heap
  VirtualClock clock_;
  uint64_t next_seq_ = 0;
  uint64_t events_ = 0;
  bool stopped_ = false;
};

}  // namespace servelab::sim
