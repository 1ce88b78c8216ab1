#include "simulator/event_list.h"

#include <stdexcept>

namespace servelab::sim {

void BinaryHeapEventList::insert(const Event& e) {
  heap_.push_back(e);
  size_t i = heap_.size() - 1;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!earlier(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

Event BinaryHeapEventList::pop() {
  Event out = heap_.front();
  Event last = heap_.back();
  heap_.pop_back();
  size_t n = heap_.size();
  if (n == 0) return out;
  size_t i = 0;
  while (true) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && earlier(heap_[child + 1], heap_[child])) ++child;
    if (!earlier(heap_[child], last)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = last;
  return out;
}

Event OrderedSetEventList::pop() {
  Event out = *set_.begin();
  set_.erase(set_.begin());
  return out;
}

std::unique_ptr<EventList> make_event_list(const std::string& name) {
  if (name == "heap") return std::make_unique<BinaryHeapEventList>();
  if (name == "set") return std::make_unique<OrderedSetEventList>();
  throw std::invalid_argument("unknown event list '" + name + "' (known: heap, set)");
}

}  // namespace servelab::sim
