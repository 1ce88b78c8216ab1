// Training rafiki-rl in the simulator: a run config whose batching policy is rafiki-rl (one
// model), or one of whose groups has rafiki-rl as its ensemble dispatcher (several models),
// plus a `train:` section; each episode simulates the config's workload with fresh seeds while
// an ActorCritic chooses and learns. Deterministic for a given config and seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "learn/mlp.h"
#include "learn/train/actor_critic.h"

namespace servelab::learn {

struct TrainConfig {
  config::RunConfig run;           // the episode: engine, rafiki-rl's parameters, workload
  uint32_t episodes = 30;
  ActorCriticSettings agent;
  std::string weights;             // train.weights: also save the network here ("": only --out)
  std::string group;               // the group whose dispatcher learns; "": the batching policy
};

// Reads CONFIG (the run config keys plus `train:`), applies `--set` overrides, checks that the
// batching policy or exactly one group's dispatcher is rafiki-rl. Throws ConfigError naming
// the file and key.
TrainConfig load_train_config(const std::string& path, const std::vector<std::string>& overrides);

// The entropy bonus falls linearly from train.entropy to 0 over the episodes, so the policy
// settles; after every episode its argmax is evaluated on one fixed episode (seeds no training
// episode uses), and the best evaluated network is the result.

// One row of the learning curve.
struct EpisodeRow {
  uint32_t episode = 0;
  double seconds = 0;           // wall time of the episode, learning included
  uint64_t requests = 0, decisions = 0, updates = 0;
  double reward = 0;            // sum of equation 7 over the episode's batches
  double slo_attainment = 0;    // of the sampled (exploring) policy
  // Of the argmax policy after the episode, on a fixed seed: its SLO attainment; for a group,
  // attainment x mean accuracy (answers both in time and right, Rafiki's trade-off).
  double eval_attainment = 0;
  uint64_t overdue = 0;
  double throughput_rps = 0, mean_batch = 0;
  double policy_loss = 0, value_loss = 0, entropy = 0;  // means over the episode's updates
  double decision_us = 0;       // mean time to choose an action
};

struct TrainResult {
  std::vector<EpisodeRow> curve;
  // The network of the episode whose argmax policy did best on the evaluation seeds (the
  // first such on ties): deploy it as rafiki-rl's weights.
  Mlp actor;
  uint32_t best_episode = 0;
  double seconds = 0;
};

// Trains; `progress` (may be empty) is called after every episode.
TrainResult train(const TrainConfig& cfg, const std::function<void(const EpisodeRow&)>& progress);

}  // namespace servelab::learn
