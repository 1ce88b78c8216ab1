// The training loop: episodes in the simulator with rafiki-rl's registry entry pointed at the
// learning agent.
#include "learn/train/trainer.h"

#include <chrono>
#include <filesystem>

#include "config/yaml_util.h"
#include "engine/control/policy_registry.h"
#include "learn/rafiki_rl.h"
#include "learn/rafiki_rl_ensemble.h"
#include "results/records.h"
#include "simulator/sim_config.h"
#include "simulator/simulator.h"
#include "workloads/workload.h"

namespace servelab::learn {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kEvalEpisode = 999999;  // episode number of the evaluation's seeds

double number(const YAML::Node& n, const char* key, double fallback, double lo, double hi,
              const std::string& file) {
  if (!n[key]) return fallback;
  double v = 0;
  try {
    v = n[key].as<double>();
  } catch (const YAML::Exception&) {
    throw ConfigError(file + ": train." + key + ": expected a number");
  }
  if (!(v >= lo && v <= hi))
    throw ConfigError(file + ": train." + key + ": must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  return v;
}

void parse_train_section(const YAML::Node& t, const std::string& file, const std::string& base,
                         TrainConfig& c) {
  if (t && !t.IsMap()) throw ConfigError(file + ": train: expected a mapping");
  for (const auto& kv : t) {
    static const std::vector<std::string> known{"episodes", "hidden", "learning_rate", "gamma",
                                                "steps", "entropy", "seed", "weights"};
    const auto key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw ConfigError(file + ": train: unknown key '" + key + "' (known: episodes, hidden, "
                        "learning_rate, gamma, steps, entropy, seed, weights)");
  }
  c.episodes = uint32_t(number(t, "episodes", 30, 1, 100000 - 1, file));
  c.agent.hidden = uint32_t(number(t, "hidden", 64, 1, 1024, file));
  c.agent.learning_rate = number(t, "learning_rate", 1e-3, 1e-7, 1, file);
  c.agent.gamma = number(t, "gamma", 0.99, 0, 1, file);
  c.agent.steps = uint32_t(number(t, "steps", 64, 1, 1 << 20, file));
  c.agent.entropy = number(t, "entropy", 0.01, 0, 10, file);
  c.agent.seed = uint64_t(number(t, "seed", 1, 0, 9e15, file));
  if (t["weights"]) {
    fs::path w = t["weights"].as<std::string>();
    c.weights = (w.is_absolute() ? w : fs::path(base) / w).lexically_normal().string();
  }
}

// Every stream gets the episode's own seed: episodes see different noise, runs repeat exactly.
void seed_episode(sim::SimConfig& sc, uint64_t seed, uint32_t episode) {
  const uint64_t base = seed * 1000003ull + episode;
  sc.setup.seed = base;
  sc.run.workload.access.seed = base;
  sc.run.workload.arrival.seed = base + 1;
}

EpisodeRow episode_row(uint32_t e, const sim::SimulationResult& r, const UpdateStats& st) {
  const nlohmann::json s = results::summarize(r.records);
  EpisodeRow row;
  row.episode = e;
  row.requests = r.records.requests.size();
  row.decisions = st.decisions;
  row.updates = st.updates;
  row.reward = st.reward;
  row.slo_attainment = s.value("slo_attainment", 0.0);
  row.overdue = s.value("overdue", uint64_t(0));
  row.throughput_rps = s.value("throughput_rps", 0.0);
  row.mean_batch = r.records.mean_batch_size;
  const double u = st.updates ? double(st.updates) : 1.0;
  row.policy_loss = st.policy_loss / u;
  row.value_loss = st.value_loss / u;
  row.entropy = st.entropy / u;
  row.decision_us = st.acts ? 1e6 * st.act_seconds / double(st.acts) : 0;
  return row;
}

// The deployed (argmax) policy's attainment on one fixed episode no training episode uses:
// the learning curve without the noise of exploration and of each episode's own seeds.
double evaluate(sim::SimConfig& sc, uint64_t seed) {
  seed_episode(sc, seed, kEvalEpisode);
  sim::SimulationResult r = sim::simulate(sc.setup, workloads::generate(sc.run.workload));
  const nlohmann::json s = results::summarize(r.records);
  const double attainment = s.value("slo_attainment", 0.0);
  return s.contains("accuracy") && s["accuracy"].is_number()
             ? attainment * s["accuracy"].get<double>() : attainment;
}

// The group whose dispatcher is rafiki-rl; "" when the batching policy is. Throws ConfigError
// unless exactly one of them learns.
std::string learning_group(const config::RunConfig& run, const std::string& path) {
  std::vector<std::string> groups;
  for (const config::GroupEntry& g : run.groups)
    if (g.dispatch.name == "rafiki-rl") groups.push_back(g.name);
  const bool batching = run.engine.control.batching.name == "rafiki-rl";
  if (batching + groups.size() != 1)
    throw ConfigError(path + ": training needs rafiki-rl as policies.batching (one model) or as "
                      "the dispatch of exactly one group (got " +
                      (batching ? std::string("the batching policy and ") : std::string()) +
                      std::to_string(groups.size()) + " group(s))");
  return batching ? "" : groups.front();
}

const config::GroupEntry& group_entry(const config::RunConfig& run, const std::string& name) {
  for (const config::GroupEntry& g : run.groups)
    if (g.name == name) return g;
  throw ConfigError("no group '" + name + "'");
}

// The learner and its action space, with rafiki-rl's registry entry (batching policy or
// ensemble dispatcher) acting through `acting` until the returned guard restores the entry
// that reads weights files.
struct LearningEntry {
  std::shared_ptr<ActorCritic> agent;
  std::function<void()> restore;
  ~LearningEntry() {
    if (restore) restore();
  }
};

void point_at_learner(const TrainConfig& cfg, ActorCriticSettings as,
                      const std::shared_ptr<std::shared_ptr<RlAgent>>& acting, LearningEntry& e) {
  register_policies();  // first, so that its call_once cannot replace the entries below later
  if (cfg.group.empty()) {
    const RlSettings rl = rl_settings(cfg.run.engine.control.batching.params);
    as.reward_scale = rl.sizes.back();
    e.agent = std::make_shared<ActorCritic>(state_size(rl), rl.sizes.size(), as);
    e.restore = [] {
      PolicyRegistry::add_batching("rafiki-rl", rafiki_rl_help(), rafiki_rl_from_file);
    };
    PolicyRegistry::add_batching("rafiki-rl", rafiki_rl_help(),
                                 [acting](const PolicyParams& p, const ModelInfo& info) {
                                   return make_rafiki_rl(rl_settings(p), info, *acting);
                                 });
    return;
  }
  const config::GroupEntry& g = group_entry(cfg.run, cfg.group);
  const EnsembleRlSettings es = ensemble_rl_settings(g.dispatch, g.members.size());
  as.reward_scale = es.sizes.back();
  e.agent = std::make_shared<ActorCritic>(ensemble_state_size(es), ensemble_actions(es), as);
  e.restore = [] { add_ensemble_dispatcher(ensemble_rl_info(ensemble_rl_from_file)); };
  add_ensemble_dispatcher(ensemble_rl_info(
      [acting](const PolicySpec& spec, std::span<const std::string> members) {
        return make_ensemble_rl(ensemble_rl_settings(spec, members.size()), *acting);
      }));
}

}  // namespace

TrainConfig load_train_config(const std::string& path, const std::vector<std::string>& overrides) {
  register_policies();  // the config names the learned policy this trains
  YAML::Node root = config::load_file(path);
  if (!root.IsMap()) throw ConfigError(path + ": expected a mapping");
  for (const std::string& o : overrides) config::apply_override(root, o);
  const std::string base = fs::path(path).parent_path().empty()
                               ? "." : fs::path(path).parent_path().string();
  TrainConfig c;
  parse_train_section(root["train"], path, base, c);
  root.remove("train");
  c.run = config::parse_run_config(root, path, base);
  c.group = learning_group(c.run, path);
  if (c.group.empty()) rl_settings(c.run.engine.control.batching.params);  // weights not read
  return c;
}

TrainResult train(const TrainConfig& cfg, const std::function<void(const EpisodeRow&)>& progress) {
  // The agent rafiki-rl acts through: the learner, or for evaluations its argmax.
  auto acting = std::make_shared<std::shared_ptr<RlAgent>>();
  LearningEntry entry;
  point_at_learner(cfg, cfg.agent, acting, entry);
  const std::shared_ptr<ActorCritic>& agent = entry.agent;
  *acting = agent;
  sim::SimConfig sc = sim::make_sim_config(cfg.run);
  TrainResult out;
  double best = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t e = 0; e < cfg.episodes; ++e) {
    const auto t0 = std::chrono::steady_clock::now();
    seed_episode(sc, cfg.agent.seed, e);
    agent->set_entropy(cfg.agent.entropy * (1.0 - double(e) / cfg.episodes));
    agent->reset_stats();
    sim::SimulationResult r = sim::simulate(sc.setup, workloads::generate(sc.run.workload));
    agent->end_episode();
    EpisodeRow row = episode_row(e + 1, r, agent->stats());
    *acting = std::make_shared<ArgmaxAgent>(agent->actor());
    row.eval_attainment = evaluate(sc, cfg.agent.seed);
    *acting = agent;
    if (out.curve.empty() || row.eval_attainment > best) {
      best = row.eval_attainment;
      out.actor = agent->actor();
      out.best_episode = e + 1;
    }
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.curve.push_back(row);
    if (progress) progress(row);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace servelab::learn
