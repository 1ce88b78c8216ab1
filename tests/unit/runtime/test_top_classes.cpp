// top_softmax against the definition: every probability computed in double over the whole
// row, classes sorted by probability (then index), the first k taken.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/runtime/top_classes.h"

using servelab::runtime::ClassProbability;
using servelab::runtime::top_softmax;

namespace {

std::vector<ClassProbability> by_definition(const std::vector<float>& logits, size_t k) {
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v));
  std::vector<uint32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](uint32_t a, uint32_t b) { return logits[a] > logits[b]; });
  std::vector<ClassProbability> out;
  for (size_t j = 0; j < std::min(k, idx.size()); ++j)
    out.push_back({idx[j], static_cast<float>(std::exp(double(logits[idx[j]])) / sum)});
  return out;
}

void check_same(const std::vector<float>& logits, size_t k) {
  std::vector<ClassProbability> got;
  top_softmax(logits, k, got);
  const auto want = by_definition(logits, k);
  INFO("classes " << logits.size() << ", k " << k);
  REQUIRE(got.size() == want.size());
  for (size_t j = 0; j < got.size(); ++j) {
    CHECK(got[j].index == want[j].index);
    // Relative to the definition; below 1e-30 (float denormals, flushed or not) all is zero.
    CHECK(got[j].probability == Approx(want[j].probability).epsilon(1e-5).margin(1e-30));
  }
}

}  // namespace

TEST_CASE("top_softmax gives the k most probable classes, best first", "[runtime]") {
  std::mt19937 rng(7);
  for (float spread : {3.0f, 40.0f}) {  // 40: terms far below exp(-80) of the peak
    std::normal_distribution<float> logit(0.0f, spread);
    for (size_t n : {1, 2, 10, 1000}) {
      std::vector<float> logits(n);
      for (float& v : logits) v = logit(rng);
      for (size_t k : {1, 3, 5, 40, 2000}) check_same(logits, k);  // 40: the partial-sort path
    }
  }
}

TEST_CASE("top_softmax: equal logits keep index order, large logits do not overflow",
          "[runtime]") {
  check_same({1, 3, 3, 0, 3}, 3);  // 1, 2, 4
  check_same({1, 3, 3, 0, 3}, 1);  // 1: the first of the peaks (k = 1 finds it on its own)
  std::vector<ClassProbability> got;
  const std::vector<float> large = {1000.0f, 999.0f};  // exp(1000) overflows; shifted, not
  top_softmax(large, 2, got);
  REQUIRE(got.size() == 2);
  CHECK(got[0].probability == Approx(1 / (1 + std::exp(-1.0))));
  CHECK(got[1].probability == Approx(std::exp(-1.0) / (1 + std::exp(-1.0))));
  top_softmax({}, 5, got);
  CHECK(got.empty());
  const std::vector<float> one = {1.0f};
  top_softmax(one, 0, got);
  CHECK(got.empty());
}

TEST_CASE("top_softmax: a NaN logit (a broken model) gives classes in range", "[runtime]") {
  // Compiled with -ffast-math, the order of a NaN is unspecified; the classes must still be
  // real indices, whatever the peak pass made of it.
  std::vector<ClassProbability> got;
  for (const std::vector<float>& logits :
       {std::vector<float>{NAN, 1, 2}, std::vector<float>{1, NAN, 2}, std::vector<float>{NAN}}) {
    for (size_t k : {1, 2}) {
      top_softmax(logits, k, got);
      REQUIRE(got.size() == std::min(k, logits.size()));
      for (const ClassProbability& c : got) CHECK(c.index < logits.size());
    }
  }
}
