// The requests of a simulation still in play: each one's target, state, server and record,
// from the oldest not yet handed to the sink to the newest the clients have pulled. A record
// fills in as its request goes (clients: arrival; front end: queued; cluster: the outcome);
// once final, records leave for the sink in id order, so the sink sees requests.csv's order.
// A request stays while a server may still act on it: one its client gave up on is held until
// the cancellation has reached its server and the server's outcome has come back (hold and
// release). The window's memory follows the requests in play, not the run's length.
// Owned by the run (RunContext); one thread.
#pragma once

#include <cassert>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/control/types.h"
#include "results/records.h"

namespace servelab::sim {

class RecordWindow {
 public:
  // Open until its client has the final answer (Done), or gave up (GivenUp: a server may
  // still hold it until the cancellation arrives).
  enum State : uint8_t { Open = 0, Done = 1, GivenUp = 2 };

  explicit RecordWindow(results::RecordSink& sink) : sink_(sink), slots_(16), mask_(15) {}

  // The next request (id end()) enters, addressed to `target` (a model or group index).
  RequestId open(uint32_t target) {
    if (end_ - base_ == slots_.size()) grow();
    const RequestId id = end_++;
    Slot& s = slots_[id & mask_];
    s.record = {id, target, kNaN, kNaN, kNaN, kNaN, 0, false, RequestStatus::Failed};
    s.final = false;
    s.state = Open;
    s.holds = 0;
    s.server = 0;
    return id;
  }
  RequestId end() const { return end_; }  // requests opened so far
  // `id` is in play: opened, and not yet handed to the sink.
  bool holds(RequestId id) const { return id >= base_ && id < end_; }

  results::RequestRecord& at(RequestId id) { return slot(id).record; }
  uint32_t target(RequestId id) const { return slot(id).record.model; }
  State& state(RequestId id) { return slot(id).state; }
  uint32_t& server(RequestId id) { return slot(id).server; }

  // `id`'s record is final: it leaves, with every final record after it, once all before it
  // have left and nothing holds it.
  void finalize(RequestId id) {
    slot(id).final = true;
    emit_ready();
  }
  void hold(RequestId id) { ++slot(id).holds; }
  bool held(RequestId id) { return slot(id).holds > 0; }
  void release(RequestId id) {
    assert(slot(id).holds > 0);
    --slot(id).holds;
    emit_ready();
  }

  size_t capacity() const { return slots_.size(); }

  // The end of the run: every record leaves, final or not (a request never finished is lost:
  // its status stays failed).
  void flush_all() {
    while (base_ < end_) emit();
  }

 private:
  struct Slot {
    results::RequestRecord record;
    bool final = false;
    State state = Open;
    uint8_t holds = 0;    // what it waits for besides its record (a given-up request's)
    uint32_t server = 0;  // the server it was routed to
  };
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  // Called several times per request: a mask, and a check in debug builds.
  Slot& slot(RequestId id) {
    assert(holds(id));
    return slots_[id & mask_];
  }
  const Slot& slot(RequestId id) const {
    assert(holds(id));
    return slots_[id & mask_];
  }
  void emit_ready() {
    while (base_ < end_) {
      const Slot& s = slots_[base_ & mask_];
      if (!s.final || s.holds > 0) return;
      emit();
    }
  }
  void emit() {
    sink_.add(slots_[base_ & mask_].record);
    ++base_;
  }
  // Doubles the ring, keeping each live id at its slot id mod size.
  void grow() {
    std::vector<Slot> bigger(slots_.size() * 2);
    for (RequestId id = base_; id < end_; ++id)
      bigger[id & (bigger.size() - 1)] = slots_[id & mask_];
    slots_.swap(bigger);
    mask_ = slots_.size() - 1;
  }

  results::RecordSink& sink_;
  std::vector<Slot> slots_;  // a power of two; id lives at id & mask_
  RequestId mask_;           // slots_.size() - 1
  RequestId base_ = 0;       // the oldest record not yet emitted
  RequestId end_ = 0;        // one past the newest opened
};

}  // namespace servelab::sim
