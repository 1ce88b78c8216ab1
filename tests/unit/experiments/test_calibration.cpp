// Calibration probes (run --calibrate-each): the base profile rescaled to a probe, per batch
// size, and probes pooled with the base, against hand-computed costs.
#include <catch2/catch.hpp>

#ifdef SERVELAB_EXP_PROFILER
#include "calibration/calibration.h"

using namespace servelab;
using namespace servelab::experiments;

namespace {

ModelProfile model(const std::string& name, std::vector<BatchCost> batches) {
  ModelProfile m;
  m.name = name;
  m.size_bytes = 1000;
  m.batches = std::move(batches);
  return m;
}

}  // namespace

TEST_CASE("probe sizes: powers of two up to the max batch, and the max batch", "[calibration]") {
  CHECK(probe_sizes(32) == std::vector<uint32_t>{1, 2, 4, 8, 16, 32});
  CHECK(probe_sizes(12) == std::vector<uint32_t>{1, 2, 4, 8, 12});
  CHECK(probe_sizes(1) == std::vector<uint32_t>{1});
}

// Base 10, 18, 24, 30, 45, 60 ms at 1, 2, 3, 4, 6, 8; the probe finds batch 1 as before, batch
// 4 twice as slow and batch 8 as before. Ratios: 1 at 1; 1 + (b - 1) / 3 up to 4; 2 - (b - 4)
// / 4 from 4 to 8. So 2 -> 4/3, 3 -> 5/3, 6 -> 3/2.
TEST_CASE("a profile rescaled to a probe keeps its shape and takes today's speed",
          "[calibration]") {
  config::ProfileFile base;
  base.costs.models.push_back(model("m", {{1, 0.010, 0.001, {0.009, 0.011}}, {2, 0.018, 0, {}},
                                          {3, 0.024, 0, {}}, {4, 0.030, 0.003, {}},
                                          {6, 0.045, 0, {}}, {8, 0.060, 0, {}}}));
  base.costs.models.push_back(model("other", {{1, 0.5, 0, {}}}));
  CostProfile probe;
  probe.models.push_back(model("m", {{1, 0.010, 0, {}}, {4, 0.060, 0, {}}, {8, 0.060, 0, {}}}));

  const config::ProfileFile out = rescale_to_probe(base, probe);
  const auto& b = out.costs.models[0].batches;
  CHECK(b[0].mean == Approx(0.010));
  CHECK(b[0].samples[1] == Approx(0.011));
  CHECK(b[1].mean == Approx(0.018 * 4 / 3));
  CHECK(b[2].mean == Approx(0.024 * 5 / 3));
  CHECK(b[3].mean == Approx(0.060));
  CHECK(b[3].stddev == Approx(0.006));
  CHECK(b[4].mean == Approx(0.045 * 1.5));
  CHECK(b[5].mean == Approx(0.060));
  // A model the probe did not measure is left as it was.
  CHECK(out.costs.models[1].batches[0].mean == 0.5);
}

