// rafiki-rl for a model group (Rafiki 5.2 with several models): an ensemble dispatcher
// (engine/control/ensemble_dispatch.h) whose action is a batch size b in B and a non-empty
// subset v of the members, (2^|M| - 1) * |B| actions. At each decision (a group request
// arrives or a member answers, while some member is idle) the state goes through the policy
// network and the oldest min(b, queue) requests go to the members in v. The state: the first
// K waiting times of the group's queue over tau (padded with 0), the queue length over max(B),
// and per member whether it is busy and c(m, b) / tau for b in B (Rafiki: "the inference
// time for different models with different batch sizes, and the left time to finish").
// A batch earns equation 7 once all its requests are answered:
//   a(M[v]) * (b - beta * |{overdue requests of the batch}|)
// with a(M[v]) the group's measured accuracy of v. `servelab train` learns it with the
// actor-critic of learn/train/; deployed, it takes the network's most likely action.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "engine/control/ensemble_dispatch.h"
#include "learn/rafiki_rl.h"

namespace servelab::learn {

struct EnsembleRlSettings {
  std::vector<uint32_t> sizes{16, 32, 48, 64};  // B, sorted, distinct
  Time slo = kNever;             // tau; kNever: the queue head's deadline - arrival
  uint32_t queue_features = 64;  // K
  double beta = 1;
  uint32_t members = 1;          // |M|
};

// Parses the dispatcher's parameters (weights, batch_sizes, slo_ms, queue_features, beta) for
// a group of `members` members. Throws ConfigError.
EnsembleRlSettings ensemble_rl_settings(const PolicySpec& spec, size_t members);
size_t ensemble_state_size(const EnsembleRlSettings& s);  // K + 1 + |M| (1 + |B|)
size_t ensemble_actions(const EnsembleRlSettings& s);     // |B| (2^|M| - 1)
// Action a: b = B[a mod |B|], members v = a div |B| + 1 (a mask).
std::pair<uint32_t, MemberMask> ensemble_action(const EnsembleRlSettings& s, size_t a);

// The dispatcher over `agent` (the trainer's learner, or an ArgmaxAgent).
std::unique_ptr<EnsembleDispatcher> make_ensemble_rl(EnsembleRlSettings s,
                                                     std::shared_ptr<RlAgent> agent);
// The registry entry: rafiki-rl over the network in parameter `weights`.
std::unique_ptr<EnsembleDispatcher> ensemble_rl_from_file(const PolicySpec& spec,
                                                          std::span<const std::string> members);
EnsembleDispatcherInfo ensemble_rl_info(DispatcherFactory make);

}  // namespace servelab::learn
