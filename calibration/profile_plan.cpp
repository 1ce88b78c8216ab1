#include "calibration/profile_plan.h"

#include <stdexcept>
#include <utility>

namespace servelab::experiments {
namespace {

// Rough per-item costs for the plan: a round trip through the in-process server, a cold
// burst (a wait for the next tick and a quantum after its answers), a served miss (a load
// and its batch at a tick). The ETA only needs their order of magnitude.
constexpr double kRoundTripPhaseSeconds = 2.0;
constexpr double kColdBurstSeconds = 2 * 0.25;
constexpr double kServedMissSeconds = 0.1;
constexpr double kOverheadPhaseSeconds = 1.0;
constexpr double kSourceLoadSeconds = 0.1;  // a load from another source and its batch  // measure_profile aims at about a second

double batches_and_loads_seconds(const ProfileOptions& o) {
  return static_cast<double>(o.batch_sizes.size()) * o.batches.min_seconds_per_size +
         o.min_load_seconds + 4.0 * o.source_loads * kSourceLoadSeconds;
}

void add_front_end_phases(const ProfileOptions& o, std::vector<ProfilePhase>& plan) {
  plan.push_back({"zero-cost round trip", kRoundTripPhaseSeconds});
  if (!o.cold_burst_sizes.empty() && o.cold_bursts > 0)
    plan.push_back({"cold bursts", static_cast<double>(o.cold_burst_sizes.size()) *
                                       o.cold_bursts * kColdBurstSeconds});
}

void add_served_phases(const ProfileOptions& o, const std::string& model,
                       std::vector<ProfilePhase>& plan) {
  plan.push_back({model + ": request overhead", kOverheadPhaseSeconds});
  if (o.served_rounds > 0)
    plan.push_back({model + ": served extra", 2.0 * o.served_rounds * o.served_turn_seconds});
  if (o.served_miss_requests > 0)
    plan.push_back({model + ": served misses", o.served_miss_requests * kServedMissSeconds});
}

}  // namespace

std::vector<ProfilePhase> plan_profile(const ProfileOptions& o) {
  std::vector<ProfilePhase> plan;
  for (const auto& m : o.models)
    plan.push_back({m + ": batches and loads", batches_and_loads_seconds(o)});
  if (o.course_seconds > 0) plan.push_back({"speed course", o.course_seconds});
  if (o.served_idle_turns == 0 && o.idle_seconds > 0)
    plan.push_back({"idle slowdown", o.idle_seconds});
  add_front_end_phases(o, plan);
  for (const auto& m : o.models) add_served_phases(o, m, plan);
  if (o.served_idle_turns > 0)
    plan.push_back({"served idle slowdown", 2.0 * o.served_idle_turns * o.served_idle_turn_seconds});
  return plan;
}

ProfilePhases::ProfilePhases(std::vector<ProfilePhase> plan, ProfilePhaseStarted started)
    : plan_(std::move(plan)), started_(std::move(started)) {}

void ProfilePhases::next(const std::string& what) {
  if (next_ >= plan_.size() || plan_[next_].what != what)
    throw std::logic_error("profile: phase '" + what + "' is not the plan's next (" +
                           (next_ < plan_.size() ? plan_[next_].what : "none left") + ")");
  if (started_) started_(next_);
  ++next_;
}

void ProfilePhases::finish() {
  if (next_ != plan_.size())
    throw std::logic_error("profile: the planned phase '" + plan_[next_].what + "' did not run");
  if (started_) started_(plan_.size());
}

}  // namespace servelab::experiments
