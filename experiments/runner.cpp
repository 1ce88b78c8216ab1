#include "experiments/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

#include "calibration/background_load.h"
#include "experiments/progress.h"
#include "experiments/results_index.h"
#include "config/run_config.h"

namespace servelab::experiments {
namespace fs = std::filesystem;

double config_requests(const YAML::Node& config) {
  YAML::Node n = get_path(config, "workload.requests");
  try {
    return n.IsDefined() && n.IsScalar() ? n.as<double>() : 1000.0;
  } catch (const YAML::Exception&) {
    return 1000.0;
  }
}

double Backend::weight(const YAML::Node& config) const { return config_requests(config); }

void Backend::calibrate(const YAML::Node&, const std::string&) {
  throw ExperimentError("this mode cannot run a calibration probe (real mode with LibTorch "
                        "does)");
}

SpeedMatch Backend::match_speed(const YAML::Node&, uint64_t, const results::RunRecords&) const {
  return {};
}

namespace {

std::string default_out_dir(const std::string& name) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return "out/" + name + "-" + buf;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

std::string emit(const YAML::Node& n) {
  YAML::Emitter e;
  e << n;
  return std::string(e.c_str()) + "\n";
}

struct Job {
  const SweepPoint* point;
  std::string mode;
  uint32_t repetition;
  uint64_t seed;
  YAML::Node config;
  double weight;
};

// --calibrate-each: every real run is preceded by a probe; the sim run of the same point and
// repetition predicts on the profile it wrote.
using RunKey = std::pair<uint32_t, uint32_t>;  // point, repetition

void calibrate_run(Job& job, Backend& real, const fs::path& out,
                   std::map<RunKey, std::string>& calibrated) {
  const RunKey key{job.point->index, job.repetition};
  if (job.mode == "real") {
    char name[64];
    std::snprintf(name, sizeof name, "p%03u-r%u-calibration.yaml", key.first, key.second);
    const std::string path = fs::absolute(out / "runs" / name).string();
    real.calibrate(job.config, path);
    calibrated[key] = path;
  }
  // The real run names it too (its engine reads model files, not costs), so that
  // --match-speed measures the run's speed against the costs its sim run is given.
  if (calibrated.count(key)) job.config["profile"] = calibrated[key];
}

}  // namespace

std::vector<PlannedRun> run_order(const ExperimentSpec& spec, const std::vector<SweepPoint>& points,
                                  const std::vector<std::string>& modes) {
  std::vector<uint32_t> reps;
  for (const SweepPoint& p : points) reps.push_back(repetitions_at(spec, p));
  const uint32_t rounds = reps.empty() ? 0 : *std::max_element(reps.begin(), reps.end());
  std::vector<PlannedRun> order;
  for (uint32_t r = 0; r < rounds; ++r)
    for (uint32_t i = 0; i < points.size(); ++i)
      if (r < reps[i])
        for (const std::string& mode : modes) order.push_back({i, r, mode});
  return order;
}

RunOutcome run_experiment(const ExperimentSpec& spec, const RunOptions& options,
                          const std::map<std::string, Backend*>& backends) {
  std::vector<std::string> modes = options.modes.empty() ? spec.modes : options.modes;
  for (const auto& m : modes) {
    auto it = backends.find(m);
    if (it == backends.end() || !it->second)
      throw ExperimentError("mode '" + m + "' is not available in this build of servelab "
                            "(sim needs the simulator; real needs the engine, server and "
                            "load generator)");
  }
  const bool both = std::find(modes.begin(), modes.end(), "sim") != modes.end() &&
                    std::find(modes.begin(), modes.end(), "real") != modes.end();
  if ((options.match_speed || options.calibrate_each) && !both)
    throw ExperimentError("matching the simulator's speed to the real runs or calibrating "
                          "before each point needs both modes (--mode both)");
  // A point's real run (and its calibration) comes before its sim run, which needs them.
  if (options.match_speed || options.calibrate_each) modes = {"real", "sim"};
  auto points = expand_sweep(spec);
  // Resolve every config up front: a broken sweep path fails before anything runs.
  std::vector<Job> jobs;
  const auto chosen = [&](uint32_t point) {
    return options.points.empty() || std::find(options.points.begin(), options.points.end(),
                                               point) != options.points.end();
  };
  for (const PlannedRun& run : run_order(spec, points, modes)) {
    if (!chosen(run.point)) continue;
    const SweepPoint& p = points[run.point];
    const uint64_t seed = spec.seeds[run.repetition];
    YAML::Node cfg = resolve_config(spec, p, run.mode, seed);
    double w = backends.at(run.mode)->weight(cfg);
    jobs.push_back(Job{&p, run.mode, run.repetition, seed, cfg, w});
  }

  RunOutcome outcome;
  outcome.out_dir = options.out_dir.empty() ? default_out_dir(spec.name) : options.out_dir;
  fs::path out(outcome.out_dir);
  fs::create_directories(out / "runs");
  write_text(out / "experiment.yaml", emit(spec.doc));
  ResultsIndex index((out / "results.db").string(), spec.sweep);
  for (const auto& p : points)
    if (chosen(p.index)) index.add_point(p);

  for (const auto& mode : modes) {
    std::vector<YAML::Node> configs;
    for (const auto& j : jobs)
      if (j.mode == mode) configs.push_back(j.config);
    backends.at(mode)->prepare(configs);
  }
  double total = 0;
  for (const auto& j : jobs) total += j.weight;
  ProgressBar bar(jobs.size(), total, options.quiet ? nullptr : stderr);
  SpeedMatch speed;  // of the last real run
  std::map<RunKey, std::string> calibrated;  // its calibration profile
  for (auto& job : jobs) {
    bool scaled = false;
    if (job.mode == "real") speed = SpeedMatch{};
    if (options.calibrate_each)
      calibrate_run(job, *backends.at("real"), out, calibrated);
    if (options.match_speed && job.mode == "sim" && std::isfinite(speed.factor)) {
      job.config["simulation"]["cost_scale"] = speed.factor;
      if (!speed.trace.empty())
        job.config["simulation"]["speed_trace"] = config::speed_trace_yaml(speed.trace);
      if (std::isfinite(speed.jitter)) job.config["simulation"]["jitter"] = speed.jitter;
      scaled = true;
    }
    char name[64];
    std::snprintf(name, sizeof name, "p%03u-%s-r%u", job.point->index, job.mode.c_str(),
                  job.repetition);
    fs::path dir = out / "runs" / name;
    fs::create_directories(dir);
    write_text(dir / "config.yaml", emit(job.config));
    bar.start(job.mode + " " + job.point->label);
    RunRow row{job.point->index, job.mode, job.repetition, job.seed,
               (fs::path("runs") / name).string(), "ok", "", 0};
    nlohmann::json summary;
    auto t0 = std::chrono::steady_clock::now();
    try {
      Backend& body = *backends.at(job.mode);
      nlohmann::json unscaled;
      if (scaled) {  // first, so that the scaled run leaves its config.yaml
        YAML::Node plain = YAML::Clone(job.config);
        plain["simulation"]["cost_scale"] = 1.0;
        plain["simulation"].remove("speed_trace");
        plain["simulation"].remove("jitter");
        unscaled = results::summarize(body.run(plain, job.seed, dir.string()));
      }
      // Other processes' CPU while a real run ran (with --url, the server's too): a point
      // whose prediction misses may have shared the machine. Sim summaries stay as they were.
      std::optional<BackgroundLoad> background;
      if (job.mode == "real") background.emplace();
      results::RunRecords records = body.run(job.config, job.seed, dir.string());
      const double background_cores = background ? background->cores() : -1;
      summary = results::summarize(records);
      if (background_cores >= 0) summary["background_cores"] = background_cores;
      if (options.match_speed && job.mode == "real") {
        speed = backends.at("sim")->match_speed(job.config, job.seed, records);
        summary["speed_factor"] =
            std::isfinite(speed.factor) ? nlohmann::json(speed.factor) : nlohmann::json();
      }
      if (const auto c = calibrated.find({job.point->index, job.repetition});
          job.mode == "sim" && c != calibrated.end())
        summary["calibrated_profile"] = c->second;
      if (scaled) {
        summary["cost_scale"] = speed.factor;
        summary["speed_windows"] = speed.trace.size();
        if (std::isfinite(speed.jitter)) summary["jitter"] = speed.jitter;
        summary["unscaled"] = std::move(unscaled);
      }
      results::write_requests_csv((dir / "requests.csv").string(), records);
      results::write_json((dir / "summary.json").string(), summary);
    } catch (const std::exception& e) {
      row.status = "failed";
      row.error = e.what();
      ++outcome.failed;
      if (outcome.first_error.empty()) outcome.first_error = std::string(name) + ": " + e.what();
      write_text(dir / "error.txt", row.error + "\n");
    }
    row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    index.add_run(row, summary);
    ++outcome.runs;
    bar.done(job.weight);
    if (options.fail_fast && row.status != "ok") break;
  }
  bar.finish();
  return outcome;
}

}  // namespace servelab::experiments
