#include "simulator/schedule.h"

#include "engine/control/policy_params.h"

namespace servelab::sim {

GeneratedSchedule::GeneratedSchedule(const workloads::Workload& w) : w_(w) {
  const size_t n = w.models.size();
  if (w.closed_loop) {
    if (w.concurrency == 0 && n > 0) throw ConfigError("closed-loop workload with concurrency 0");
    if (!w.think_times.empty() && w.think_times.size() != n)
      throw ConfigError("workload: think_times and models differ in length");
  } else if (w.send_times.size() != n) {
    throw ConfigError("workload: send_times and models differ in length");
  }
}

bool GeneratedSchedule::next(workloads::ScheduledRequest& out) {
  if (next_ == w_.models.size()) return false;
  out.model = w_.models[next_];
  if (w_.closed_loop) out.time = w_.think_times.empty() ? 0 : w_.think_times[next_];
  else out.time = w_.send_times[next_];
  ++next_;
  return true;
}

std::vector<double> GeneratedSchedule::target_counts(size_t targets) const {
  std::vector<double> counts(targets, 0.0);
  for (uint32_t m : w_.models)
    if (m < targets) counts[m] += 1;
  return counts;
}

std::vector<double> StreamedSchedule::target_counts(size_t targets) const {
  const std::vector<uint64_t> counts = s_.model_counts(targets);
  return std::vector<double>(counts.begin(), counts.end());
}

}  // namespace servelab::sim
