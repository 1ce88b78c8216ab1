// BatchRounds: the order in which the profiler times batch sizes, driven by a machine whose
// pass costs more right after a larger pass, so that what each sample measures is known in
// closed form.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "calibration/batch_rounds.h"

using servelab::experiments::BatchRounds;
using servelab::experiments::BatchRoundsOptions;

namespace {

const std::vector<uint32_t> kSizes = {1, 2, 4, 8, 32, 64};
constexpr double kPerImage = 0.010;  // seconds: a pass of b costs b * 10 ms on its own
constexpr double kAfterLarger = 0.020;  // and this much more right after a larger pass

double own_cost(uint32_t b) { return kPerImage * b; }

struct Run {
  std::vector<BatchRounds::Pass> passes;  // in order
  std::vector<std::vector<double>> samples;
};

Run run(const BatchRoundsOptions& o) {
  std::vector<double> warm;  // one warm-up pass of each size, in order: each after a smaller one
  for (uint32_t b : kSizes) warm.push_back(own_cost(b));
  BatchRounds rounds(o, warm);
  Run r;
  uint32_t previous = kSizes.back();
  while (auto pass = rounds.next()) {
    const uint32_t b = kSizes[pass->size];
    rounds.record(own_cost(b) + (previous > b ? kAfterLarger : 0));
    previous = b;
    r.passes.push_back(*pass);
    REQUIRE(r.passes.size() < 100000);
  }
  for (size_t k = 0; k < kSizes.size(); ++k) r.samples.push_back(rounds.samples(k));
  return r;
}

}  // namespace

TEST_CASE("batch rounds time each pass after one of its own size", "[experiments][profile]") {
  BatchRoundsOptions o;  // blocks of 0.2 s, re-warming passes under 0.5 s
  const Run r = run(o);
  for (size_t k = 0; k < kSizes.size(); ++k) {
    INFO("batch " << kSizes[k]);
    REQUIRE(r.samples[k].size() >= 3);
    for (double s : r.samples[k]) CHECK(s == Approx(own_cost(kSizes[k])));
  }
  // Every timed pass of a short size follows a pass of its own size; a long one (64: 0.64 s)
  // is never re-warmed.
  for (size_t i = 0; i < r.passes.size(); ++i) {
    const BatchRounds::Pass& p = r.passes[i];
    if (kSizes[p.size] == 64) CHECK(p.timed);
    if (p.timed && kSizes[p.size] < 64 && i > 0) CHECK(r.passes[i - 1].size == p.size);
  }
}

TEST_CASE("batch rounds spread a size's samples over rounds, within its time budget",
          "[experiments][profile]") {
  BatchRoundsOptions o;
  const Run r = run(o);
  // The batch of 1 takes 1 s of 10 ms passes (min_seconds_per_size) in blocks of 0.2 s: 100
  // samples over 5 blocks, each block a round apart.
  CHECK(r.samples[0].size() >= 100);
  CHECK(r.samples[0].size() <= 101);
  size_t blocks = 0;
  for (size_t i = 0; i < r.passes.size(); ++i)
    if (r.passes[i].size == 0 && (i == 0 || r.passes[i - 1].size != 0)) ++blocks;
  CHECK(blocks >= 5);
  CHECK(blocks <= 6);
  // The batch of 64 stops once past max_seconds_per_size: 4 passes of 0.64 s.
  CHECK(r.samples[5].size() == 4);
}

TEST_CASE("without blocks or re-warming, a small size pays the larger pass before it",
          "[experiments][profile]") {
  // The order the profiler used before: one pass per size per round. The batch of 1 then
  // follows the largest size still sampling, and as its 1 s of passes (34 of 30 ms) ends
  // before the batch of 2's (50 of 20 ms), every sample of it carries the penalty.
  BatchRoundsOptions o;
  o.block_seconds = 0;
  o.rewarm_below_seconds = 0;
  const Run r = run(o);
  for (const BatchRounds::Pass& p : r.passes) CHECK(p.timed);
  CHECK(r.samples[0].size() == 34);
  for (double s : r.samples[0]) CHECK(s == Approx(own_cost(1) + kAfterLarger));
}