// Base load 50 ms (samples 40, 60), the probe's 60 ms: x1.2. A pair the probe lacks stays.
TEST_CASE("a rescaled profile takes the probe's load time, its samples scaled alike",
          "[calibration]") {
  config::ProfileFile base;
  base.costs.models.push_back(model("m", {{1, 0.010, 0, {}}}));
  ModelProfile& m = base.costs.models[0];
  m.set_load_time(Tier::Disk, Tier::Host, 0.050);
  m.load_samples[int(Tier::Disk)][int(Tier::Host)] = {0.040, 0.060};
  m.set_load_time(Tier::Host, Tier::Device, 0.010);
  CostProfile probe;
  probe.models.push_back(model("m", {{1, 0.010, 0, {}}}));
  probe.models[0].set_load_time(Tier::Disk, Tier::Host, 0.060);

  const config::ProfileFile rescaled = rescale_to_probe(base, probe);
  const ModelProfile& out = rescaled.costs.models[0];
  CHECK(out.load_seconds(Tier::Disk, Tier::Host) == Approx(0.060));
  const auto& s = out.load_samples[int(Tier::Disk)][int(Tier::Host)];
  REQUIRE(s.size() == 2);
  CHECK(s[0] == Approx(0.048));
  CHECK(s[1] == Approx(0.072));
  CHECK(out.load_seconds(Tier::Host, Tier::Device) == Approx(0.010));
  CHECK(out.batches[0].mean == Approx(0.010));
}
// Base 10, 18, 30 ms at 1, 2, 4 and a 50 ms load; probe A: 12 and 36 ms at 1 and 4, load 60 ms;
// probe B: 14 and 20 ms at 1 and 2, no load. Pooled, each value with the base's: batch 1
// (10 + 12 + 14) / 3 = 12, batch 2 (18 + 20) / 2 = 19, batch 4 (30 + 36) / 2 = 33, the load
// (50 + 60) / 2 = 55. A model no probe measured is left out, and so is one the base lacks.
TEST_CASE("probes pooled with the base: the mean of every measurement of each size",
          "[calibration]") {
  CostProfile base;
  base.models.push_back(model("m", {{1, 0.010, 0, {}}, {2, 0.018, 0, {}}, {4, 0.030, 0, {}}}));
  base.models[0].set_load_time(Tier::Disk, Tier::Host, 0.050);
  base.models.push_back(model("unprobed", {{1, 0.5, 0, {}}}));
  CostProfile a, b;
  a.models.push_back(model("m", {{1, 0.012, 0, {}}, {4, 0.036, 0, {}}}));
  a.models[0].set_load_time(Tier::Disk, Tier::Host, 0.060);
  b.models.push_back(model("m", {{1, 0.014, 0, {}}, {2, 0.020, 0, {}}}));
  b.models.push_back(model("not-in-base", {{1, 0.1, 0, {}}}));

  const CostProfile pooled = pool_probes(base, {a, b});
  REQUIRE(pooled.models.size() == 1);
  const ModelProfile& m = pooled.models[0];
  CHECK(m.name == "m");
  REQUIRE(m.batches.size() == 3);
  CHECK(m.batches[0].mean == Approx(0.012));
  CHECK(m.batches[1].mean == Approx(0.019));
  CHECK(m.batches[2].mean == Approx(0.033));
  CHECK(m.load_seconds(Tier::Disk, Tier::Host) == Approx(0.055));
  // No probe yet: nothing to pool, the profile stays as measured.
  CHECK(pool_probes(base, {}).models.empty());

  // The base rescaled to the pool takes its means; the unprobed model stays.
  config::ProfileFile file;
  file.costs = base;
  const config::ProfileFile out = rescale_to_probe(file, pooled);
  CHECK(out.costs.models[0].batch_latency(2) == Approx(0.019));
  CHECK(out.costs.models[0].batch_latency(4) == Approx(0.033));
  CHECK(out.costs.models[1].batch_latency(1) == 0.5);
}
// Served misses: the base's 80 + 30 ms, probes at 100 + 36 and 90 + 33 ms (and one that did not
// measure any) pool to 90 + 33; a model the base did not measure a served miss of stays without.
TEST_CASE("calibration pools the served misses of the profile and the probes", "[calibration]") {
  config::ProfileFile base;
  base.front_end.overheads["m"].served_miss_load = 0.080;
  base.front_end.overheads["m"].served_miss_batch = 0.030;
  base.front_end.overheads["m"].client = 0.001;
  base.front_end.overheads["other"].client = 0.002;
  std::vector<config::ProfileFile> probes(3);
  probes[0].front_end.overheads["m"].served_miss_load = 0.100;
  probes[0].front_end.overheads["m"].served_miss_batch = 0.036;
  base.front_end.overheads["m"].served_miss_load_samples = {0.070, 0.090};
  probes[0].front_end.overheads["m"].served_miss_load_samples = {0.100};
  probes[2].front_end.overheads["m"].served_miss_load_samples = {0.085, 0.095};
  probes[1].front_end.overheads["other"].served_miss_load = 0.5;
  probes[2].front_end.overheads["m"].served_miss_load = 0.090;
  probes[2].front_end.overheads["m"].served_miss_batch = 0.033;

  config::ProfileFile out = base;
  pool_served_misses(out, base, probes);
  const RequestOverhead& m = out.front_end.overheads.at("m");
  CHECK(m.served_miss_load == Approx(0.090));
  CHECK(m.served_miss_batch == Approx(0.033));
  CHECK(m.client == 0.001);  // the rest as the base has it
  // Every state met so far: the base's waits, then each probe's.
  CHECK(m.served_miss_load_samples == std::vector<double>{0.070, 0.090, 0.100, 0.085, 0.095});
  CHECK(out.front_end.overheads.at("other").served_miss_load == 0);

  config::ProfileFile alone = base;
  pool_served_misses(alone, base, {});
  CHECK(alone.front_end.overheads.at("m").served_miss_load == Approx(0.080));
}
#endif
