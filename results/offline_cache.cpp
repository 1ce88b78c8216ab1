#include "results/offline_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace servelab {
namespace {

// Per access i, the position of the next access to its model after i (n: none); per model,
// its first access (n: none). Model ids index the arrays.
struct NextUses {
  std::vector<uint64_t> next;
  std::vector<uint64_t> first;
};

NextUses next_uses(std::span<const uint32_t> sequence, size_t ids) {
  const uint64_t n = sequence.size();
  NextUses u{std::vector<uint64_t>(n), std::vector<uint64_t>(ids, n)};
  for (uint64_t i = n; i-- > 0;) {
    const uint32_t m = sequence[i];
    u.next[i] = u.first[m];
    u.first[m] = i;
  }
  return u;
}

// The models held, by their next use: a max-heap of (next use, model) whose entries go
// stale when a model's next use moves on or it leaves (skipped when popped, filtered out when
// they outnumber the live ones).
class FurthestFirst {
 public:
  explicit FurthestFirst(size_t ids) : key_(ids, kOut) {}

  bool holds(uint32_t m) const { return key_[m] != kOut; }
  size_t count() const { return count_; }
  void hold(uint32_t m, uint64_t next_use) {
    ++count_;
    set(m, next_use);
  }
  void touch(uint32_t m, uint64_t next_use) { set(m, next_use); }
  // Removes and returns the held model used furthest ahead (ties: the higher id).
  uint32_t evict() {
    for (;;) {
      std::pop_heap(heap_.begin(), heap_.end());
      const auto [next_use, m] = heap_.back();
      heap_.pop_back();
      if (key_[m] != next_use) continue;  // stale
      key_[m] = kOut;
      --count_;
      return m;
    }
  }

 private:
  static constexpr uint64_t kOut = UINT64_MAX;

  void set(uint32_t m, uint64_t next_use) {
    key_[m] = next_use;
    heap_.emplace_back(next_use, m);
    std::push_heap(heap_.begin(), heap_.end());
    if (heap_.size() > 2 * count_ + 64) drop_stale();
  }
  void drop_stale() {
    std::erase_if(heap_, [&](const auto& e) { return key_[e.second] != e.first; });
    std::make_heap(heap_.begin(), heap_.end());
  }

  std::vector<uint64_t> key_;  // per model: its next use while held, else kOut
  std::vector<std::pair<uint64_t, uint32_t>> heap_;
  size_t count_ = 0;
};

// Misses of MIN over `sequence`, starting with `initial` held, where a model may enter once
// `fits(used bytes, models held, its size)` after evictions of the furthest next use.
template <class Size, class Fits>
uint64_t furthest_next_use(std::span<const uint32_t> sequence, const NextUses& uses,
                           std::span<const uint32_t> initial, Size size, Fits fits) {
  FurthestFirst cache(uses.first.size());
  uint64_t used = 0, misses = 0;
  auto make_room = [&](uint64_t add) {
    while (!fits(used, cache.count(), add)) {
      if (cache.count() == 0) throw std::logic_error("offline optimum: a model fits no room");
      used -= size(cache.evict());
    }
  };
  for (uint32_t m : initial) {
    make_room(size(m));
    cache.hold(m, uses.first[m]);
    used += size(m);
  }
  for (uint64_t i = 0; i < sequence.size(); ++i) {
    const uint32_t m = sequence[i];
    if (cache.holds(m)) {
      cache.touch(m, uses.next[i]);
      continue;
    }
    ++misses;
    make_room(size(m));
    cache.hold(m, uses.next[i]);
    used += size(m);
  }
  return misses;
}

size_t id_count(std::span<const uint32_t> a, std::span<const uint32_t> b) {
  uint32_t top = 0;
  for (uint32_t m : a) top = std::max(top, m + 1);
  for (uint32_t m : b) top = std::max(top, m + 1);
  return top;
}

// The sizes of the distinct models accessed or held at the start (ids: one past the largest),
// checked: each has a size and each accessed one fits alone; the initial ones fit together.
std::vector<uint64_t> present_sizes(std::span<const uint32_t> sequence,
                                    std::span<const uint32_t> initial, size_t ids,
                                    const std::vector<uint64_t>& sizes, CacheRoom room) {
  if (ids > sizes.size())
    throw std::invalid_argument("model " + std::to_string(ids - 1) + " has no size");
  std::vector<bool> seen(ids, false);
  std::vector<uint64_t> present;
  uint64_t initial_bytes = 0;
  for (uint32_t m : initial) {
    if (seen[m]) throw std::invalid_argument("model " + std::to_string(m) + " held twice");
    seen[m] = true;
    present.push_back(sizes[m]);
    initial_bytes += sizes[m];
  }
  if (initial_bytes > room.bytes || initial.size() > room.models)
    throw std::invalid_argument("the models held at the start do not fit the cache");
  for (uint32_t m : sequence) {
    if (seen[m]) continue;
    seen[m] = true;
    if (sizes[m] > room.bytes || room.models == 0)
      throw std::invalid_argument("model " + std::to_string(m) + " (" +
                                  std::to_string(sizes[m]) + " bytes) does not fit in " +
                                  std::to_string(room.bytes) + " bytes");
    present.push_back(sizes[m]);
  }
  return present;
}

}  // namespace

uint64_t belady_misses(std::span<const uint32_t> sequence, size_t slots) {
  if (slots == 0) return sequence.size();
  const NextUses uses = next_uses(sequence, id_count(sequence, {}));
  return furthest_next_use(sequence, uses, {}, [](uint32_t) { return uint64_t{1}; },
                           [slots](uint64_t, size_t held, uint64_t) { return held < slots; });
}

OptimumBounds offline_optimum(std::span<const uint32_t> sequence,
                              const std::vector<uint64_t>& sizes, CacheRoom room,
                              std::span<const uint32_t> initial) {
  const size_t ids = id_count(sequence, initial);
  std::vector<uint64_t> present = present_sizes(sequence, initial, ids, sizes, room);
  // The most models any cache of these sizes can hold at once: the smallest ones first.
  std::sort(present.begin(), present.end());
  size_t most = 0;
  uint64_t sum = 0;
  while (most < present.size() && sum + present[most] <= room.bytes) sum += present[most++];
  most = std::max<size_t>(std::min<size_t>(most, room.models), 1);
  const NextUses uses = next_uses(sequence, ids);
  OptimumBounds b;
  b.lower = furthest_next_use(sequence, uses, initial, [](uint32_t) { return uint64_t{1}; },
                              [most](uint64_t, size_t held, uint64_t) { return held < most; });
  // Equal sizes: the feasible schedule is the same MIN (as many fit as `most` says).
  if (present.empty() || present.front() == present.back()) {
    b.upper = b.lower;
    return b;
  }
  b.upper = furthest_next_use(
      sequence, uses, initial, [&](uint32_t m) { return sizes[m]; },
      [room](uint64_t used, size_t held, uint64_t add) {
        return used + add <= room.bytes && held < room.models;
      });
  return b;
}

void add_cache_optimum(const CacheTrace& trace, const std::vector<uint64_t>& sizes,
                       results::CacheOptimum& sum) {
  const CacheRoom room{trace.room.bytes, trace.room.models};
  const OptimumBounds b = offline_optimum(trace.accesses, sizes, room, trace.initial);
  sum.accesses += trace.accesses.size();
  sum.loads += trace.loads;
  sum.lower += b.lower;
  sum.upper += b.upper;
}

}  // namespace servelab
