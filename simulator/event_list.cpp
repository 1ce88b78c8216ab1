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

int RadixHeapEventList::bucket_of(const Entry& e) const {
  // Bucket 256 * digit_position + digit_value; positions 8..15 are the time's bits. A key
  // above the last has a greater digit where they first differ, so bucket 0 (position 0,
  // digit 0) holds only a key equal to the last: (0, 0) inserted before any pop.
  if (uint64_t d = e.time_bits ^ last_time_) {
    const int pos = (63 - std::countl_zero(d)) / kDigitBits;
    return kDigitValues * (kWordDigits + pos) +
           int((e.time_bits >> (kDigitBits * pos)) & (kDigitValues - 1));
  }
  const uint64_t d = e.seq ^ last_seq_;
  if (!d) return 0;
  const int pos = (63 - std::countl_zero(d)) / kDigitBits;
  return kDigitValues * pos + int((e.seq >> (kDigitBits * pos)) & (kDigitValues - 1));
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
  const int b = bucket_of(e);
  const uint64_t bit = uint64_t(1) << (b & 63);
  Key& least = least_[b];
  if (!(nonempty_[b >> 6] & bit) || e.time_bits < least.time_bits ||
      (e.time_bits == least.time_bits && e.seq < least.seq))
    least = {e.time_bits, e.seq};
  Block*& head = buckets_[b];
  if (!head || head->count == kBlockEntries) {
    Block* fresh = new_block();
    fresh->next = head;
    head = fresh;
  }
  head->entries[head->count++] = e;
  nonempty_[b >> 6] |= bit;
  summary_ |= uint64_t(1) << (b >> 6);
}

void RadixHeapEventList::insert(const Event& e) {
  double t = e.time + 0.0;  // -0.0 becomes +0.0, whose bits order with positive times
  uint64_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  assert(t >= 0 && !(bits < last_time_ || (bits == last_time_ && e.seq < last_seq_)) &&
         "radix event list: insert before the last event popped");
  const Entry entry{bits, e.seq, e.fn, e.target, e.arg};
  ++size_;
  if (!in_buckets_) {
    if (small_n_ < kSmall) return insert_small(entry);
    to_buckets();
  }
  put(entry);
}

// Sorted insertion from the back: a new event is usually the latest.
void RadixHeapEventList::insert_small(const Entry& e) {
  uint32_t i = small_n_++;
  while (i > 0 && before(e, small_[i - 1])) {
    small_[i] = small_[i - 1];
    --i;
  }
  small_[i] = e;
}

// Every entry of the small array into the buckets (each is after the last key popped).
void RadixHeapEventList::to_buckets() {
  for (uint32_t i = 0; i < small_n_; ++i) put(small_[i]);
  small_n_ = 0;
  in_buckets_ = true;
}

// The few entries left in the buckets, in order, into the small array.
void RadixHeapEventList::to_small() {
  const uint64_t time = last_time_, seq = last_seq_;
  uint32_t n = 0;
  while (summary_ != 0) take_least(first_bucket(), small_[n++]);
  small_n_ = n;
  in_buckets_ = false;
  last_time_ = time;  // the last key popped, not the last one moved
  last_seq_ = seq;
}

RadixHeapEventList::Entry RadixHeapEventList::pop_small() {
  const Entry e = small_[0];
  std::copy(small_ + 1, small_ + small_n_, small_);
  --small_n_;
  --size_;
  last_time_ = e.time_bits;
  last_seq_ = e.seq;
  return e;
}

void RadixHeapEventList::take_least(int b, Entry& least) {
  last_time_ = least_[b].time_bits;
  last_seq_ = least_[b].seq;
  const int w = b >> 6;
  nonempty_[w] &= ~(uint64_t(1) << (b & 63));
  if (!nonempty_[w]) summary_ &= ~(uint64_t(1) << w);
  Block* chain = buckets_[b];
  buckets_[b] = nullptr;
  while (chain) {  // the rest land in buckets below b
    for (uint32_t i = 0; i < chain->count; ++i) {
      const Entry& e = chain->entries[i];
      if (e.time_bits == last_time_ && e.seq == last_seq_) least = e;
      else put(e);
    }
    Block* next = chain->next;
    free_block(chain);
    chain = next;
  }
}

Time RadixHeapEventList::top_time() const {
  if (!in_buckets_) return time_of(small_[0]);
  return time_of_bits(least_[first_bucket()].time_bits);
}

bool RadixHeapEventList::pop_until(Time until, Event& out) {
  if (size_ == 0) return false;
  if (!in_buckets_) {
    if (time_of(small_[0]) > until) return false;
    out = event_of(pop_small());
    return true;
  }
  const int b = first_bucket();
  if (time_of_bits(least_[b].time_bits) > until) return false;
  pop_bucketed(b, out);
  return true;
}

Event RadixHeapEventList::pop() {
  if (!in_buckets_) return event_of(pop_small());
  Event e;
  pop_bucketed(first_bucket(), e);
  return e;
}

// The least entry (in bucket b) leaves; the buckets hand their last few to the small array.
void RadixHeapEventList::pop_bucketed(int b, Event& out) {
  Entry least;
  take_least(b, least);
  out = event_of(least);
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
