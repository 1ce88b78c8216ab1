// Which of a simulated cluster's servers host which models: the run's `cluster.placement`
// (engine/route/placement.h) over its models, with each model's memory from its profile and,
// for a placement by load, its load: the schedule's requests for it (a streamed schedule is
// drawn a second time to count them; equal loads without a schedule).
#pragma once

#include "engine/route/placement.h"
#include "simulator/schedule.h"
#include "simulator/simulator.h"

namespace servelab::sim {

// The placement of `setup`'s models on its cluster.servers servers; `schedule` may be null.
// Throws ConfigError as make_placement does, and for a placement other than `everywhere` in a
// run with model groups (a group's members answer on one server, so each server needs them
// all).
route::Placement place_models(const SimulationSetup& setup, const Schedule* schedule);

// place_models() without a schedule: the names, parameters and servers a config gives.
inline void check_placement(const SimulationSetup& setup) { (void)place_models(setup, nullptr); }

}  // namespace servelab::sim
