// `servelab train CONFIG --out DIR`: trains rafiki-rl (a batching policy or a group's
// ensemble dispatcher) in the simulator and writes
// DIR/weights.json (the network), DIR/learning_curve.csv, DIR/learning_curve.png (through
// reports/learning_curve.py) and DIR/train.json (settings, training time, decision time).
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/subcommands.h"
#include "learn/train/trainer.h"

extern char** environ;

namespace servelab::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct TrainArgs {
  std::string config_path, out_dir;
  std::vector<std::string> sets;
  bool quiet = false, plot = true;
};

// Parses the command line; returns an exit status when there is nothing to run.
std::optional<int> parse_train_args(int argc, char** argv, TrainArgs& a) {
  po::options_description opts(
      "usage: servelab train CONFIG.yaml --out DIR [options]\n\n"
      "Trains rafiki-rl (Rafiki's actor-critic) in the simulator: CONFIG is a run config whose\n"
      "policies.batching is rafiki-rl (one model) or one of whose groups has dispatch rafiki-rl\n"
      "(an ensemble: batch size and members), plus a `train:` section (episodes,\n"
      "hidden, learning_rate, gamma, steps, entropy, seed, weights; docs/config.md). Writes\n"
      "DIR/weights.json (use it as rafiki-rl's `weights`), DIR/learning_curve.csv and .png, and\n"
      "DIR/train.json. Same config and seed: the same weights, bit for bit.\n"
      "Exit status: 0 ok, 2 bad usage or config, 3 output not writable.\n\nOptions");
  opts.add_options()
      ("help,h", "print this help")
      ("config", po::value(&a.config_path), "the training config (YAML); also positional")
      ("out,o", po::value(&a.out_dir), "output folder (created if missing); required")
      ("set", po::value(&a.sets)->composing(),
       "override a config value: --set train.episodes=5 (repeatable, applied in order)")
      ("no-plot", "do not draw learning_curve.png")
      ("quiet,q", "do not print a line per episode");
  po::positional_options_description pos;
  pos.add("config", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "servelab train: " << e.what() << "\n\n" << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (a.config_path.empty() || a.out_dir.empty()) {
    std::cerr << "servelab train: need a CONFIG.yaml and --out DIR\n\n" << opts << "\n";
    return 2;
  }
  a.quiet = vm.count("quiet") > 0;
  a.plot = vm.count("no-plot") == 0;
  return std::nullopt;
}

void write_curve(const std::string& path, const std::vector<learn::EpisodeRow>& curve) {
  std::ofstream out(path);
  out << "episode,seconds,requests,decisions,updates,reward,reward_per_request,slo_attainment,"
         "eval_attainment,"
         "overdue,throughput_rps,mean_batch,policy_loss,value_loss,entropy,decision_us\n";
  for (const auto& r : curve) {
    out << r.episode << ',' << r.seconds << ',' << r.requests << ',' << r.decisions << ','
        << r.updates << ',' << r.reward << ','
        << (r.requests ? r.reward / double(r.requests) : 0.0) << ',' << r.slo_attainment << ','
        << r.eval_attainment << ','
        << r.overdue << ',' << r.throughput_rps << ',' << r.mean_batch << ',' << r.policy_loss
        << ',' << r.value_loss << ',' << r.entropy << ',' << r.decision_us << '\n';
  }
  if (!out.flush()) throw std::runtime_error(path + ": cannot write");
}

nlohmann::json train_summary(const learn::TrainConfig& c, const learn::TrainResult& r) {
  double act_us = 0;
  uint64_t n = 0;
  for (const auto& row : r.curve) {
    act_us += row.decision_us * double(row.decisions);
    n += row.decisions;
  }
  return {{"config", c.run.file},
          {"episodes", c.episodes},
          {"seed", c.agent.seed},
          {"hidden", c.agent.hidden},
          {"learning_rate", c.agent.learning_rate},
          {"gamma", c.agent.gamma},
          {"steps", c.agent.steps},
          {"entropy", c.agent.entropy},
          {"training_seconds", r.seconds},
          {"decision_us", n ? act_us / double(n) : 0.0},
          {"final_slo_attainment", r.curve.empty() ? 0.0 : r.curve.back().slo_attainment},
          {"best_episode", r.best_episode},
          {"best_eval_attainment",
           r.best_episode ? r.curve[r.best_episode - 1].eval_attainment : 0.0},
          {"final_eval_attainment", r.curve.empty() ? 0.0 : r.curve.back().eval_attainment}};
}

// reports/learning_curve.py DIR; a missing Python or matplotlib is reported, not fatal.
void plot(const std::string& dir) {
  std::string script = std::string(SERVELAB_SOURCE_DIR) + "/reports/learning_curve.py";
  std::string python = "/usr/bin/python3", d = dir;
  char* args[] = {python.data(), script.data(), d.data(), nullptr};
  pid_t pid = 0;
  int status = 0;
  if (posix_spawn(&pid, python.c_str(), nullptr, nullptr, args, environ) != 0 ||
      waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::cerr << "servelab train: learning_curve.png not drawn (python3 with matplotlib?)\n";
}

}  // namespace

int train_main(int argc, char** argv) {
  TrainArgs a;
  if (const std::optional<int> status = parse_train_args(argc, argv, a)) return *status;
  learn::TrainConfig cfg;
  learn::TrainResult result;
  try {
    cfg = learn::load_train_config(a.config_path, a.sets);
    result = learn::train(cfg, [&](const learn::EpisodeRow& r) {
      if (a.quiet) return;
      std::printf("episode %u: attainment %.4f (argmax %.4f), overdue %llu, reward/request "
                  "%.3f, mean batch %.1f, %.1f s\n", r.episode, r.slo_attainment, r.eval_attainment,
                  (unsigned long long)r.overdue, r.requests ? r.reward / r.requests : 0.0,
                  r.mean_batch, r.seconds);
      std::fflush(stdout);
    });
  } catch (const ConfigError& e) {
    std::cerr << "servelab train: " << e.what() << "\n";
    return 2;
  }
  try {
    fs::create_directories(a.out_dir);
    learn::save_mlp(result.actor, (fs::path(a.out_dir) / "weights.json").string());
    if (!cfg.weights.empty()) learn::save_mlp(result.actor, cfg.weights);
    write_curve((fs::path(a.out_dir) / "learning_curve.csv").string(), result.curve);
    std::ofstream((fs::path(a.out_dir) / "train.json").string())
        << train_summary(cfg, result).dump(2) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "servelab train: " << e.what() << "\n";
    return 3;
  }
  if (a.plot) plot(a.out_dir);
  std::printf("trained %u episodes in %.1f s; weights: %s\n", cfg.episodes, result.seconds,
              (fs::path(a.out_dir) / "weights.json").c_str());
  return 0;
}

}  // namespace servelab::cli
