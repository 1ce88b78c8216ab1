// The records of the requests a simulation has not yet handed to its sink. A request's record
// fills in as it goes (clients: arrival; front end: queued; cluster: the outcome); once final,
// records leave for the sink in id order, so the sink sees requests.csv's order and the window
// holds only the span of ids from the oldest unfinished request to the newest touched one: its
// memory follows how many requests are in flight, not how long the run is.
// Owned by the run (RunContext); one thread.
#pragma once

#include <cassert>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/control/types.h"
#include "results/records.h"
#include "workloads/workload.h"

namespace servelab::sim {

class RecordWindow {
 public:
  RecordWindow(const workloads::Workload& w, results::RecordSink& sink)
      : models_(w.models), sink_(sink), slots_(16), mask_(15) {}

  // The record of `id`, not yet final (ids before the window's start have left).
  results::RequestRecord& at(RequestId id) { return slot(id).record; }

  // `id`'s record is final: it leaves, with every final record after it, once all before it
  // have left.
  void finalize(RequestId id) {
    slot(id).final = true;
    while (base_ < end_ && slots_[base_ & mask_].final) emit();
  }

  size_t capacity() const { return slots_.size(); }

  // The end of the run: every record left, final or not (a request never finished is lost:
  // its status stays failed), and those of requests never sent.
  void flush_all() {
    while (end_ < models_.size()) at(end_);
    while (base_ < end_) emit();
  }

 private:
  struct Slot {
    results::RequestRecord record;
    bool final = false;
  };
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  // Called several times per request: the common case (an id already in the window) is a
  // compare and a mask.
  Slot& slot(RequestId id) {
    assert(id >= base_);
    if (id >= end_) [[unlikely]] extend_to(id);
    return slots_[id & mask_];
  }
  void extend_to(RequestId id) {
    while (id > base_ + mask_) grow();
    while (id >= end_) init(end_++);
  }
  void init(RequestId id) {
    Slot& s = slots_[id & mask_];
    s.record = {id, models_[id], kNaN, kNaN, kNaN, kNaN, 0, false, RequestStatus::Failed};
    s.final = false;
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

  const std::vector<uint32_t>& models_;
  results::RecordSink& sink_;
  std::vector<Slot> slots_;  // a power of two; id lives at id & mask_
  RequestId mask_;           // slots_.size() - 1
  RequestId base_ = 0;       // the oldest record not yet emitted
  RequestId end_ = 0;        // one past the newest initialized
};

}  // namespace servelab::sim
