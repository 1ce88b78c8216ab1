// Matching the simulator's costs to the speed the machine had during a real run: on a shared
// machine the speed drifts by more than the simulator's error bounds within minutes, so a
// profile measured before the runs mispredicts them by that drift. One factor per real run,
// from the compute times the engine reports for its own batches, rescales the profile
// (simulation.cost_scale) without telling the simulator anything else about the run.
// Pure functions; thread-compatible.
#pragma once

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

}  // namespace servelab::experiments
