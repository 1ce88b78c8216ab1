// generate() and validate(): a WorkloadSpec becomes a schedule (models + send or think times).
// What depends on the arrival or access type is looked up in the registries.
#include "workloads/workload.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "workloads/access_patterns.h"
#include "workloads/arrivals.h"

namespace servelab::workloads {
namespace {

template <class Entry>
std::vector<WorkloadTypeHelp> help_of(const std::vector<Entry>& registry) {
  std::vector<WorkloadTypeHelp> out;
  for (const Entry& e : registry) out.push_back({e.name, e.help});
  return out;
}

}  // namespace

std::vector<WorkloadTypeHelp> arrival_processes() { return help_of(detail::arrival_registry()); }
std::vector<WorkloadTypeHelp> access_patterns() { return help_of(detail::access_registry()); }

namespace {

// An open loop bounded by its duration alone: its rate times the duration must stay within
// kMaxRequests, checked before anything is drawn.
void check_expected_count(const WorkloadSpec& spec, const detail::ArrivalProcess& process) {
  if (!process.peak_rate || spec.duration <= 0 || spec.requests != 0) return;
  const double expected = process.peak_rate(spec.arrival) * spec.duration;
  if (expected <= double(detail::kMaxRequests)) return;
  throw std::invalid_argument(
      "workload: " + spec.arrival.type + " arrivals for workload.duration " +
      std::to_string(spec.duration) + " s ask for about " + std::to_string(uint64_t(expected)) +
      " requests, beyond the limit of " + std::to_string(detail::kMaxRequests) +
      " (set workload.requests, or lower the rate or the duration)");
}

}  // namespace

void validate(const WorkloadSpec& spec) {
  if (spec.num_models == 0) throw std::invalid_argument("workload: there are no models");
  detail::validate_access(spec.access, spec.num_models);
  detail::validate_arrival(spec.arrival);
  for (const auto& [value, name] : {std::pair{spec.duration, "duration"}, {spec.warmup, "warmup"}})
    if (!std::isfinite(value) || value < 0 || value > kMaxRunSeconds)
      throw std::invalid_argument("workload." + std::string(name) +
                                  " must be a non-negative number of seconds, at most " +
                                  std::to_string(uint64_t(kMaxRunSeconds)) +
                                  " (a run's times resolve 1 us up to there)");
  if (spec.requests > detail::kMaxRequests)
    throw std::invalid_argument("workload.requests must be at most " +
                                std::to_string(detail::kMaxRequests));
  const detail::ArrivalProcess& process = detail::arrival_process(spec.arrival.type);
  check_expected_count(spec, process);
  if (process.closed_loop() && spec.requests == 0)
    throw std::invalid_argument("workload.requests must be at least 1 for closed-loop arrivals");
  if (!process.closed_loop() && !process.ends_by_itself && spec.requests == 0 &&
      spec.duration == 0)
    throw std::invalid_argument("workload: " + spec.arrival.type +
                                " arrivals need 'requests' or 'duration' (or both)");
}

Workload generate(const WorkloadSpec& spec) {
  validate(spec);
  Workload w;
  w.warmup = spec.warmup;
  if (detail::arrival_process(spec.arrival.type).closed_loop()) {
    w.closed_loop = true;
    w.samples_per_query = spec.arrival.samples_per_query;
    w.concurrency = w.samples_per_query ? w.samples_per_query : spec.arrival.concurrency;
    w.think_times = detail::generate_think_times(spec.arrival, spec.requests);
  } else {
    w.send_times = detail::generate_send_times(spec.arrival, spec.requests, spec.duration);
    if (w.send_times.empty())
      throw std::invalid_argument("workload: the arrival process produced no requests "
                                  "(duration too short or trace empty)");
  }
  const uint64_t count = w.closed_loop ? spec.requests : w.send_times.size();
  w.models = detail::generate_models(spec.access, spec.num_models, count,
                                     detail::rows_before_window(spec.arrival, spec.access));
  return w;
}

}  // namespace servelab::workloads
