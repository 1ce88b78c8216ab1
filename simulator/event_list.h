// Event lists: the data structure that orders pending events by (time, sequence). Equal times
// come out in insertion order (the sequence number is assigned by the Simulation), so a run
// is deterministic. The list is a separate choice from the Simulation facade (as in ns-3);
// tests run the same cases over every implementation. Not thread-safe: one simulation loop.
// Which list a run uses: `simulation.event_list` (SimulationSetup::event_list), default
// "radix", the radix heap below; "quad", "heap" and "set" pick the others. A Simulation
// constructed without a list (as unit tests do) gets the four-ary heap.
#pragma once

#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/control/types.h"

namespace servelab::sim {

// What an event does when it runs: fn(target, arg, now). Simulation::schedule builds these
// from a part's member function (see simulation.h); the list only stores and orders them.
using EventFn = void (*)(void* target, uint64_t arg, Time now);

// One pending event. The target is not owned.
struct Event {
  Time time = 0;
  // Tie-breaker, lower first. A list whose order keeps insertion order by construction (the
  // radix heap) does not store it: its pops return 0.
  uint64_t seq = 0;
  EventFn fn = nullptr;
  void* target = nullptr;
  uint64_t arg = 0;  // the event's payload, typed by the member function that receives it
};

inline bool earlier(const Event& a, const Event& b) {
  return a.time < b.time || (a.time == b.time && a.seq < b.seq);
}

class EventList {
 public:
  virtual ~EventList() = default;
  virtual void insert(const Event& e) = 0;
  virtual Time top_time() const = 0;     // time of the earliest event; list must not be empty
  virtual Event pop() = 0;               // removes and returns the earliest; not empty
  virtual size_t size() const = 0;
  bool empty() const { return size() == 0; }
  // Removes the earliest event into `out` when there is one at or before `until`: one call
  // per event for the run loop.
  virtual bool pop_until(Time until, Event& out) {
    if (empty() || top_time() > until) return false;
    out = pop();
    return true;
  }
};

// Four-ary min-heap of 24-byte keys (time, sequence, slot) over a slot table that holds the
// rest of each event ("quad"; what a Simulation built without a list uses). insert: O(log4 n)
// key moves; top_time: O(1); pop: O(4 log4 n) comparisons, moving keys only. Memory: 64 bytes
// per pending event, grown geometrically and never shrunk, so a steady run allocates nothing.
class QuadHeapEventList final : public EventList {
 public:
  void insert(const Event& e) override;
  Time top_time() const override { return keys_.front().time; }
  Event pop() override;
  size_t size() const override { return keys_.size(); }

 private:
  struct Key {
    Time time;
    uint64_t seq;
    uint32_t slot;
  };
  struct Payload {
    EventFn fn;
    void* target;
    uint64_t arg;
  };
  static bool before(const Key& a, const Key& b) {
    return a.time < b.time || (a.time == b.time && a.seq < b.seq);
  }
  std::vector<Key> keys_;
  std::vector<Payload> slots_;
  std::vector<uint32_t> free_;  // slots not in use
};

// Radix heap (Ahuja, Mehlhorn, Orlin and Tarjan) over the times' bits, with 8-bit digits
// ("radix", the default of every run built from a config or a SimulationSetup): a monotone
// priority queue, for lists whose inserts are never earlier than the last event popped and
// whose sequence numbers rise with each insert, which the Simulation guarantees (times clamped
// to now, sequence numbers assigned as events are scheduled). Equal times thus leave in
// insertion order, so the sequence is not stored at all (32-byte entries; pops return seq 0):
// every bucket keeps its entries in insertion order, and a spread keeps it.
// An event sits in the bucket of (the highest digit in which its time differs from the last
// popped time, its value of that digit): 8 digits x 256 values. Events at the last time
// itself wait in `equal_`, in order. Bucket order is time order, so when `equal_` is empty a
// pop takes the first non-empty bucket (two bit scans: a summary word over the buckets' bit
// words), makes its least time the last, moves the events at that time to `equal_` and
// spreads the rest into lower buckets. The top's time is read from that bucket's least time,
// moving nothing, so an event scheduled after run(until) stopped in front of a later one
// still goes before it. Each spread divides a bucket about 256 ways, so an event moves about
// log256(pending) times. insert: O(1); pop: amortized O(log256 C) moves.
// Buckets are chains of fixed-size blocks from one free list, so memory follows the number
// pending (40 bytes per event plus at most one part-filled block per non-empty bucket), and
// a steady run neither allocates nor copies a bucket to grow it. The per-bucket tables
// (first and last block, least time) are a fixed 48 KB per list.
// Few pending events (a closed loop with a handful in flight, M/D/1) are the common case of a
// serving simulation, and there the buckets' spreading costs more than it saves: up to 8
// events live in a small sorted array instead, moving into the buckets when a ninth arrives
// and back when the buckets drain to 4. Both keep the same (time, insertion) order.
class RadixHeapEventList final : public EventList {
 public:
  // The small array's paths are inline (Simulation calls them without virtual dispatch, and
  // most serving simulations never leave the array); the buckets' are out of line.
  void insert(const Event& e) override { push(e.time, e.fn, e.target, e.arg); }
  // insert() from the event's parts (no Event built and read back).
  void push(Time time, EventFn fn, void* target, uint64_t arg) {
    const uint64_t bits = bits_of(time);
    if (!in_buckets_ && small_n_ < kSmall) {
      ++size_;
      insert_small(bits, fn, target, arg);
    } else {
      insert_spread(Entry{bits, fn, target, arg});
    }
  }
  Time top_time() const override;
  Event pop() override;
  size_t size() const override { return size_; }
  bool pop_until(Time until, Event& out) override {
    if (in_buckets_) return pop_until_buckets(until, out);
    if (small_n_ == 0 || time_of(small_[0]) > until) return false;
    out = event_of(small_[0]);
    pop_small();
    return true;
  }

