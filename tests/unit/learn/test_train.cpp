// Training rafiki-rl in the simulator: the same seed gives the same weights, the trained
// network beats fixed batching on SLO attainment, and the deployed plain-C++ forward pass
// computes what LibTorch computes with the same weights.
// LibTorch first: it brings glog's CHECK, which Catch's must replace.
#include <torch/torch.h>
#undef CHECK
#include <catch2/catch.hpp>

#include <fstream>

#include "learn/mlp.h"
#include "learn/train/trainer.h"
#include "results/records.h"
#include "simulator/sim_config.h"
#include "simulator/simulator.h"
#include "tests/support/temp_dir.h"
#include "workloads/workload.h"

using namespace servelab;

namespace {

// Rafiki's inception_v3 costs, tau = 460 ms, one short sine period whose peak (1.1 x 272/s)
// is more than batches of 16 (228/s) or 48 (272/s) can serve: the network must learn to take
// the largest batch when the queue is long. A second of training.
std::string write_config(const testutil::TempDir& dir) {
  const std::string path = (dir / "train.yaml").string();
  std::ofstream(path) << "models: [inception_v3]\n"
      "profile: " SERVELAB_SOURCE_DIR "/experiments/profiles/rafiki-inception.yaml\n"
      "engine: {workers: 1, max_batch: 64, exec_tier: device, slo_ms: 460}\n"
      "policies:\n  batching: {name: rafiki-rl}\n"
      "workload:\n  requests: 100000\n  duration: 60\n"
      "  arrival: {type: sine, peak_base: 272, period_s: 60, noise: 0.1}\n"
      "  access: {type: uniform}\n"
      "simulation: {noise: normal, seed: 1}\n"
      "train: {episodes: 25, hidden: 32, steps: 32, learning_rate: 0.003, entropy: 0.05, "
      "seed: 5}\n";
  return path;
}

PolicyParams one_param(const std::string& key, const std::string& value) {
  return PolicyParams(std::map<std::string, std::string>{{key, value}});
}

double attainment(const std::string& config, PolicySpec batching, uint64_t seed) {
  sim::SimConfig sc = sim::load_sim_config(config, {}, seed);
  sc.setup.control.batching = std::move(batching);
  sim::SimulationResult r = sim::simulate(sc.setup, workloads::generate(sc.run.workload));
  REQUIRE(r.violations.empty());
  return results::summarize(r.records)["slo_attainment"].get<double>();
}

}  // namespace

TEST_CASE("training is deterministic: the same seed gives the same weights", "[learn][train]") {
  torch::set_num_threads(1);
  testutil::TempDir dir("servelab-train");
  const std::string config = write_config(dir);
  learn::TrainConfig a = learn::load_train_config(config, {"train.episodes=3"});
  const std::string first = learn::train(a, {}).actor.to_json();
  CHECK(learn::train(a, {}).actor.to_json() == first);
  learn::TrainConfig b = learn::load_train_config(config, {"train.episodes=3", "train.seed=6"});
  CHECK(learn::train(b, {}).actor.to_json() != first);
}

