// How the controller's actions are carried out, shared by the engine and the simulator so
// that both follow one order and one set of checks:
//   - evictions, then loads, then dispatches, then completions: space is freed before a load
//     reuses it (the engine's loader runs its jobs in the order posted; a simulated eviction
//     is done at once);
//   - every action is checked against the controller's contract (contract_monitor.h) as it
//     is carried out;
//   - actions that carrying them out produces (a simulated eviction's on_evict_done, a
//     completion callback that cancels a request) land in `out` and are carried out in turn,
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

// Carries out `out` until it stays empty. `spare` is an empty buffer kept for its capacity.
template <class Carrier>
void carry_out_actions(ActionBuffer& out, ActionBuffer& spare, ContractMonitor& contract,
                       Carrier& carrier) {
  if (!spare.empty()) [[unlikely]] {
    // Nested (a carrier's callback carried out actions of this buffer): the outer call is
    // still going through `spare` (and will be until this call returns), so each round takes
    // out's actions into a list of its own.
    while (!out.empty()) {
      ActionBuffer todo;
      todo.take_actions(out);
      detail::carry_out_round(todo, out, contract, carrier);
    }
    return;
  }
  // The common case, once per simulated event: `spare` takes out's actions and leaves out its
  // empty lists (their capacity), so the carrier may refill `out` meanwhile; each round empties
  // `spare` again. Swaps only; the recycled request lists stay with `out`.
  while (!out.empty()) {
    spare.take_actions(out);
    detail::carry_out_round(spare, out, contract, carrier);
  }
}

}  // namespace servelab
