// MLPerf LoadGen's scenarios as ServeLab runs them, in the simulator and on the real engine:
// their settings, the metric each reports, and the rules that make a run valid. Pure data and
// functions; thread-safe.
//   single-stream  one query in flight, the next sent when the previous answers; metric: the
//                  90th-percentile latency
//   multi-stream   one query of samples_per_query samples in flight, the next sent when every
//                  sample of the previous one answered; metric: the 99th-percentile latency of
//                  queries (a query's latency: its first send to its last answer)
//   server         Poisson arrivals at a scheduled rate; metric: the highest rate whose
//                  99th-percentile latency stays within the bound (server_search.h)
//   offline        every sample sent at once; metric: samples per second
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace servelab::capacity {

enum class Scenario { kSingleStream, kMultiStream, kServer, kOffline };

// "single-stream", "multi-stream", "server", "offline"; throws std::invalid_argument listing
// them.
Scenario parse_scenario(const std::string& name);
std::string scenario_name(Scenario s);
std::string scenario_title(Scenario s);  // LoadGen's spelling: "SingleStream", "Server", ...

struct ScenarioSettings {
  Scenario scenario = Scenario::kServer;
  double target_latency_s = 0.050;   // server: the bound on the percentile
  double target_percentile = 0.99;   // server and multi-stream 0.99, single-stream 0.90
  uint32_t samples_per_query = 8;    // multi-stream (LoadGen's default)
  uint64_t min_query_count = 100;    // LoadGen's default
  double min_duration_s = 600;       // LoadGen's default (virtual seconds in the simulator)
  double early_stopping_confidence = 0.99;
  // server: the search's first rate (requests/s) and its stopping width (hi / lo - 1).
  double start_rate = 10;
  double search_precision = 0.01;
  int max_trials = 40;
  double min_rate = 0.1;             // the search gives up below it (runs grow as 1 / rate)
};

// LoadGen's defaults for the scenario (percentile 0.90 for single-stream).
ScenarioSettings default_settings(Scenario s);

// Throws std::invalid_argument naming the setting that is out of range.
void validate(const ScenarioSettings& s);

// One request of a run as the scenarios judge it: its index in send order, its send and
// answer times, and whether it was answered ok.
struct Sample {
  uint64_t index = 0;
  double sent = 0, answered = 0;
  bool ok = true;
};

// The latency of each query: a sample per query, or with multi-stream samples_per_query
// samples (by index) per query, from its first send to its last answer; a query with a
// sample not answered ok is infinitely late (LoadGen needs every sample answered).
std::vector<double> query_latencies(const ScenarioSettings& s, std::vector<Sample> samples);

// One run's outcome under the scenario's rules.
struct RunOutcome {
  uint64_t queries = 0;
  uint64_t overlatency = 0;        // queries over target_latency_s (server)
  double duration_s = 0;           // first send to last answer
  double scheduled_rate = 0;       // server: the Poisson rate asked for
  double completed_rate = 0;       // queries / duration
  double percentile_latency_s = 0; // at target_percentile
  // Latency percentiles for the summary: 50, 90, 95, 97, 99, 99.9 (seconds).
  std::vector<std::pair<double, double>> percentiles;
  double min_latency_s = 0, max_latency_s = 0, mean_latency_s = 0;
  bool min_duration_ok = false, min_queries_ok = false;
  bool performance_ok = true;      // server: the percentile within the bound
  // LoadGen's early stopping: server, the queries over the bound are few enough for the
  // confidence; single- and multi-stream, enough queries for the target percentile to be
  // estimated at all (none over it would pass: 44 for p90, 459 for p99 at 0.99 confidence).
  bool early_stopping_ok = true;
  uint64_t more_queries_needed = 0;
  uint64_t percentile_queries_needed = 0;  // single- and multi-stream: that count; else 0
  double target_percentile = 0;
  bool valid() const {
    return min_duration_ok && min_queries_ok && performance_ok && early_stopping_ok;
  }
  std::vector<std::string> reasons() const;  // what made it invalid, in words
};

// Judges one run: `latencies_s` of its answered queries (any order), `duration_s` from the
// first send to the last answer, `scheduled_rate` (server; 0 otherwise).
RunOutcome judge_run(const ScenarioSettings& s, std::vector<double> latencies_s,
                     double duration_s, double scheduled_rate);

// The fewest queries a run is scheduled with: the min count, and for the server what early
// stopping needs with none over the bound. Single- and multi-stream runs the min count as
// LoadGen does; judge_run calls one too short for its percentile invalid.
uint64_t queries_for(const ScenarioSettings& s);

// How long an open loop at `rate` sends for (server): until both the min duration and
// queries_for(s) hold, with a margin for the Poisson spread.
double schedule_seconds(const ScenarioSettings& s, double rate);

}  // namespace servelab::capacity
