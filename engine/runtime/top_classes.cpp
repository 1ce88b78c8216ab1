// Top-k softmax (see top_classes.h): one pass for the peak, one for the normalizer, one for
// the k best logits kept in a small sorted array (none for k = 1: the peak is the best);
// probabilities for those k only.
#include "engine/runtime/top_classes.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace servelab::runtime {
namespace {

constexpr size_t kInsertionMax = 32;  // above this k, a partial sort of indices

// Indices of the k largest logits, best first; ties keep the lower index first.
void best_indices(std::span<const float> logits, size_t k, std::vector<ClassProbability>& out) {
  if (k > kInsertionMax) {
    std::vector<uint32_t> idx(logits.size());
    std::iota(idx.begin(), idx.end(), 0u);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](uint32_t a, uint32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (size_t j = 0; j < k; ++j) out.push_back({idx[j], 0});
    return;
  }
  for (uint32_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (out.size() == k && !(v > logits[out.back().index])) continue;
    if (out.size() == k) out.pop_back();
    auto at = std::find_if(out.begin(), out.end(),
                           [&](const ClassProbability& c) { return v > logits[c.index]; });
    out.insert(at, {i, 0});
  }
}

// Sum of exp(v - peak) over the logits: the pass that costs (an exp per class). Compiled
// twice, chosen once at load time by the CPU: with AVX2 the vectorized expf is 8 wide instead
// of 4. Terms below exp(-80) (1.8e-35) count as exp(-80): the sum is at least 1, so that
// changes nothing a float shows, and it keeps every lane in the vector expf's fast range
// (logits spread wider than ~80, as an untrained resnet50's, would leave it).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
double normalizer(std::span<const float> logits, float peak) {
  constexpr float kLowest = -80.0f;
  double sum = 0;
  for (float v : logits) sum += std::exp(std::max(v - peak, kLowest));
  return sum;
}

}  // namespace

void top_softmax(std::span<const float> logits, size_t k, std::vector<ClassProbability>& out) {
  out.clear();
  if (logits.empty() || k == 0) return;
  k = std::min(k, logits.size());
  // The peak's value alone (a vectorized reduction; its position would make the loop scalar).
  const float peak = *std::max_element(logits.begin(), logits.end());
  const double sum = normalizer(logits, peak);
  const auto first_peak = k == 1 ? std::find(logits.begin(), logits.end(), peak) : logits.end();
  if (first_peak != logits.end())  // k == 1: the best is the first logit equal to the peak
    out.push_back({static_cast<uint32_t>(first_peak - logits.begin()), 0});
  else  // k > 1, or no logit equals the peak (NaN)
    best_indices(logits, k, out);
  for (ClassProbability& c : out)
    c.probability = static_cast<float>(std::exp(logits[c.index] - peak) / sum);
}

}  // namespace servelab::runtime
