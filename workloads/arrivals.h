// Arrival processes: when each request is sent (private to servelab_workloads).
// The registry (arrival_registry) holds one entry per `arrival.type`; everything that depends
// on the type goes through it. Thread-compatible; each call builds its own generator from the
// spec's seed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "workloads/open_times.h"
#include "workloads/streams.h"
#include "workloads/type_registry.h"
#include "workloads/workload.h"

namespace servelab::workloads::detail {

// kMaxRequests (open_times.h): the largest schedule generate() builds; bigger specs are
// rejected rather than exhausting memory.

// One registered arrival process: its name, help, YAML keys, checks and generator.
struct ArrivalProcess {
  std::string name;
  std::string help;                        // one line: what it does, its keys with units
  std::vector<SpecKey<ArrivalSpec>> keys = {};  // besides type and seed, in to_yaml order
  void (*validate)(const ArrivalSpec&);    // throws std::invalid_argument naming the field
  // A closed loop draws think times (`count` of them), an open loop send times (up to
  // max_requests, 0: kMaxRequests, and before `duration`, 0: none): exactly one is set.
  std::unique_ptr<TimeStream> (*think_times)(const ArrivalSpec&, uint64_t count) = nullptr;
  std::unique_ptr<TimeStream> (*send_times)(const ArrivalSpec&, uint64_t max_requests,
                                            double duration) = nullptr;
  bool ends_by_itself = false;  // open loop that ends on its own (trace): no limit required
  // An open loop with a rate: its highest rate (requests/s), so that a run's count can be
  // bounded before it is drawn. nullptr: none.
  double (*peak_rate)(const ArrivalSpec&) = nullptr;

  bool closed_loop() const { return think_times != nullptr; }
};

// Every arrival process, in the order --help lists them.
const std::vector<ArrivalProcess>& arrival_registry();

// The process of `type`; throws std::invalid_argument listing the registered names.
const ArrivalProcess& arrival_process(const std::string& type);

// Checks the arrival fields; throws std::invalid_argument naming the field.
void validate_arrival(const ArrivalSpec& spec);

// Rafiki 7.2 sine rate r(t) = k*sin(2*pi*t/T) + b with k, b solving equations 8 and 9:
//   k*cos(0.2*pi) + b = peak_base   (r > peak_base for 20% of each period)
//   k + b = 1.1*peak_base           (the peak rate)
struct SineRate {
  double k = 0, b = 0;
  double at(double t, double period) const;
};
SineRate sine_rate(double peak_base);

// Open-loop send times (seconds from the start, non-decreasing) for poisson, constant, sine
// and trace arrivals. Stops after `max_requests` (0: no count limit) or at `duration`
// (0: no time limit); at least one limit must be set except for trace, which ends with its
// file.
//   poisson   gaps Exp(1/rate) by inversion; the first request at the first gap
//   constant  request i at i/rate
//   sine      Rafiki's count model: time is cut into intervals of length delta
//             (spec.interval, default period/1000); interval j starting at t_j gets
//             delta * r(t_j + delta/2) * (1 + phi), phi ~ N(0, noise) (Box-Muller, 1+phi
//             clipped at 0) requests; the fractional remainder carries into the next
//             interval, and the c requests of an interval are spread evenly at
//             t_j + (m + 0.5) * delta / c.
//   trace     first-column times of the CSV (see trace_reader.h) times time_scale
std::vector<double> generate_send_times(const ArrivalSpec& spec, uint64_t max_requests,
                                        double duration);

// The rows a trace replay leaves out before its window (window_start): an access trace read
// from the same file skips as many, so that each request keeps its row's model. 0 unless
// `arrival` is a windowed trace and `access` reads the same file.
uint64_t rows_before_window(const ArrivalSpec& arrival, const AccessSpec& access);

// Closed loop: the think time before each of `count` requests, Exp(think_time) by inversion,
// or all zero when think_time is 0.
std::vector<double> generate_think_times(const ArrivalSpec& spec, uint64_t count);

// The same schedules as streams, checked as above (throw std::invalid_argument).
std::unique_ptr<TimeStream> send_time_stream(const ArrivalSpec& spec, uint64_t max_requests,
                                             double duration);
std::unique_ptr<TimeStream> think_time_stream(const ArrivalSpec& spec, uint64_t count);
// Throws, as generate_send_times does, when a schedule limited by its duration alone has
// reached kMaxRequests (`produced` requests so far).
void fail_if_capped(const ArrivalSpec& spec, uint64_t max_requests, uint64_t produced);

}  // namespace servelab::workloads::detail
