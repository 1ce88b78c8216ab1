// Event lists: the data structure that orders pending events by (time, sequence). Equal times
// come out in insertion order (the sequence number is assigned by the Simulation), so a run
// is deterministic. The list is a separate choice from the Simulation facade (as in ns-3);
// tests run the same cases over every implementation. Not thread-safe: one simulation loop.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/control/types.h"

namespace servelab::sim {

class EventHandler;

// One pending event: at `time`, call handler->on_event(tag, time). The handler is not owned.
struct Event {
  Time time = 0;
  uint64_t seq = 0;  // tie-breaker: lower first
  EventHandler* handler = nullptr;
  uint64_t tag = 0;  // meaning chosen by the handler
};

inline bool earlier(const Event& a, const Event& b) {
  return a.time < b.time || (a.time == b.time && a.seq < b.seq);
}

class EventList {
 public:
  virtual ~EventList() = default;
  virtual void insert(const Event& e) = 0;
  virtual const Event& top() const = 0;  // earliest event; list must not be empty
  virtual Event pop() = 0;               // removes and returns the earliest; not empty
  virtual size_t size() const = 0;
  bool empty() const { return size() == 0; }
};

// Binary min-heap in a contiguous vector (the default). insert: O(log n) (sift up);
// top: O(1); pop: O(log n) (sift down); size: O(1). Memory: 32 bytes per pending event,
// grown geometrically and never shrunk, so a steady run allocates nothing.
class BinaryHeapEventList final : public EventList {
 public:
  void insert(const Event& e) override;
  const Event& top() const override { return heap_.front(); }
  Event pop() override;
  size_t size() const override { return heap_.size(); }
  void reserve(size_t n) { heap_.reserve(n); }

 private:
  std::vector<Event> heap_;
};

// Balanced search tree (std::set). insert: O(log n) plus one node allocation; top: O(1);
// pop: O(1) amortized plus one deallocation. A simple reference implementation that the
// tests compare against the heap; slower by a constant factor.
class OrderedSetEventList final : public EventList {
 public:
  void insert(const Event& e) override { set_.insert(e); }
  const Event& top() const override { return *set_.begin(); }
  Event pop() override;
  size_t size() const override { return set_.size(); }

 private:
  struct Less {
    bool operator()(const Event& a, const Event& b) const { return earlier(a, b); }
  };
  std::set<Event, Less> set_;
};

// "heap" | "set"; throws std::invalid_argument naming the known lists otherwise.
std::unique_ptr<EventList> make_event_list(const std::string& name);

}  // namespace servelab::sim