TEST_CASE("training an ensemble dispatcher is deterministic and needs one learner",
          "[learn][train]") {
  torch::set_num_threads(1);
  testutil::TempDir dir("servelab-train-ensemble");
  const std::string path = (dir / "ens.yaml").string();
  std::ofstream(path) << "models: [inception_v3, inception_v4]\n"
      "groups:\n  ens: {members: [inception_v3, inception_v4], accuracy_table: "
      SERVELAB_SOURCE_DIR "/experiments/profiles/rafiki-inception-ensembles.json, "
      "dispatch: {name: rafiki-rl, batch_sizes: [16, 64]}}\n"
      "profile: " SERVELAB_SOURCE_DIR "/experiments/profiles/rafiki-inception.yaml\n"
      "engine: {workers: 2, max_batch: 64, exec_tier: device, slo_ms: 880}\n"
      "policies: {batching: {name: max-delay, max_delay: 0}}\n"
      "workload: {requests: 3000, duration: 10, arrival: {type: sine, peak_base: 300, "
      "period_s: 10}, access: {type: weights, weights: [0, 0, 1]}}\n"
      "train: {episodes: 2, hidden: 16, steps: 16, seed: 3}\n";
  learn::TrainConfig c = learn::load_train_config(path, {});
  CHECK(c.group == "ens");
  learn::TrainResult first = learn::train(c, {});
  CHECK(first.actor.inputs() == 64 + 1 + 2 * (1 + 2));  // K + 1 + |M| (1 + |B|)
  CHECK(first.actor.outputs() == 2 * 3);                 // |B| x (2^|M| - 1)
  CHECK(first.curve.back().decisions > 0);
  CHECK(learn::train(c, {}).actor.to_json() == first.actor.to_json());
  // A learner in the batching policy as well: which one learns is ambiguous.
  CHECK_THROWS_WITH(learn::load_train_config(path, {"policies.batching={name: rafiki-rl}"}),
                    Catch::Matchers::Contains("exactly one group"));
}

TEST_CASE("the trained policy beats fixed batching on SLO attainment", "[learn][train]") {
  torch::set_num_threads(1);
  testutil::TempDir dir("servelab-train");
  const std::string config = write_config(dir);
  learn::TrainResult trained = learn::train(learn::load_train_config(config, {}), {});
  const std::string weights = (dir / "weights.json").string();
  learn::save_mlp(trained.actor, weights);
  // Evaluated on seeds no episode used.
  for (uint64_t seed : {101, 102}) {
    INFO("seed " << seed);
    const double rl = attainment(config, {"rafiki-rl", one_param("weights", weights)}, seed);
    const double fixed = attainment(config, {"fixed", one_param("size", "16")}, seed);
    const double fixed64 = attainment(config, {"fixed", one_param("size", "64")}, seed);
    CHECK(rl > fixed);
    CHECK(rl > fixed64);
  }
  // Learning happened: the last five episodes earn more reward per request than the first
  // five (each episode has its own seeds, so single episodes are noisy).
  const auto& c = trained.curve;
  REQUIRE(c.size() == 25);
  auto mean_per_request = [](auto first, auto last) {
    double sum = 0;
    for (auto it = first; it != last; ++it) sum += it->reward / double(it->requests);
    return sum / double(last - first);
  };
  CHECK(mean_per_request(c.end() - 5, c.end()) > mean_per_request(c.begin(), c.begin() + 5) + 0.02);
}

// The deployed network (learn::Mlp, plain C++) against LibTorch on the same weights.
TEST_CASE("the plain C++ forward pass matches LibTorch on trained weights", "[learn][train]") {
  torch::set_num_threads(1);
  testutil::TempDir dir("servelab-train");
  learn::TrainConfig cfg = learn::load_train_config(write_config(dir), {"train.episodes=2"});
  learn::Mlp net = learn::train(cfg, {}).actor;
  torch::manual_seed(7);
  torch::Tensor x = torch::rand({16, int64_t(net.inputs())});
  torch::Tensor y = x;
  const auto& layers = net.layers();
  for (size_t k = 0; k < layers.size(); ++k) {
    const auto& l = layers[k];
    torch::Tensor w = torch::from_blob(const_cast<float*>(l.weight.data()),
                                       {int64_t(l.outputs), int64_t(l.inputs)});
    torch::Tensor b = torch::from_blob(const_cast<float*>(l.bias.data()), {int64_t(l.outputs)});
    y = torch::nn::functional::linear(y, w, b);
    if (k + 1 < layers.size()) y = torch::tanh(y);
  }
  std::vector<float> out(net.outputs());
  for (int64_t i = 0; i < 16; ++i) {
    torch::Tensor row = x[i].contiguous();
    net.forward({row.data_ptr<float>(), net.inputs()}, out);
    for (size_t a = 0; a < out.size(); ++a)
      CHECK(out[a] == Approx(y[i][int64_t(a)].item<float>()).margin(1e-5));
  }
}
