// The per-request answer of a classify call: top_softmax (engine/runtime/top_classes.h)
// against the implementation it replaced (a probability vector and an index vector over
// every class, then a partial sort), side by side on the same logits.
//   build/tests/bench/runtime/bench_top_classes
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/runtime/top_classes.h"

namespace {

// n logits drawn around 0 with the given spread (a trained classifier's: a few units; an
// untrained one's can be tens).
std::vector<float> logits(size_t n, float spread = 3.0f) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// What the engine did before (engine.cpp, up to 2026-11-26).
void previous(const std::vector<float>& l, size_t k, std::vector<std::pair<size_t, float>>& out) {
  const float peak = *std::max_element(l.begin(), l.end());
  std::vector<float> pr(l.size());
  double sum = 0;
  for (size_t i = 0; i < pr.size(); ++i) sum += pr[i] = std::exp(l[i] - peak);
  for (float& v : pr) v = static_cast<float>(v / sum);
  std::vector<size_t> idx(pr.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  k = std::min(k, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](size_t a, size_t c) { return pr[a] > pr[c]; });
  out.clear();
  for (size_t j = 0; j < k; ++j) out.emplace_back(idx[j], pr[idx[j]]);
}

void BM_TopSoftmax(benchmark::State& state) {
  const auto l = logits(static_cast<size_t>(state.range(0)),
                        state.range(2) ? static_cast<float>(state.range(2)) : 3.0f);
  std::vector<servelab::runtime::ClassProbability> out;
  for (auto _ : state) {
    servelab::runtime::top_softmax(l, static_cast<size_t>(state.range(1)), out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_TopSoftmax)->Args({1000, 1, 3})->Args({1000, 5, 3})->Args({10, 5, 3})
    ->Args({1000, 1, 30});  // the third: the logits' spread

void BM_Previous(benchmark::State& state) {
  const auto l = logits(static_cast<size_t>(state.range(0)));
  std::vector<std::pair<size_t, float>> out;
  for (auto _ : state) {
    previous(l, static_cast<size_t>(state.range(1)), out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Previous)->Args({1000, 1})->Args({1000, 5})->Args({10, 5});

}  // namespace

BENCHMARK_MAIN();
