#include "simulator/event_list.h"

#include <bit>
#include <cassert>
#include <cstring>
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

int RadixHeapEventList::bucket_of(const Entry& e) const {
  if (uint64_t d = e.time_bits ^ last_time_) return 129 - std::countl_zero(d);  // 65..128
  if (uint64_t d = e.seq ^ last_seq_) return 65 - std::countl_zero(d);          // 1..64
  return 0;
}

void RadixHeapEventList::put(const Entry& e) const {
  const int b = bucket_of(e);
  const uint64_t bit = uint64_t(1) << (b & 63);
  Key& least = least_[b];
  if (!(nonempty_[b >> 6] & bit) || e.time_bits < least.time_bits ||
      (e.time_bits == least.time_bits && e.seq < least.seq))
    least = {e.time_bits, e.seq};
  buckets_[b].push_back(e);
  nonempty_[b >> 6] |= bit;
}

void RadixHeapEventList::insert(const Event& e) {
  double t = e.time + 0.0;  // -0.0 becomes +0.0, whose bits order with positive times
  uint64_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  assert(t >= 0 && (bits > last_time_ || (bits == last_time_ && e.seq > last_seq_)) &&
         "radix event list: insert before the last event popped");
  put(Entry{bits, e.seq, e.fn, e.target, e.arg});
  ++size_;
}

void RadixHeapEventList::refill() const {
  if (nonempty_[0] & 1) return;
  int b = nonempty_[0] ? std::countr_zero(nonempty_[0])
          : nonempty_[1] ? 64 + std::countr_zero(nonempty_[1])
                         : 128 + std::countr_zero(nonempty_[2]);
  std::vector<Entry>& from = buckets_[b];
  last_time_ = least_[b].time_bits;
  last_seq_ = least_[b].seq;
  nonempty_[b >> 6] &= ~(uint64_t(1) << (b & 63));
  std::vector<Entry> moving;
  moving.swap(from);
  for (const Entry& e : moving) put(e);
  moving.clear();
  if (from.empty()) from.swap(moving);  // keep the bucket's capacity for next time
}

Time RadixHeapEventList::top_time() const {
  refill();
  double t;
  std::memcpy(&t, &buckets_[0].back().time_bits, sizeof t);
  return t;
}

bool RadixHeapEventList::pop_until(Time until, Event& out) {
  if (size_ == 0 || top_time() > until) return false;  // top_time() refills bucket 0
  out = pop();
  return true;
}

Event RadixHeapEventList::pop() {
  refill();
  std::vector<Entry>& zero = buckets_[0];
  Entry e = zero.back();
  zero.pop_back();
  if (zero.empty()) nonempty_[0] &= ~uint64_t(1);
  --size_;
  double t;
  std::memcpy(&t, &e.time_bits, sizeof t);
  return Event{t, e.seq, e.fn, e.target, e.arg};
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
  static const std::vector<std::string> names{"radix", "quad", "heap", "set"};
  return names;
}

std::unique_ptr<EventList> make_event_list(const std::string& name) {
  if (name == "radix") return std::make_unique<RadixHeapEventList>();
  if (name == "quad") return std::make_unique<QuadHeapEventList>();
  if (name == "heap") return std::make_unique<BinaryHeapEventList>();
  if (name == "set") return std::make_unique<OrderedSetEventList>();
  throw std::invalid_argument("unknown event list '" + name + "' (known: radix, quad, heap, set)");
}

}  // namespace servelab::sim
