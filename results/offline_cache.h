// The offline optimum of a model cache over a known access sequence, to say how far an
// eviction policy was from the best any policy could do on the same sequence. Equal sizes:
// Belady's MIN (evict the model whose next use is furthest away) is exact (Belady, 1966;
// Mattson et al., 1970). Unequal sizes: optimal caching is NP-hard, so the optimum is bounded:
// from below by MIN with as many slots as the smallest models that fit (no cache of the real
// sizes ever holds more models than that), and from above by a feasible schedule, MIN that
// evicts by furthest next use until the missing model fits.
// A cache may start holding models (a run's preloaded ones): the bounds start from them, as
// the policy did. Cost: O(n log k) for n accesses and k models held at once, a binary heap
// over dense per-model arrays (ids index them: keep ids small).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/control/cache_trace.h"
#include "results/records.h"

namespace servelab {

// Misses (loads) of Belady's MIN with `slots` equal-size slots over `sequence` (model ids),
// starting empty. O(n log slots).
uint64_t belady_misses(std::span<const uint32_t> sequence, size_t slots);

struct OptimumBounds {
  uint64_t lower = 0;  // no policy misses fewer
  uint64_t upper = 0;  // a feasible schedule misses this many
  bool exact() const { return lower == upper; }
};

// What the cache may hold at once: bytes, and at most `models` models.
struct CacheRoom {
  uint64_t bytes = UINT64_MAX;
  uint32_t models = UINT32_MAX;
};

// Bounds on the fewest misses of a cache of `room` over `sequence`, model m taking sizes[m]
// bytes, starting with `initial` (distinct models that fit `room` together) held. Every model
// accessed must fit on its own, and every id have a size: std::invalid_argument otherwise.
// Equal sizes give lower == upper (MIN).
OptimumBounds offline_optimum(std::span<const uint32_t> sequence,
                              const std::vector<uint64_t>& sizes, CacheRoom room,
                              std::span<const uint32_t> initial = {});
inline OptimumBounds offline_optimum(std::span<const uint32_t> sequence,
                                     const std::vector<uint64_t>& sizes, uint64_t capacity) {
  return offline_optimum(sequence, sizes, CacheRoom{capacity, UINT32_MAX});
}

// A recorded tier (a simulated server's, the engine's) against its optimum: its accesses and
// loads, and the bounds over its accesses from its initial models in its room, the models
// taking `sizes` (by ModelId). Added into `sum` (a cluster's servers add up).
void add_cache_optimum(const CacheTrace& trace, const std::vector<uint64_t>& sizes,
                       results::CacheOptimum& sum);

}  // namespace servelab
