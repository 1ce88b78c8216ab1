#include "cli/scenario_options.h"

namespace servelab::cli {

namespace po = boost::program_options;

void add_scenario_options(po::options_description& opts) {
  opts.add_options()
      ("scenario", po::value<std::string>(),
       "an MLPerf LoadGen scenario instead of the config's arrivals: single-stream, "
       "multi-stream (queries of --samples-per-query samples, one at a time), server (the "
       "highest Poisson rate within the latency bound, searched), offline; writes "
       "DIR/loadgen_summary.txt")
      ("target-latency-ms", po::value<double>()->default_value(50), "server: the latency bound")
      ("target-latency-percentile", po::value<double>(),
       "the percentile judged (default: single-stream 0.90, the others 0.99)")
      ("samples-per-query", po::value<uint32_t>()->default_value(8),
       "multi-stream: samples a query sends together")
      ("min-query-count", po::value<uint64_t>()->default_value(100), "queries a run needs")
      ("min-duration-s", po::value<double>()->default_value(600),
       "virtual seconds a run needs")
      ("early-stopping-confidence", po::value<double>()->default_value(0.99),
       "LoadGen's early stopping confidence: the server's queries over the bound, and the "
       "queries a single- or multi-stream percentile needs (0: off)")
      ("start-rate", po::value<double>()->default_value(10),
       "server: the search's first rate (req/s)")
      ("search-precision", po::value<double>()->default_value(0.01),
       "server: stop when the highest valid and lowest invalid rates are this close")
      ("max-trials", po::value<int>()->default_value(40), "server: the search's most runs")
      ("min-rate", po::value<double>()->default_value(0.1),
       "server: the search gives up below this rate (req/s)");
}

capacity::ScenarioSettings scenario_settings(const po::variables_map& vm) {
  capacity::ScenarioSettings s =
      capacity::default_settings(capacity::parse_scenario(vm["scenario"].as<std::string>()));
  s.target_latency_s = vm["target-latency-ms"].as<double>() / 1e3;
  if (vm.count("target-latency-percentile"))
    s.target_percentile = vm["target-latency-percentile"].as<double>();
  s.min_query_count = vm["min-query-count"].as<uint64_t>();
  s.samples_per_query = vm["samples-per-query"].as<uint32_t>();
  s.min_duration_s = vm["min-duration-s"].as<double>();
  s.early_stopping_confidence = vm["early-stopping-confidence"].as<double>();
  s.start_rate = vm["start-rate"].as<double>();
  s.search_precision = vm["search-precision"].as<double>();
  s.max_trials = vm["max-trials"].as<int>();
  s.min_rate = vm["min-rate"].as<double>();
  capacity::validate(s);
  return s;
}

}  // namespace servelab::cli
