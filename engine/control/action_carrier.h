// How the controller's actions are carried out, shared by the engine and the simulator so
// that both follow one order and one set of checks:
//   - evictions, then loads, then dispatches, then completions: space is freed before a load
//     reuses it (the engine's loader runs its jobs in the order posted; a simulated eviction
//     is done at once);
//   - every action is checked against the controller's contract (contract_monitor.h) as it
//     is carried out;
//   - actions that carrying them out produces (a simulated eviction's on_evict_done, a
//     completion callback that cancels a request) land in out() and are carried out in turn,
//     until none is left.
// What an action does is the carrier's: the engine posts jobs to its loader and worker
// threads, a simulated server schedules events. `Carrier` provides
//   void evict(const EvictAction&);  void load(const LoadAction&);
//   void dispatch(Batch&, bool contract_ok);  // contract_ok false: the monitor refused it;
//                                             // a batch's request list left in it is reused
//   void complete(const RequestOutcome&);
// A template, not an interface: the simulator calls it once per event.
// Runs on the one thread that owns the controller.
#pragma once

#include <utility>

#include "engine/control/contract_monitor.h"
#include "engine/control/controller.h"

namespace servelab {

namespace detail {

// Carries out one round of actions, `todo`, in the order above; the carrier may refill `out`.
template <class Carrier>
void carry_out_round(ActionBuffer& todo, ActionBuffer& out, ContractMonitor& contract,
                     Carrier& carrier) {
  for (const EvictAction& e : todo.evicts) {
    contract.on_evict(e);
    carrier.evict(e);
  }
  for (const LoadAction& l : todo.loads) {
    contract.on_load(l);
    carrier.load(l);
  }
  for (Batch& b : todo.dispatches) {
    carrier.dispatch(b, contract.on_dispatch(b));
    // A list the carrier left (the simulator's) goes back to the controller.
    if (b.requests.capacity() > 0 && out.request_lists.size() < 64)
      out.request_lists.push_back(std::move(b.requests));
  }
  for (const RequestOutcome& o : todo.completions) carrier.complete(o);
  todo.clear();
}

}  // namespace detail

// The controller's actions of one owner (a simulated server, the engine): out() is the buffer
// the controller writes into, carry_out() carries its actions out. A round carries out one
// buffer while the carrier's callbacks write into the other, which is out() meanwhile: the
// two swap roles every round, so no list moves (they keep their capacity, and the request
// lists carried-out batches leave for the controller to reuse).
// A callback that carries out actions itself (nested: the engine's completion callback that
// cancels a request) takes out()'s actions into a buffer of its own, round by round, until
// out() stays empty; the outer round then goes on. After a carrier threw, every later call
// takes that path and the interrupted round's actions are dropped.
// Not thread-safe: the controller's owner calls it (the engine: under its control lock).
class ActionBuffers {
 public:
  ActionBuffer& out() { return *out_; }
  bool empty() const { return buffers_[0].empty() && buffers_[1].empty(); }

  template <class Carrier>
  void carry_out(ContractMonitor& contract, Carrier& carrier) {
    if (carrying_) [[unlikely]] {
      while (!out_->empty()) {
        ActionBuffer todo;
        todo.take_actions(*out_);
        detail::carry_out_round(todo, *out_, contract, carrier);
      }
      return;
    }
    carrying_ = true;
    while (!out_->empty()) {
      ActionBuffer& todo = *out_;
      out_ = &todo == &buffers_[0] ? &buffers_[1] : &buffers_[0];
      detail::carry_out_round(todo, *out_, contract, carrier);
    }
    carrying_ = false;
  }

 private:
  ActionBuffer buffers_[2];
  ActionBuffer* out_ = &buffers_[0];
  bool carrying_ = false;  // a round is under way
};

}  // namespace servelab
