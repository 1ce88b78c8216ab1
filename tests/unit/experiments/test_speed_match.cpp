// measured_speed_factor and measured_speed_trace: sums worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "calibration/speed_match.h"

using namespace servelab;

namespace {

results::RequestRecord timed(uint32_t batch, double start, double finish,
                             RequestStatus status = RequestStatus::Ok) {
  results::RequestRecord r;
  r.batch_size = batch;
  r.dispatch = start;
  r.start = start;
  r.finish = finish;
  r.status = status;
  return r;
}

}  // namespace

TEST_CASE("speed factor: measured batch compute over the profile's, each batch once",
          "[experiments][speed]") {
  sim::SimulationSetup setup;
  ModelProfile p;
  p.batches = {{1, 0.010, 0, {}}, {4, 0.016, 0, {}}};
  setup.models.push_back({"m", p, 1, 0, {}});

  results::RunRecords real;
  real.requests.push_back(timed(1, 1.000, 1.012));            // batch 1: 12 ms (profile 10)
  for (int i = 0; i < 4; ++i)                                  // batch 4: 20 ms (profile 16)
    real.requests.push_back(timed(4, 2.000, 2.020));
  // Not counted: failed, no batch size (another server), no compute time.
  real.requests.push_back(timed(1, 3.0, 3.5, RequestStatus::Failed));
  real.requests.push_back(timed(0, 3.0, 3.5));
  real.requests.push_back(timed(1, NAN, 3.5));
  CHECK(experiments::measured_speed_factor(setup, real) == Approx(32.0 / 26.0));

  // A batch that waited for its load (disk -> device here: the host tier has a budget):
  // 40 ms load wait + 20 ms compute against 30 ms load + 10 ms batch.
  setup.control.exec_tier = Tier::Device;
  setup.control.budgets[int(Tier::Host)].models = 4;
  setup.models[0].profile.set_load_time(Tier::Disk, Tier::Host, 0.025);
  setup.models[0].profile.set_load_time(Tier::Host, Tier::Device, 0.005);
  real.requests.push_back(timed(1, 5.040, 5.060));
  real.requests.back().dispatch = 5.0;
  real.requests.back().waited_for_load = true;
  CHECK(experiments::measured_speed_factor(setup, real) == Approx(92.0 / 66.0));
  // With every model in host memory a miss loads host -> device: 5 ms.
  setup.control.budgets[int(Tier::Host)].models = UINT32_MAX;
  CHECK(experiments::measured_speed_factor(setup, real) == Approx(92.0 / 41.0));

  // Batch 3 is interpolated between the measured sizes: 14 ms.
  results::RunRecords three;
  for (int i = 0; i < 3; ++i) three.requests.push_back(timed(3, 0, 0.007));
  CHECK(experiments::measured_speed_factor(setup, three) == Approx(0.5));

  results::RunRecords none;
  none.requests.push_back(timed(0, NAN, 1.0));
  CHECK(std::isnan(experiments::measured_speed_factor(setup, none)));
}

TEST_CASE("speed trace: the factor per window of batches, relative to the run's",
          "[experiments][speed]") {
  sim::SimulationSetup setup;
  ModelProfile p;
  p.batches = {{1, 0.010, 0, {}}, {4, 0.016, 0, {}}};
  setup.models.push_back({"m", p, 1, 0, {}});

  // 64 batches 0.1 s apart: the first 32 take 12 ms (profile 10), the rest 8 ms; batch 40 is
  // a batch of 4 (four records, one batch) at 16 * 0.8 ms. Overall (32 * 12 + 31 * 8 + 12.8)
  // / (63 * 10 + 16). Windows of 16 batches: 1.2 from 0, 1.2 from 1.6 s, 0.8 from 3.2 s and
  // from 4.8 s, over the overall factor. The records come in finish order, not dispatch order.
  results::RunRecords real;
  for (int i = 63; i >= 0; --i) {
    const double at = 0.1 * i, k = i < 32 ? 1.2 : 0.8;
    const uint32_t size = i == 40 ? 4 : 1;
    for (uint32_t j = 0; j < size; ++j)
      real.requests.push_back(timed(size, at, at + k * (size == 4 ? 0.016 : 0.010)));
  }
  const double overall = experiments::measured_speed_factor(setup, real);
  REQUIRE(overall == Approx(644.8 / 646));
  auto trace = experiments::measured_speed_trace(setup, real, overall, 16);
  REQUIRE(trace.size() == 4);
  const double from[] = {0, 1.6, 3.2, 4.8}, factor[] = {1.2, 1.2, 0.8, 0.8};
  for (int w = 0; w < 4; ++w) {
    CHECK(trace[w].from == Approx(from[w]));
    CHECK(trace[w].factor == Approx(factor[w] / overall));
  }
  // Relative to the overall factor given.
  CHECK(experiments::measured_speed_trace(setup, real, 2.0, 16)[0].factor == Approx(0.6));
  // A remainder under half a window joins the last one: 64 = 3 * 20 + 4.
  auto twenty = experiments::measured_speed_trace(setup, real, overall, 20);
  REQUIRE(twenty.size() == 3);
  CHECK(twenty[1].from == Approx(2.0));
  CHECK(twenty[1].factor == Approx((12 * 12.0 + 8 * 8.0) / (20 * 10.0) / overall));  // 20..39
  CHECK(twenty[2].from == Approx(4.0));
  CHECK(twenty[2].factor == Approx(0.8 / overall));  // batches 40..63
  // Fewer than two windows' worth: no trace.
  CHECK(experiments::measured_speed_trace(setup, real, overall, 40).empty());
  CHECK(experiments::measured_speed_trace(setup, real, std::nan(""), 16).empty());
}

TEST_CASE("jitter: the spread of batch costs around their window's speed",
          "[experiments][speed]") {
  sim::SimulationSetup setup;
  ModelProfile p;
  p.batches = {{1, 0.010, 0, {}}};
  p.set_load_time(Tier::Disk, Tier::Host, 0.030);
  setup.models.push_back({"m", p, 1, 0, {}});
  setup.control.exec_tier = Tier::Host;

  // 32 batches alternating 11 and 9 ms (profile 10): both windows of 16 run at factor 1,
  // each batch 10% off it. In the second half the machine is twice as slow (22 and 18 ms):
  // that is the trace's part, not jitter.
  results::RunRecords real;
  for (int i = 0; i < 64; ++i) {
    const double at = 0.1 * i, slow = i < 32 ? 1 : 2;
    real.requests.push_back(timed(1, at, at + slow * (i % 2 ? 0.009 : 0.011)));
  }
  // A batch that waited for its load, at the window's speed (60 ms load + 20 ms batch against
  // 30 + 10): not jitter (its spread is the load's); counted, it would give 0.1 * sqrt(64/65).
  real.requests.push_back(timed(1, 6.46, 6.48));
  real.requests.back().dispatch = 6.4;
  real.requests.back().waited_for_load = true;
  const double overall = experiments::measured_speed_factor(setup, real);
  const auto trace = experiments::measured_speed_trace(setup, real, overall, 16);
  REQUIRE(trace.size() == 4);
  CHECK(trace[0].factor * overall == Approx(1.0));
  CHECK(trace[2].factor * overall == Approx(2.0));
  CHECK(experiments::measured_jitter(setup, real, overall, trace) == Approx(0.1));
  // Without a trace there is nothing to be jitter around.
  CHECK(std::isnan(experiments::measured_jitter(setup, real, overall, {})));
}
