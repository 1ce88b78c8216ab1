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
#include "experiments/merge.h"
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

// Every run `options` plans, its config resolved (a broken sweep path fails before anything
// runs), in run order.
std::vector<Job> plan_jobs(const ExperimentSpec& spec, const std::vector<SweepPoint>& points,
                           const RunOptions& options, const std::vector<std::string>& modes,
                           const std::map<std::string, Backend*>& backends) {
  std::vector<Job> jobs;
  for (const PlannedRun& run : run_order(spec, points, modes)) {
    if (!options.points.empty() && std::find(options.points.begin(), options.points.end(),
                                             run.point) == options.points.end())
      continue;
    const SweepPoint& p = points[run.point];
    const uint64_t seed = spec.seeds[run.repetition];
    YAML::Node cfg = resolve_config(spec, p, run.mode, seed);
    const auto body = backends.find(run.mode);
    const double w = body != backends.end() && body->second ? body->second->weight(cfg)
                                                            : config_requests(cfg);
    jobs.push_back(Job{&p, run.mode, run.repetition, seed, cfg, w});
  }
  return jobs;
}

std::string run_name(const Job& job) {
  return experiments::run_name(job.point->index, job.mode, job.repetition);
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
  if ((options.match_speed || options.calibrate_each) && (options.task || options.merge))
    throw ExperimentError("matching speeds or calibrating before each point chains a point's "
                          "runs, which a cluster's separate tasks cannot");
  // A point's real run (and its calibration) comes before its sim run, which needs them.
  if (options.match_speed || options.calibrate_each) modes = {"real", "sim"};
  auto points = expand_sweep(spec);
  std::vector<Job> jobs = plan_jobs(spec, points, options, modes, backends);
  if (options.task && *options.task >= jobs.size())
    throw ExperimentError("task " + std::to_string(*options.task) + " of a plan of " +
                          std::to_string(jobs.size()) + " runs");
  const auto chosen = [&](uint32_t point) {
    return options.points.empty() || std::find(options.points.begin(), options.points.end(),
                                               point) != options.points.end();
  };

  RunOutcome outcome;
  outcome.out_dir = options.out_dir.empty() ? default_out_dir(spec.name) : options.out_dir;
  fs::path out(outcome.out_dir);
  fs::create_directories(out / "runs");
  std::vector<MergedRun> merged;  // read and checked before results.db is recreated
  if (options.merge) {
    std::vector<PlannedFolder> folders;
    for (const Job& job : jobs)
      folders.push_back({job.point->index, job.mode, job.repetition, job.seed});
    merged = read_merged_runs(folders, out);
  }
  std::optional<ResultsIndex> index;  // a task writes none: the merge does
  if (!options.task) {
    write_text(out / "experiment.yaml", emit(spec.doc));
    index.emplace((out / "results.db").string(), spec.sweep);
    for (const auto& p : points)
      if (chosen(p.index)) index->add_point(p);
  }
  if (options.merge) return index_merged_runs(merged, *index, outcome);

  const auto mine = [&](size_t k) { return !options.task || k == *options.task; };
  for (const auto& mode : modes) {
    std::vector<YAML::Node> configs;
    for (size_t k = 0; k < jobs.size(); ++k)
      if (mine(k) && jobs[k].mode == mode) configs.push_back(jobs[k].config);
    if (!configs.empty()) backends.at(mode)->prepare(configs);
  }
  double total = 0;
  for (size_t k = 0; k < jobs.size(); ++k)
    if (mine(k)) total += jobs[k].weight;
  ProgressBar bar(options.task ? 1 : jobs.size(), total, options.quiet ? nullptr : stderr);
  SpeedMatch speed;  // of the last real run
  std::map<RunKey, std::string> calibrated;  // its calibration profile
  for (size_t k = 0; k < jobs.size(); ++k) {
    if (!mine(k)) continue;
    Job& job = jobs[k];
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
    const std::string name = run_name(job);
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
      if (outcome.first_error.empty()) outcome.first_error = name + ": " + e.what();
      write_text(dir / "error.txt", row.error + "\n");
    }
    row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (index) index->add_run(row, summary);
    else write_run_row(dir, row);
    ++outcome.runs;
    bar.done(job.weight);
    if (options.fail_fast && row.status != "ok") break;
  }
  bar.finish();
  return outcome;
}

std::vector<std::string> planned_run_names(const ExperimentSpec& spec, const RunOptions& options) {
  const std::vector<std::string> modes = options.modes.empty() ? spec.modes : options.modes;
  const auto points = expand_sweep(spec);
  std::vector<std::string> names;
  for (const PlannedRun& run : run_order(spec, points, modes))
    if (options.points.empty() || std::find(options.points.begin(), options.points.end(),
                                            run.point) != options.points.end())
      names.push_back(run_name(run.point, run.mode, run.repetition));
  return names;
}

}  // namespace servelab::experiments
