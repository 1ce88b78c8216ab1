#include "results/offline_cache.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace servelab {
namespace {

// next[i]: the position of the next access to sequence[i]'s model after i, else n.
std::vector<size_t> next_uses(std::span<const uint32_t> sequence) {
  const size_t n = sequence.size();
  std::vector<size_t> next(n, n);
  std::unordered_map<uint32_t, size_t> seen;
  for (size_t i = n; i-- > 0;) {
    auto it = seen.find(sequence[i]);
    if (it != seen.end()) next[i] = it->second;
    seen[sequence[i]] = i;
  }
  return next;
}

// MIN over `sequence` where a model may enter once `fits(cached_bytes)` after evictions of the
// furthest next use; `size(m)` is what model m takes.
template <class Size, class Room>
uint64_t furthest_next_use(std::span<const uint32_t> sequence, Size size, Room room) {
  const std::vector<size_t> next = next_uses(sequence);
  std::set<std::pair<size_t, uint32_t>> by_next;  // cached models by their next use
  std::unordered_map<uint32_t, size_t> cached;     // model -> its key's next use
  uint64_t used = 0, misses = 0;
  for (size_t i = 0; i < sequence.size(); ++i) {
    const uint32_t m = sequence[i];
    auto it = cached.find(m);
    if (it != cached.end()) {  // a hit: its next use moves on
      by_next.erase({it->second, m});
      it->second = next[i];
      by_next.insert({next[i], m});
      continue;
    }
    ++misses;
    while (!by_next.empty() && !room(used, size(m))) {
      auto victim = std::prev(by_next.end());
      used -= size(victim->second);
      cached.erase(victim->second);
      by_next.erase(victim);
    }
    cached[m] = next[i];
    by_next.insert({next[i], m});
    used += size(m);
  }
  return misses;
}

}  // namespace

uint64_t belady_misses(std::span<const uint32_t> sequence, size_t slots) {
  if (slots == 0) return sequence.size();
  return furthest_next_use(sequence, [](uint32_t) { return uint64_t{1}; },
                           [slots](uint64_t used, uint64_t add) { return used + add <= slots; });
}

OptimumBounds offline_optimum(std::span<const uint32_t> sequence,
                              const std::vector<uint64_t>& sizes, uint64_t capacity) {
  std::set<uint32_t> models(sequence.begin(), sequence.end());
  std::vector<uint64_t> present;
  for (uint32_t m : models) {
    if (m >= sizes.size())
      throw std::invalid_argument("model " + std::to_string(m) + " has no size");
    if (sizes[m] > capacity)
      throw std::invalid_argument("model " + std::to_string(m) + " (" +
                                  std::to_string(sizes[m]) + " bytes) does not fit in " +
                                  std::to_string(capacity) + " bytes");
    present.push_back(sizes[m]);
  }
  // The most models any cache of these sizes can hold at once: the smallest ones first.
  std::sort(present.begin(), present.end());
  size_t most = 0;
  uint64_t sum = 0;
  while (most < present.size() && sum + present[most] <= capacity) sum += present[most++];
  OptimumBounds b;
  b.lower = belady_misses(sequence, std::max<size_t>(most, 1));
  b.upper = furthest_next_use(sequence, [&](uint32_t m) { return sizes[m]; },
                              [capacity](uint64_t used, uint64_t add) {
                                return used + add <= capacity;
                              });
  return b;
}

}  // namespace servelab
