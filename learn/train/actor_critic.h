// The actor-critic that trains rafiki-rl (Rafiki section 5.2, "the actor-critic algorithm"):
// an RlAgent that samples batch sizes from its policy network while the simulator runs, and
// every `steps` committed decisions whose rewards are in performs one advantage actor-critic
// update (n-step returns bootstrapped by the critic, an entropy bonus) with Adam, in LibTorch.
// The actor is mirrored into a plain Mlp after each update, so acting costs no LibTorch call
// and the policy acted with is exactly the one that will be deployed.
// Single-threaded and deterministic: one seed fixes the initial weights and every sample.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "learn/mlp.h"
#include "learn/rafiki_rl.h"

namespace servelab::learn {

struct ActorCriticSettings {
  uint32_t hidden = 64;         // units in each of the two hidden layers (actor and critic)
  double learning_rate = 1e-3;  // Adam
  double gamma = 0.99;          // discount per decision
  uint32_t steps = 64;          // decisions per update (n of the n-step return)
  double entropy = 0.01;        // weight of the entropy bonus
  double value_weight = 0.5;    // weight of the critic's squared error
  double reward_scale = 1;      // rewards are divided by it (rafiki-rl: max(B))
  uint64_t seed = 1;
};

struct UpdateStats {
  uint64_t updates = 0, decisions = 0;
  double reward = 0;            // sum of (unscaled) rewards seen
  double policy_loss = 0, value_loss = 0, entropy = 0;  // sums over updates
  double act_seconds = 0;       // wall time spent choosing actions
  uint64_t acts = 0;
};

class ActorCritic final : public RlAgent {
 public:
  ActorCritic(size_t state_size, size_t actions, ActorCriticSettings s);
  ~ActorCritic() override;

  size_t act(std::span<const float> state) override;
  void commit(std::span<const float> state, size_t action, RequestId batch) override;
  void reward(RequestId batch, double reward) override;

  // End of an episode (the time limit, not a terminal state): learns from what is left,
  // bootstrapping from the critic, and forgets pending decisions.
  void end_episode();
  Mlp actor() const { return mirror_; }
  const UpdateStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  // The entropy bonus from now on (the trainer anneals it to 0 over the episodes).
  void set_entropy(double weight) { s_.entropy = weight; }

 private:
  struct Nets;
  struct Step {
    std::vector<float> state;
    size_t action = 0;
    double reward = 0;
    bool rewarded = false;
  };
  void learn_ready();
  void update(size_t n, bool bootstrap);
  void mirror();

  size_t state_size_, actions_;
  ActorCriticSettings s_;
  std::unique_ptr<Nets> nets_;
  Mlp mirror_;
  std::vector<float> logits_;
  std::vector<double> probs_;
  std::mt19937_64 rng_;
  std::vector<Step> steps_;                          // committed decisions, oldest first
  std::unordered_map<RequestId, size_t> pending_;    // batch -> index into steps_ + dropped_
  uint64_t dropped_ = 0;                             // steps learned from and erased
  UpdateStats stats_;
};

}  // namespace servelab::learn
