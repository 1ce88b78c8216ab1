// A workload: an arrival process plus a model-access pattern, each with its own seed
// (one RNG stream per dimension, like MLPerf LoadGen). The same spec drives the simulator's
// virtual clients and the HTTP load generator. Schedules are generated up front.
// Value types; a generated Workload is immutable and may be shared between threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace YAML { class Node; }

namespace servelab::workloads {

// Times are seconds in doubles, which resolve a microsecond up to 2^32 s (136 years): no time
// of a run (a send time, a gap, a duration) may pass it, or latencies would round to nothing.
inline constexpr double kMaxRunSeconds = 4294967296.0;
// The finest gap a rate may ask for is a nanosecond: rates above 1e9 requests/s are refused.
inline constexpr double kMaxRate = 1e9;
inline constexpr double kMinRate = 1.0 / kMaxRunSeconds;

// Which model each request goes to.
struct AccessSpec {
  std::string type = "uniform";   // sequential | uniform | zipf | pareto | weights | trace
  double alpha = 1.0;             // zipf exponent; pareto shape
  std::vector<double> weights;    // weights: one per model
  std::string trace_file;         // trace: CSV file
  std::string trace_column;       // trace: column holding a model name or integer index
  uint64_t seed = 1;
};

// When requests are sent.
struct ArrivalSpec {
  std::string type = "closed";    // closed | poisson | constant | gamma | mmpp | sine | trace |
                                  // bursts
  uint32_t concurrency = 1;       // closed: requests in flight
  double think_time = 0;          // closed: mean think time (s), exponential; 0 = none
  // closed, set by LoadGen's multi-stream scenario (no YAML key): requests go in queries of
  // this many, sent together, the next query when every answer of the previous one is back;
  // concurrency is taken to be the same. 0: each answer sends the next request.
  uint32_t samples_per_query = 0;
  double rate = 1;                // poisson/constant/gamma: requests per second
  double cv = 1;                  // gamma: coefficient of variation of the gaps (1: Poisson)
  // mmpp: a Markov-modulated Poisson process; in state i requests arrive at state_rates[i]
  // (requests/s) for an exponential time of mean state_dwell[i] (s), then the state moves to
  // one of the others, each as likely. It starts in state 0. By default a tenth of the time
  // at ten times the base rate.
  std::vector<double> state_rates = {1, 10};
  std::vector<double> state_dwell = {9, 1};
  // sine (Rafiki 7.2): rate r(t) = k*sin(2*pi*t/period) + b with k, b from equations 8 and 9
  // so that r > peak_base for 20% of each period and max r = 1.1*peak_base; each interval's
  // count is scaled by (1 + phi), phi ~ N(0, noise).
  double peak_base = 100;         // r_u or r_l of the paper
  double period = 60;             // T (s)
  double noise = 0.1;
  double interval = 0;            // sine: count interval delta (s) of Rafiki; 0 = period/1000
  std::string trace_file;         // trace: CSV whose first column is a timestamp
  double time_scale = 1.0;        // trace: multiply inter-arrival gaps by this
  // trace: replay only the trace's times in [window_start, window_end) (trace seconds from
  // its first request, before time_scale), shifted to start at 0; window_end 0: to the end.
  double window_start = 0;
  double window_end = 0;
  // bursts (DLIS: "many requests in the span of a few milliseconds"): `burst` requests at a
  // time, evenly over `burst_span` seconds, the bursts' starts `burst_span` plus an
  // exponential gap apart, so that the mean rate is `rate`.
  uint32_t burst = 1;
  double burst_span = 0;
  uint64_t seed = 2;
};

struct WorkloadSpec {
  ArrivalSpec arrival;
  AccessSpec access;
  uint64_t requests = 1000;       // total requests (trace: at most this many; 0 = whole trace)
  double duration = 0;            // open loop: stop generating after this many seconds (0: off)
  double warmup = 0;              // requests sent before this many seconds are run and recorded
                                  // but left out of summaries (a steady-state measurement)
  uint32_t num_models = 1;        // models are indices 0..num_models-1
  // Real mode only: a folder of labelled images (labels.txt, loadgen::read_labelled_images)
  // the load generator cycles through, scoring each answer; relative to the models folder.
  // Empty: one fixed image. The simulator ignores it.
  std::string images;
};

// The generated schedule.
struct Workload {
  bool closed_loop = false;
  uint32_t concurrency = 0;            // closed loop only
  uint32_t samples_per_query = 0;      // closed loop: ArrivalSpec::samples_per_query
  std::vector<uint32_t> models;        // model index of request i (all modes)
  std::vector<double> send_times;      // open loop: absolute send time of request i (sorted)
  std::vector<double> think_times;     // closed loop: think time before request i (seconds)
  double warmup = 0;                   // WorkloadSpec::warmup, carried to the run's records
};

// A registered arrival process or access pattern: its `type:` name and one line of help
// (what it does, its YAML keys with units). Every type also accepts `seed`.
struct WorkloadTypeHelp {
  std::string name;
  std::string help;
};

// The registered arrival processes and access patterns, in documentation order, for --help.
// Any thread may call them.
std::vector<WorkloadTypeHelp> arrival_processes();
std::vector<WorkloadTypeHelp> access_patterns();

// Throws std::invalid_argument with a user-facing message on a bad spec or unreadable trace.
// Deterministic: the same spec gives the same schedule with every standard library; the
// arrival times depend only on spec.arrival (and requests/duration), the models only on
// spec.access. Exact mappings and draws are documented in docs/workloads.md.
Workload generate(const WorkloadSpec& spec);

// Checks a spec without generating it (no trace file is read); throws like generate().
void validate(const WorkloadSpec& spec);

// The spec as a `workload:` YAML mapping in the schema parse_workload reads, with every field
// explicit: log it with a run's results so the effective settings are recorded.
std::string to_yaml(const WorkloadSpec& spec);

// Parses the `workload:` mapping of a YAML config (schema in docs/workloads.md). Throws
// std::invalid_argument naming the offending key. Relative trace paths are kept as written
// (resolved against the working directory when the workload is generated).
WorkloadSpec parse_workload(const YAML::Node& node, uint32_t num_models);

}  // namespace servelab::workloads
