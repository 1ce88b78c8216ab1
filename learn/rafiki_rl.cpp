// rafiki-rl: state, reward, the batching policy around an RlAgent, and its registry entry.
#include "learn/rafiki_rl.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "engine/control/cost_profile.h"
#include "engine/control/policies/builtin.h"
#include "engine/control/policy_registry.h"
#include "learn/rafiki_rl_ensemble.h"

namespace servelab::learn {

namespace {

constexpr float kClip = 10;  // waiting times beyond 10 tau all look alike

class RafikiRl final : public BatchingPolicy {
 public:
  RafikiRl(RlSettings s, const ModelInfo& info, std::shared_ptr<RlAgent> agent)
      : s_(std::move(s)), agent_(std::move(agent)), costs_(info.batch_seconds),
        state_(state_size(s_)), cost_over_tau_(s_.sizes.size()) {}

  BatchDecision decide(const ModelView& m, Time now) override {
    if (m.queued == 0) return {};
    const Time tau = s_.slo != kNever ? s_.slo : detail::head_slo(m);
    fill_costs(tau);
    make_state(s_, m, now, tau, cost_over_tau_, state_);
    action_ = agent_->act(state_);
    return {std::min(s_.sizes[action_], std::max(1u, m.max_batch))};
  }

  void on_batch_taken(const ModelView&, std::span<const Request> batch, Time) override {
    agent_->commit(state_, action_, batch.front().id);
  }

  void on_batch_finished(const ModelView&, std::span<const Request> batch, Time now) override {
    agent_->reward(batch.front().id, batch_reward(s_, batch, now));
  }

  // Without a cost prior, c(b) is the last measured latency of a batch of b (as greedy's).
  void on_batch_done(const ModelView&, uint32_t size, Time service_time, Time) override {
    detail::record_batch_seconds(costs_, size, service_time);
  }

 private:
  void fill_costs(Time tau) {
    for (size_t i = 0; i < s_.sizes.size(); ++i) {
      double c = costs_.empty() ? 0.0 : interpolate_batch_seconds(costs_, s_.sizes[i]);
      cost_over_tau_[i] = tau > 0 && tau < kNever ? float(std::min<double>(c / tau, kClip)) : 0;
    }
  }

  RlSettings s_;
  std::shared_ptr<RlAgent> agent_;
  std::vector<BatchSeconds> costs_;
  std::vector<float> state_;
  std::vector<float> cost_over_tau_;
  size_t action_ = 0;
};

// B sorted and distinct; at most 64 sizes, each at most 4096 (the network's action layer).
std::vector<uint32_t> size_list(const PolicyParams& p) {
  std::vector<uint32_t> out = detail::batch_size_list(p);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty() || out.size() > 64 || out.back() > 4096)
    throw ConfigError("parameter 'batch_sizes' must list 1 to 64 sizes of at most 4096");
  return out;
}

}  // namespace

std::unique_ptr<BatchingPolicy> rafiki_rl_from_file(const PolicyParams& p, const ModelInfo& info) {
  RlSettings s = rl_settings(p);
  if (!p.has("weights"))
    throw ConfigError("parameter 'weights' is required: a network file written by "
                      "`servelab train`");
  Mlp actor;
  try {
    actor = load_mlp(p.get_string("weights", ""));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("parameter 'weights': ") + e.what());
  }
  if (actor.inputs() != state_size(s) || actor.outputs() != s.sizes.size())
    throw ConfigError("parameter 'weights': the network maps " + std::to_string(actor.inputs()) +
                      " inputs to " + std::to_string(actor.outputs()) + " actions; this "
                      "configuration's state has " + std::to_string(state_size(s)) +
                      " (queue_features + 2 + |B|) and " + std::to_string(s.sizes.size()) +
                      " batch sizes");
  return make_rafiki_rl(std::move(s), info, std::make_shared<ArgmaxAgent>(std::move(actor)));
}

RlSettings rl_settings(const PolicyParams& p) {
  detail::check_keys(p, {"weights", "batch_sizes", "slo_ms", "queue_features", "beta",
                         "accuracy"});
  RlSettings s;
  s.sizes = size_list(p);
  s.slo = detail::slo_ms_param(p);
  s.queue_features = uint32_t(detail::param_in(p, "queue_features", 64, 1, 4096));
  s.beta = detail::param_in(p, "beta", 1, 0, 1e6);
  s.accuracy = detail::param_in(p, "accuracy", 1, 0, 1);
  return s;
}

size_t state_size(const RlSettings& s) { return s.queue_features + 2 + s.sizes.size(); }

void make_state(const RlSettings& s, const ModelView& m, Time now, Time tau,
                std::span<const float> cost_over_tau, std::span<float> out) {
  const bool timed = tau > 0 && tau < kNever;
  const size_t shown = m.queue ? std::min<size_t>(m.queue->size(), s.queue_features) : 0;
  for (size_t i = 0; i < s.queue_features; ++i) {
    double w = i < shown && timed ? (now - (*m.queue)[i].arrival) / tau : 0.0;
    out[i] = float(std::clamp(w, 0.0, double(kClip)));
  }
  size_t k = s.queue_features;
  out[k++] = float(std::min<double>(double(m.queued) / s.sizes.back(), kClip));
  out[k++] = float(m.running);
  for (float c : cost_over_tau) out[k++] = c;
}

double batch_reward(const RlSettings& s, std::span<const Request> batch, Time now) {
  size_t overdue = 0;
  for (const Request& r : batch) {
    Time tau = s.slo != kNever ? s.slo : r.deadline - r.arrival;
    if (now - r.arrival > tau) ++overdue;
  }
  return s.accuracy * (double(batch.size()) - s.beta * double(overdue));
}

size_t ArgmaxAgent::act(std::span<const float> state) {
  actor_.forward(state, logits_);
  return argmax(logits_);
}

std::unique_ptr<BatchingPolicy> make_rafiki_rl(RlSettings s, const ModelInfo& info,
                                               std::shared_ptr<RlAgent> agent) {
  return std::make_unique<RafikiRl>(std::move(s), info, std::move(agent));
}

void register_policies() {
  static std::once_flag once;
  std::call_once(once, [] {
    PolicyRegistry::add_batching("rafiki-rl", rafiki_rl_help(), rafiki_rl_from_file);
    add_ensemble_dispatcher(ensemble_rl_info(ensemble_rl_from_file));
  });
}

std::string rafiki_rl_help() {
  return "Rafiki's learned batching (section 5.2, actor-critic): weights (required, a network "
        "file written by `servelab train`) maps the state (the first queue_features waiting "
        "times / tau, default 64; queue length / max(B); running batches; c(b) / tau) to a "
        "batch size in batch_sizes B (default 16,32,48,64), dispatched now as min(b, queue). "
        "tau: slo_ms, else each request's deadline - arrival. beta (default 1) and accuracy "
        "(a(M), default 1) shape equation 7's reward when training. c(b): the model's cost "
        "profile, else the last measured batch of that size.";
}

}  // namespace servelab::learn
