#include "simulator/event_list.h"

#include <stdexcept>

namespace servelab::sim {

void QuadHeapEventList::insert(const Event& e) {
  uint32_t slot;
  if (free_.empty()) {
    slot = uint32_t(slots_.size());
    slots_.push_back({e.fn, e.target, e.arg});
  } else {
    slot = free_.back();
    free_.pop_back();
    slots_[slot] = {e.fn, e.target, e.arg};
  }
  Key k{e.time, e.seq, slot};
  keys_.push_back(k);
  size_t i = keys_.size() - 1;
  while (i > 0) {
    size_t parent = (i - 1) / 4;
    if (!before(k, keys_[parent])) break;
    keys_[i] = keys_[parent];
    i = parent;
  }
  keys_[i] = k;
}

Event QuadHeapEventList::pop() {
  const Key top = keys_.front();
  const Payload& p = slots_[top.slot];
  Event out{top.time, top.seq, p.fn, p.target, p.arg};
  free_.push_back(top.slot);
  const Key last = keys_.back();
  keys_.pop_back();
  const size_t n = keys_.size();
  if (n == 0) return out;
  size_t i = 0;
  while (true) {
    size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    size_t end = first + 4 < n ? first + 4 : n;
    for (size_t c = first + 1; c < end; ++c)
      if (before(keys_[c], keys_[best])) best = c;
    if (!before(keys_[best], last)) break;
    keys_[i] = keys_[best];
    i = best;
  }
  keys_[i] = last;
  return out;
}

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

const std::vector<std::string>& event_list_names() {
  static const std::vector<std::string> names{"quad", "heap", "set"};
  return names;
}

std::unique_ptr<EventList> make_event_list(const std::string& name) {
  if (name == "quad") return std::make_unique<QuadHeapEventList>();
  if (name == "heap") return std::make_unique<BinaryHeapEventList>();
  if (name == "set") return std::make_unique<OrderedSetEventList>();
  throw std::invalid_argument("unknown event list '" + name + "' (known: quad, heap, set)");
}

}  // namespace servelab::sim
