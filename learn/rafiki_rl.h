// rafiki-rl: Rafiki's learned batching policy (section 5.2; one model as in 7.2.1). At each
// decision the state (the queue's waiting times and the model's status) goes through a
// policy network whose action is a batch size b in B; the batch is the first min(b, queue)
// requests, dispatched now. Each batch earns equation 7's reward,
// a(M) * (b - beta * |{s in batch : l(s) > tau}|), which `servelab train` (learn/train/)
// maximizes with an actor-critic in the simulator. Deployed, the policy takes the network's
// most likely action; the network is an Mlp file written by the trainer.
// Lives outside engine/control because it reads its weights file; register_policies() adds
// it to the PolicyRegistry (config/ calls it before any config is checked).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/control/policy.h"
#include "learn/mlp.h"

namespace servelab::learn {

struct RlSettings {
  std::vector<uint32_t> sizes{16, 32, 48, 64};  // B: the actions, sorted, distinct
  Time slo = kNever;              // tau; kNever: each request's deadline - arrival
  uint32_t queue_features = 64;   // waiting times in the state: padded with 0, truncated
  double beta = 1;                // weight of overdue requests in the reward (equation 7)
  double accuracy = 1;            // a(M): the served model's accuracy
};

// Parses rafiki-rl's parameters (batch_sizes, slo_ms, queue_features, beta, accuracy; weights
// is read by the factory). Throws ConfigError.
RlSettings rl_settings(const PolicyParams& p);

// The state vector: [w_0/tau .. w_{K-1}/tau, queued/max(B), running, c(b)/tau for b in B],
// waiting times oldest first, each clipped to 10; K = queue_features.
size_t state_size(const RlSettings& s);
void make_state(const RlSettings& s, const ModelView& m, Time now, Time tau,
                std::span<const float> cost_over_tau, std::span<float> out);
// Equation 7 for a batch that finished at `now`.
double batch_reward(const RlSettings& s, std::span<const Request> batch, Time now);

// Chooses actions. The deployed agent takes the network's argmax; the trainer's agent samples
// and learns from commit() and reward().
class RlAgent {
 public:
  virtual ~RlAgent() = default;
  virtual size_t act(std::span<const float> state) = 0;
  // The last act() sized the batch whose first request is `batch` (decisions that no batch
  // followed are never committed).
  virtual void commit(std::span<const float> state, size_t action, RequestId batch) {}
  virtual void reward(RequestId batch, double reward) {}
};

class ArgmaxAgent final : public RlAgent {
 public:
  explicit ArgmaxAgent(Mlp actor) : actor_(std::move(actor)), logits_(actor_.outputs()) {}
  size_t act(std::span<const float> state) override;

 private:
  Mlp actor_;
  std::vector<float> logits_;
};

std::unique_ptr<BatchingPolicy> make_rafiki_rl(RlSettings s, const ModelInfo& info,
                                               std::shared_ptr<RlAgent> agent);

// The registry entry: rafiki-rl with an ArgmaxAgent over the network in parameter `weights`.
std::unique_ptr<BatchingPolicy> rafiki_rl_from_file(const PolicyParams& p, const ModelInfo& info);
std::string rafiki_rl_help();

// Adds rafiki-rl to the PolicyRegistry (idempotent; call before creating controllers).
void register_policies();

}  // namespace servelab::learn
