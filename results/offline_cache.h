// The offline optimum of a model cache over a known access sequence, to say how far an
// eviction policy was from the best any policy could do on the same sequence. Equal sizes:
// Belady's MIN (evict the model whose next use is furthest away) is exact (Belady, 1966;
// Mattson et al., 1970). Unequal sizes: optimal caching is NP-hard, so the optimum is bounded:
// from below by MIN with as many slots as the smallest models that fit (no cache of the real
// sizes ever holds more models than that), and from above by a feasible schedule, MIN that
// evicts by furthest next use until the missing model fits.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace servelab {

// Misses (loads) of Belady's MIN with `slots` equal-size slots over `sequence` (model ids),
// starting empty. O(n log slots).
uint64_t belady_misses(std::span<const uint32_t> sequence, size_t slots);

struct OptimumBounds {
  uint64_t lower = 0;  // no policy misses fewer
  uint64_t upper = 0;  // a feasible schedule misses this many
  bool exact() const { return lower == upper; }
};

// Bounds on the fewest misses of a cache of `capacity` bytes over `sequence`, model m taking
// sizes[m] bytes (every model must fit on its own: a larger one throws std::invalid_argument).
// Equal sizes give lower == upper (MIN).
OptimumBounds offline_optimum(std::span<const uint32_t> sequence,
                              const std::vector<uint64_t>& sizes, uint64_t capacity);

}  // namespace servelab
