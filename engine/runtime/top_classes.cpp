// Top-k softmax (see top_classes.h): one pass for the peak, one for the normalizer, one for
// the k best logits kept in a small sorted array; probabilities for those k only.
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

}  // namespace

void top_softmax(std::span<const float> logits, size_t k, std::vector<ClassProbability>& out) {
  out.clear();
  if (logits.empty() || k == 0) return;
  k = std::min(k, logits.size());
  const float peak = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp(v - peak);
  best_indices(logits, k, out);
  for (ClassProbability& c : out)
    c.probability = static_cast<float>(std::exp(logits[c.index] - peak) / sum);
}

}  // namespace servelab::runtime
