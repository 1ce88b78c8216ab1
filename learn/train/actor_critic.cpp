// ActorCritic: LibTorch networks, n-step advantage actor-critic updates, and sampling.
#include "learn/train/actor_critic.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

namespace servelab::learn {

namespace {

using Layers = std::vector<torch::nn::Linear>;

// in -> hidden -> hidden -> out, tanh between (the layout Mlp evaluates).
Layers make_layers(size_t in, size_t hidden, size_t out) {
  return {torch::nn::Linear(int64_t(in), int64_t(hidden)),
          torch::nn::Linear(int64_t(hidden), int64_t(hidden)),
          torch::nn::Linear(int64_t(hidden), int64_t(out))};
}

torch::Tensor run(Layers& layers, torch::Tensor x) {
  for (size_t i = 0; i < layers.size(); ++i) {
    x = layers[i]->forward(x);
    if (i + 1 < layers.size()) x = torch::tanh(x);
  }
  return x;
}

std::vector<float> to_floats(const torch::Tensor& t) {
  torch::Tensor c = t.detach().contiguous().to(torch::kFloat32);
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

struct ActorCritic::Nets {
  Layers actor, critic;
  std::unique_ptr<torch::optim::Adam> optimizer;
};

ActorCritic::ActorCritic(size_t state_size, size_t actions, ActorCriticSettings s)
    : state_size_(state_size), actions_(actions), s_(s), nets_(std::make_unique<Nets>()),
      logits_(actions), probs_(actions), rng_(s.seed) {
  if (state_size == 0 || actions == 0 || s.hidden == 0 || s.steps == 0)
    throw std::invalid_argument("actor-critic: sizes and steps must be positive");
  // Tiny networks: one intra-op thread is fastest, and keeps every sum in one order.
  torch::set_num_threads(1);
  torch::manual_seed(s.seed);
  nets_->actor = make_layers(state_size, s.hidden, actions);
  nets_->critic = make_layers(state_size, s.hidden, 1);
  {
    // A near-uniform first policy: every batch size gets tried.
    torch::NoGradGuard no_grad;
    nets_->actor.back()->weight.mul_(0.01);
    nets_->actor.back()->bias.zero_();
  }
  std::vector<torch::Tensor> params;
  for (Layers* net : {&nets_->actor, &nets_->critic})
    for (const auto& layer : *net)
      for (const auto& p : layer->parameters()) params.push_back(p);
  nets_->optimizer = std::make_unique<torch::optim::Adam>(
      params, torch::optim::AdamOptions(s.learning_rate));
  mirror();
}

ActorCritic::~ActorCritic() = default;

size_t ActorCritic::act(std::span<const float> state) {
  const auto start = std::chrono::steady_clock::now();
  mirror_.forward(state, logits_);
  const float top = *std::max_element(logits_.begin(), logits_.end());
  double total = 0;
  for (size_t a = 0; a < actions_; ++a) total += probs_[a] = std::exp(double(logits_[a] - top));
  double u = std::uniform_real_distribution<double>(0, total)(rng_);
  size_t action = actions_ - 1;
  for (size_t a = 0; a < actions_; ++a) {
    if (u < probs_[a]) {
      action = a;
      break;
    }
    u -= probs_[a];
  }
  stats_.act_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++stats_.acts;
  return action;
}

void ActorCritic::commit(std::span<const float> state, size_t action, RequestId batch) {
  pending_[batch] = dropped_ + steps_.size();
  steps_.push_back({std::vector<float>(state.begin(), state.end()), action, 0, false});
  ++stats_.decisions;
}

void ActorCritic::reward(RequestId batch, double reward) {
  auto it = pending_.find(batch);
  if (it == pending_.end()) return;  // decided in an episode already ended
  Step& step = steps_[it->second - dropped_];
  step.reward = reward;
  step.rewarded = true;
  stats_.reward += reward;
  pending_.erase(it);
  learn_ready();
}

// Learns from the oldest `steps` decisions once they all have rewards and a successor state.
void ActorCritic::learn_ready() {
  while (steps_.size() > s_.steps &&
         std::all_of(steps_.begin(), steps_.begin() + s_.steps,
                     [](const Step& st) { return st.rewarded; }))
    update(s_.steps, /*bootstrap=*/true);
}

void ActorCritic::end_episode() {
  size_t n = 0;
  while (n < steps_.size() && steps_[n].rewarded) ++n;
  if (n >= 2) update(n - 1, /*bootstrap=*/true);  // the last one's state bootstraps
  steps_.clear();
  pending_.clear();
  dropped_ = 0;
}

// One update over steps_[0, n); the state of steps_[n] bootstraps the returns.
void ActorCritic::update(size_t n, bool bootstrap) {
  std::vector<float> flat;
  flat.reserve(n * state_size_);
  std::vector<int64_t> actions(n);
  for (size_t t = 0; t < n; ++t) {
    flat.insert(flat.end(), steps_[t].state.begin(), steps_[t].state.end());
    actions[t] = int64_t(steps_[t].action);
  }
  torch::Tensor states = torch::from_blob(flat.data(), {int64_t(n), int64_t(state_size_)},
                                          torch::kFloat32).clone();
  torch::Tensor taken = torch::from_blob(actions.data(), {int64_t(n)}, torch::kInt64).clone();

  double next = 0;
  if (bootstrap && n < steps_.size()) {
    torch::NoGradGuard no_grad;
    const std::vector<float>& s = steps_[n].state;
    torch::Tensor x = torch::from_blob(const_cast<float*>(s.data()), {1, int64_t(state_size_)},
                                       torch::kFloat32);
    next = run(nets_->critic, x).item<double>();
  }
  std::vector<float> returns(n);
  for (size_t t = n; t-- > 0;) {
    next = steps_[t].reward / s_.reward_scale + s_.gamma * next;
    returns[t] = float(next);
  }
  torch::Tensor target = torch::from_blob(returns.data(), {int64_t(n)}, torch::kFloat32).clone();

  torch::Tensor log_probs = torch::log_softmax(run(nets_->actor, states), 1);
  torch::Tensor values = run(nets_->critic, states).squeeze(1);
  // Standardized advantages: the actor's step does not depend on the reward's scale.
  torch::Tensor advantage = (target - values).detach();
  if (n > 1) advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-6);
  torch::Tensor policy_loss = -(log_probs.gather(1, taken.unsqueeze(1)).squeeze(1) * advantage).mean();
  torch::Tensor value_loss = (target - values).pow(2).mean();
  torch::Tensor entropy = -(log_probs.exp() * log_probs).sum(1).mean();
  torch::Tensor loss = policy_loss + s_.value_weight * value_loss - s_.entropy * entropy;

  nets_->optimizer->zero_grad();
  loss.backward();
  // Clipped per network: the critic's large early errors must not starve the actor's step.
  for (Layers* net : {&nets_->actor, &nets_->critic}) {
    std::vector<torch::Tensor> params;
    for (auto& layer : *net)
      for (const auto& p : layer->parameters()) params.push_back(p);
    torch::nn::utils::clip_grad_norm_(params, 1.0);
  }
  nets_->optimizer->step();

  stats_.policy_loss += policy_loss.item<double>();
  stats_.value_loss += value_loss.item<double>();
  stats_.entropy += entropy.item<double>();
  ++stats_.updates;
  steps_.erase(steps_.begin(), steps_.begin() + ptrdiff_t(n));
  dropped_ += n;
  mirror();
}

void ActorCritic::mirror() {
  std::vector<DenseLayer> layers;
  for (const auto& l : nets_->actor) {
    DenseLayer d;
    d.inputs = size_t(l->weight.size(1));
    d.outputs = size_t(l->weight.size(0));
    d.weight = to_floats(l->weight);
    d.bias = to_floats(l->bias);
    layers.push_back(std::move(d));
  }
  mirror_ = Mlp(std::move(layers));
}

}  // namespace servelab::learn
