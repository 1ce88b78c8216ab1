// measured_speed_factor: sums worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "experiments/speed_match.h"

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
  setup.models.push_back({"m", p, 1, 0});

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
