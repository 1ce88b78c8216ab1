// The k most probable classes of one output row (softmax over every logit), computed by the
// worker for each classify request after its batch. No LibTorch, no allocation beyond `out`:
// at 1,000 classes and batches of 64 this runs 64 times on the worker's critical path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace servelab::runtime {

struct ClassProbability {
  uint32_t index = 0;
  float probability = 0;
};

// The min(k, logits.size()) best classes, best first (equal logits: the lower index first),
// with their softmax probabilities. Empty for no logits or k == 0.
void top_softmax(std::span<const float> logits, size_t k, std::vector<ClassProbability>& out);

}  // namespace servelab::runtime
