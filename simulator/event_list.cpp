#include "simulator/event_list.h"

#include <algorithm>
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

RadixHeapEventList::Block* RadixHeapEventList::new_block() {
  if (!free_) {
    blocks_.push_back(std::make_unique<Block>());
    return blocks_.back().get();
  }
  Block* b = free_;
  free_ = b->next;
  b->count = 0;
  b->next = nullptr;
  return b;
}

void RadixHeapEventList::free_block(Block* b) {
  b->next = free_;
  free_ = b;
}

void RadixHeapEventList::put(const Entry& e) {
  // Bucket 256 * digit_position + digit_value. The time is above the last, so it has the
  // greater digit where they first differ: bucket 0 (position 0, digit 0) stays unused.
  const uint64_t d = e.time_bits ^ last_time_;
  assert(d != 0 && e.time_bits > last_time_);
  const int pos = (63 - std::countl_zero(d)) / kDigitBits;
  const int b = kDigitValues * pos + int((e.time_bits >> (kDigitBits * pos)) & (kDigitValues - 1));
  const uint64_t bit = uint64_t(1) << (b & 63);
  Block* tail;
  if (!(nonempty_[b >> 6] & bit)) {
    nonempty_[b >> 6] |= bit;
    summary_ |= uint64_t(1) << (b >> 6);
    least_[b] = e.time_bits;
    tail = first_[b] = last_block_[b] = new_block();
  } else {
    least_[b] = std::min(least_[b], e.time_bits);
    tail = last_block_[b];
    if (tail->count == kBlockEntries) tail = last_block_[b] = tail->next = new_block();
  }
  tail->entries[tail->count++] = e;
}

void RadixHeapEventList::insert_spread(const Entry& e) {
  assert(e.time_bits >= last_time_ && "radix event list: insert before the last event popped");
  ++size_;
  if (!in_buckets_) to_buckets();
  if (e.time_bits == last_time_) push_equal(e);
  else put(e);
}

// After the earlier events at the last time. The popped front is dropped now and then, so
// that a long stream of events at one instant keeps memory in the number pending.
void RadixHeapEventList::push_equal(const Entry& e) {
  if (equal_head_ >= 1024 && 2 * equal_head_ >= equal_.size()) {
    equal_.erase(equal_.begin(), equal_.begin() + std::ptrdiff_t(equal_head_));
    equal_head_ = 0;
  }
  equal_.push_back(e);
}

// Every entry of the small array, in order, into `equal_` or the buckets (none is before the
// last time popped).
void RadixHeapEventList::to_buckets() {
  equal_.clear();
  equal_head_ = 0;
  for (uint32_t i = 0; i < small_n_; ++i) {
    if (small_[i].time_bits == last_time_) equal_.push_back(small_[i]);
    else put(small_[i]);
  }
  small_n_ = 0;
  in_buckets_ = true;
}

// The few entries left, in order, into the small array.
void RadixHeapEventList::to_small() {
  const uint64_t time = last_time_;
  uint32_t n = 0;
  while (n < size_) {
    if (equal_empty()) spread(first_bucket());
    small_[n++] = equal_[equal_head_++];
  }
  small_n_ = n;
  in_buckets_ = false;
  last_time_ = time;  // the last time popped, not the last one moved
}

void RadixHeapEventList::spread(int b) {
  last_time_ = least_[b];
  const int w = b >> 6;
  nonempty_[w] &= ~(uint64_t(1) << (b & 63));
  if (!nonempty_[w]) summary_ &= ~(uint64_t(1) << w);
  Block* chain = first_[b];
  equal_.clear();
  equal_head_ = 0;
  while (chain) {  // oldest first, so that equal times keep their order
    for (uint32_t i = 0; i < chain->count; ++i) {
      const Entry& e = chain->entries[i];
      if (e.time_bits == last_time_) equal_.push_back(e);
      else put(e);
    }
    Block* next = chain->next;
    free_block(chain);
    chain = next;
  }
}

Time RadixHeapEventList::top_time() const {
  if (!in_buckets_) return time_of(small_[0]);
  if (!equal_empty()) return time_of_bits(last_time_);
  return time_of_bits(least_[first_bucket()]);
}

bool RadixHeapEventList::pop_until_buckets(Time until, Event& out) {
  if (equal_empty()) {
    const int b = first_bucket();
    if (time_of_bits(least_[b]) > until) return false;
    spread(b);
  } else if (time_of_bits(last_time_) > until) {
    return false;
  }
  pop_equal(out);
  return true;
}

Event RadixHeapEventList::pop() {
  if (!in_buckets_) {
    const Event e = event_of(small_[0]);
    pop_small();
    return e;
  }
  if (equal_empty()) spread(first_bucket());
  Event e;
  pop_equal(e);
  return e;
}

// The buckets hand their last few to the small array.
void RadixHeapEventList::pop_equal(Event& out) {
  out = event_of(equal_[equal_head_++]);
  --size_;
  if (size_ <= kBackToSmall) [[unlikely]] to_small();
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
