// loadgen_summary.txt: a run's result in the shape of MLPerf LoadGen's mlperf_log_summary.txt
// (the scenario, its metric line, whether the result is valid and why not, the latency
// percentiles in nanoseconds, and the effective settings), so that tools and people who read
// LoadGen's summaries read ours.
#pragma once

#include <string>

#include "capacity/scenario.h"
#include "capacity/server_search.h"

namespace servelab::capacity {

// `sut` names the system under test (e.g. "servelab-sim" or "servelab-engine").
std::string loadgen_summary(const ScenarioSettings& s, const RunOutcome& run,
                            const std::string& sut);

// The Server scenario's summary: its best valid run, and the search's trials under
// "Additional Stats". With no valid rate the result is INVALID, with the lowest rate's reasons.
std::string loadgen_search_summary(const ScenarioSettings& s, const SearchResult& search,
                                   const std::string& sut);

// Writes `text` to `path`; throws std::runtime_error naming the path when it cannot.
void write_text(const std::string& path, const std::string& text);

}  // namespace servelab::capacity
