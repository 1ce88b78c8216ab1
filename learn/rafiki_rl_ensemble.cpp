// rafiki-rl as an ensemble dispatcher: state, action, reward and the registry entry.
#include "learn/rafiki_rl_ensemble.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "engine/control/cost_profile.h"
#include "engine/control/policies/builtin.h"

namespace servelab::learn {

namespace {

constexpr float kClip = 10;  // waiting times and costs beyond 10 tau all look alike

float over_tau(double seconds, Time tau) {
  if (!(tau > 0 && tau < kNever)) return 0;
  return float(std::clamp(seconds / tau, 0.0, double(kClip)));
}

class EnsembleRl final : public EnsembleDispatcher {
 public:
  EnsembleRl(EnsembleRlSettings s, std::shared_ptr<RlAgent> agent)
      : s_(std::move(s)), agent_(std::move(agent)), state_(ensemble_state_size(s_)) {}

  GroupDecision decide(const GroupView& v, Time now) override {
    if (v.queue.empty() || v.members.size() != s_.members) return {};
    if (std::none_of(v.members.begin(), v.members.end(),
                     [](const GroupMemberView& m) { return m.idle; }))
      return {};  // asked again when a member answers
    const Request& head = v.queue.front();
    const Time tau = s_.slo != kNever ? s_.slo : head.deadline - head.arrival;
    fill_state(v, now, tau);
    const size_t a = agent_->act(state_);
    const auto [b, mask] = ensemble_action(s_, a);
    const uint32_t n = uint32_t(std::min<size_t>(b, v.queue.size()));
    agent_->commit(state_, a, head.id);
    accuracy_[head.id] = v.accuracy ? v.accuracy->of(mask) : 1.0;
    return {n, mask};
  }

  void on_batch_answered(RequestId first, uint32_t size, MemberMask, uint32_t overdue,
                         Time) override {
    auto it = accuracy_.find(first);
    if (it == accuracy_.end()) return;
    const double a = std::isnan(it->second) ? 0.0 : it->second;
    accuracy_.erase(it);
    agent_->reward(first, a * (double(size) - s_.beta * double(overdue)));  // equation 7
  }

 private:
  void fill_state(const GroupView& v, Time now, Time tau) {
    size_t k = 0;
    for (size_t i = 0; i < s_.queue_features; ++i)
      state_[k++] = i < v.queue.size() ? over_tau(now - v.queue[i].arrival, tau) : 0.0f;
    state_[k++] = float(std::min<double>(double(v.queue.size()) / s_.sizes.back(), kClip));
    for (const GroupMemberView& m : v.members) {
      state_[k++] = m.idle ? 0.0f : 1.0f;
      for (uint32_t b : s_.sizes) {
        const bool known = m.costs && !m.costs->empty();
        state_[k++] = known ? over_tau(interpolate_batch_seconds(*m.costs, b), tau) : 0.0f;
      }
    }
  }

  EnsembleRlSettings s_;
  std::shared_ptr<RlAgent> agent_;
  std::vector<float> state_;
  std::unordered_map<RequestId, double> accuracy_;  // a(M[v]) of batches not yet answered
};

}  // namespace

EnsembleRlSettings ensemble_rl_settings(const PolicySpec& spec, size_t members) {
  const PolicyParams& p = spec.params;
  detail::check_keys(p, {"weights", "batch_sizes", "slo_ms", "queue_features", "beta"});
  EnsembleRlSettings s;
  s.sizes = detail::batch_size_list(p);
  std::sort(s.sizes.begin(), s.sizes.end());
  s.sizes.erase(std::unique(s.sizes.begin(), s.sizes.end()), s.sizes.end());
  if (s.sizes.empty() || s.sizes.size() > 16 || s.sizes.back() > 4096)
    throw ConfigError("dispatch rafiki-rl: batch_sizes must list 1 to 16 sizes of at most 4096");
  s.slo = detail::slo_ms_param(p);
  s.queue_features = uint32_t(detail::param_in(p, "queue_features", 64, 1, 4096));
  s.beta = detail::param_in(p, "beta", 1, 0, 1e6);
  if (members == 0 || members > kMaxGroupMembers)
    throw ConfigError("dispatch rafiki-rl: a group needs 1.." + std::to_string(kMaxGroupMembers) +
                      " members");
  s.members = uint32_t(members);
  return s;
}

size_t ensemble_state_size(const EnsembleRlSettings& s) {
  return s.queue_features + 1 + s.members * (1 + s.sizes.size());
}

size_t ensemble_actions(const EnsembleRlSettings& s) {
  return s.sizes.size() * ((size_t(1) << s.members) - 1);
}

std::pair<uint32_t, MemberMask> ensemble_action(const EnsembleRlSettings& s, size_t a) {
  return {s.sizes[a % s.sizes.size()], MemberMask(a / s.sizes.size() + 1)};
}

std::unique_ptr<EnsembleDispatcher> make_ensemble_rl(EnsembleRlSettings s,
                                                     std::shared_ptr<RlAgent> agent) {
  return std::make_unique<EnsembleRl>(std::move(s), std::move(agent));
}

std::unique_ptr<EnsembleDispatcher> ensemble_rl_from_file(const PolicySpec& spec,
                                                          std::span<const std::string> members) {
  EnsembleRlSettings s = ensemble_rl_settings(spec, members.size());
  if (!spec.params.has("weights"))
    throw ConfigError("dispatch rafiki-rl: parameter 'weights' is required: a network file "
                      "written by `servelab train`");
  Mlp actor;
  try {
    actor = load_mlp(spec.params.get_string("weights", ""));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("dispatch rafiki-rl: parameter 'weights': ") + e.what());
  }
  if (actor.inputs() != ensemble_state_size(s) || actor.outputs() != ensemble_actions(s))
    throw ConfigError("dispatch rafiki-rl: parameter 'weights': the network maps " +
                      std::to_string(actor.inputs()) + " inputs to " +
                      std::to_string(actor.outputs()) + " actions; this group's state has " +
                      std::to_string(ensemble_state_size(s)) + " (queue_features + 1 + "
                      "members x (1 + |B|)) and " + std::to_string(ensemble_actions(s)) +
                      " actions (|B| x (2^members - 1))");
  return make_ensemble_rl(std::move(s), std::make_shared<ArgmaxAgent>(std::move(actor)));
}

EnsembleDispatcherInfo ensemble_rl_info(DispatcherFactory make) {
  return {"rafiki-rl",
          "Rafiki's learned ensemble policy (section 5.2): weights (required, written by "
          "`servelab train`) maps the state (the first queue_features waiting times / tau, "
          "default 64; queue length / max(B); per member: busy, c(m, b) / tau) to a batch "
          "size in batch_sizes B (default 16,32,48,64) and a non-empty subset of members; "
          "the oldest min(b, queue) go to them now, while some member is idle. tau: slo_ms, "
          "else each head's deadline - arrival. beta (default 1) weighs overdue requests in "
          "equation 7's reward, a(M[v]) (b - beta overdue), when training",
          {"weights", "batch_sizes", "slo_ms", "queue_features", "beta"},
          std::move(make),
          [](const PolicySpec& spec, std::span<const std::string> members) {
            ensemble_rl_settings(spec, members.size());  // weights are read when it is made
          }};
}

}  // namespace servelab::learn
