// Matching the simulator's costs to the speed the machine had during a real run: on a shared
// machine the speed drifts by more than the simulator's error bounds within minutes (and
// within one run: squeezenet1_1 batches of 1 alternated between ~15 and ~19 ms phases of a
// second or so), so a profile measured before the runs mispredicts them by that drift. The
// compute times the engine reports for its own batches give one factor per real run
// (simulation.cost_scale) and its course over the run (simulation.speed_trace), without
// telling the simulator anything else about the run.
// Pure functions; thread-compatible.
#pragma once

#include <vector>

#include "results/records.h"
#include "simulator/simulator.h"

namespace servelab::experiments {

// Sum over the batches of `real` of their measured cost, divided by the sum of the setup's
// predicted cost for the same models and batch sizes: compute time against the mean batch
// latency; for a batch that waited for a load, load wait + compute against load time + batch
// latency (profiles count the first batch's extra cost on a fresh module in the load; a miss
// loads from the tier below the executing one when that tier holds every model, else from
// disk). A batch is seen once per request it held (each reports the batch's size and times),
// so every request counts 1/batch_size. Only completed requests with a batch size and the
// engine's time split count (the load generator reads them from a ServeLab server's answers).
// NaN when none counts.
double measured_speed_factor(const sim::SimulationSetup& setup, const results::RunRecords& real);

// The same sums over consecutive windows of `batches_per_window` batches (in order of their
// dispatch; the last window also takes a remainder of less than half a window), each
// window's factor divided by `overall` (measured_speed_factor): the speed relative to the
// run's mean, from the window's first dispatch on (the first window from 0). Empty when
// fewer than two windows' worth of batches count or `overall` is not a positive number.
std::vector<sim::SimulationSetup::SpeedWindow> measured_speed_trace(
    const sim::SimulationSetup& setup, const results::RunRecords& real, double overall,
    double batches_per_window = 8);

// The pass-to-pass spread of the real run's batches around their window's speed: the
// standard deviation (weighted by batch, as above) of each batch's measured over predicted
// cost divided by overall * its window's factor; batches that waited for a load are left
// out (their spread is the load's). NaN without a trace or without such batches.
double measured_jitter(const sim::SimulationSetup& setup, const results::RunRecords& real,
                       double overall,
                       const std::vector<sim::SimulationSetup::SpeedWindow>& trace);

}  // namespace servelab::experiments
