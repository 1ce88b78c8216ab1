// Calibration probes (run --calibrate-each): the base profile rescaled to a probe, per batch
// size, against hand-computed costs.
#include <catch2/catch.hpp>

#ifdef SERVELAB_EXP_PROFILER
#include "experiments/calibration.h"

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
#endif
