// The command-line options of MLPerf LoadGen's scenarios (capacity/scenario.h), shared by
// `servelab simulate` and `servelab load`: --scenario, --target-latency-ms, ... with LoadGen's
// defaults (the percentile: the scenario's).
#pragma once

#include <boost/program_options.hpp>

#include "capacity/scenario.h"

namespace servelab::cli {

void add_scenario_options(boost::program_options::options_description& opts);

// The settings the options give (call only where --scenario was given); throws
// std::invalid_argument on a bad one.
capacity::ScenarioSettings scenario_settings(const boost::program_options::variables_map& vm);

}  // namespace servelab::cli