 private:
  static constexpr int kDigitBits = 8;
  static constexpr int kDigitValues = 1 << kDigitBits;
  static constexpr int kBuckets = 64 / kDigitBits * kDigitValues;  // 0: never used
  static constexpr int kMaskWords = kBuckets / 64;
  static_assert(kMaskWords <= 64, "one summary word covers every bit word");
  struct Entry {
    uint64_t time_bits;  // of a time >= 0: ordered as the times are
    EventFn fn;
    void* target;
    uint64_t arg;
  };
  static constexpr uint32_t kBlockEntries = 30;
  struct Block {
    Entry entries[kBlockEntries];
    uint32_t count = 0;
    Block* next = nullptr;  // the bucket's next (newer) block, or the free list
  };
  static constexpr uint32_t kSmall = 8;       // the small array's capacity
  static constexpr uint32_t kBackToSmall = 4;  // buckets drained to this many: back to it
  // A time >= 0 as bits that order as the times do (-0.0 becomes +0.0).
  static uint64_t bits_of(Time time) {
    const double t = time + 0.0;
    uint64_t bits;
    std::memcpy(&bits, &t, sizeof bits);
    return bits;
  }
  // Sorted insertion from the back: a new event is usually the latest, and goes after the
  // entries at its time (inserted before it). Stored field by field: an Entry built on the
  // stack and copied whole stalled on store forwarding.
  void insert_small(uint64_t bits, EventFn fn, void* target, uint64_t arg) {
    assert(bits >= last_time_ && "radix event list: insert before the last event popped");
    uint32_t i = small_n_++;
    while (i > 0 && bits < small_[i - 1].time_bits) {
      small_[i] = small_[i - 1];
      --i;
    }
    Entry& e = small_[i];
    e.time_bits = bits;
    e.fn = fn;
    e.target = target;
    e.arg = arg;
  }
  // The first entry leaves the small array (not empty).
  void pop_small() {
    last_time_ = small_[0].time_bits;
    --small_n_;
    --size_;
    for (uint32_t i = 0; i < small_n_; ++i) small_[i] = small_[i + 1];
  }
  void insert_spread(const Entry& e);  // into the buckets (moving the small array there first)
  bool pop_until_buckets(Time until, Event& out);
  void to_buckets();
  void to_small();
  static Time time_of_bits(uint64_t bits) {
    double t;
    std::memcpy(&t, &bits, sizeof t);
    return t;
  }
  static Time time_of(const Entry& e) { return time_of_bits(e.time_bits); }
  static Event event_of(const Entry& e) { return Event{time_of(e), 0, e.fn, e.target, e.arg}; }
  bool equal_empty() const { return equal_head_ == equal_.size(); }
  void push_equal(const Entry& e);
  // An entry later than the last time: into its bucket, after the bucket's entries.
  void put(const Entry& e);
  Block* new_block();
  void free_block(Block* b);
  int first_bucket() const {  // the least non-empty bucket; one must have entries
    const int w = std::countr_zero(summary_);
    return 64 * w + std::countr_zero(nonempty_[w]);
  }
  // With `equal_` empty: bucket b's least time (b = first_bucket()) becomes the last time,
  // its events at that time move to `equal_` and the rest into lower buckets, in order.
  void spread(int b);
  void pop_equal(Event& out);  // the first event at the last time leaves
  Block* first_[kBuckets] = {};  // each bucket's oldest block, heading its chain
  Block* last_block_[kBuckets] = {};  // and its newest, where entries are appended
  Block* free_ = nullptr;
  std::vector<std::unique_ptr<Block>> blocks_;  // owns every block
  // Each non-empty bucket's least time, kept as entries arrive: the top is read from it, and
  // a spread passes over the bucket's entries once.
  uint64_t least_[kBuckets] = {};
  uint64_t nonempty_[kMaskWords] = {};  // bit b: bucket b has entries
  uint64_t summary_ = 0;                // bit w: nonempty_[w] has a bit set
  uint64_t last_time_ = 0;              // the last popped time's bits
  std::vector<Entry> equal_;            // [equal_head_, end): the events at the last time
  size_t equal_head_ = 0;
  size_t size_ = 0;
  bool in_buckets_ = false;  // false: every pending entry is in small_, sorted
  Entry small_[kSmall] = {};
  uint32_t small_n_ = 0;
};

// Binary min-heap of whole events in a contiguous vector. insert: O(log n) (sift up);
// top_time: O(1); pop: O(log n) (sift down). 40 bytes per pending event.
class BinaryHeapEventList final : public EventList {
 public:
  void insert(const Event& e) override;
  Time top_time() const override { return heap_.front().time; }
  Event pop() override;
  size_t size() const override { return heap_.size(); }

 private:
  std::vector<Event> heap_;
};

// Balanced search tree (std::set). insert: O(log n) plus one node allocation; top_time: O(1);
// pop: O(1) amortized plus one deallocation. A simple reference implementation that the
// tests compare against the heaps; slower by a constant factor.
class OrderedSetEventList final : public EventList {
 public:
  void insert(const Event& e) override { set_.insert(e); }
  Time top_time() const override { return set_.begin()->time; }
  Event pop() override;
  size_t size() const override { return set_.size(); }

 private:
  struct Less {
    bool operator()(const Event& a, const Event& b) const { return earlier(a, b); }
  };
  std::set<Event, Less> set_;
};

// "radix" (default) | "quad" | "heap" | "set"; throws std::invalid_argument naming them.
std::unique_ptr<EventList> make_event_list(const std::string& name);
const std::vector<std::string>& event_list_names();

}  // namespace servelab::sim
