// `servelab search CONFIG --maximize METRIC --subject-to 'p99_ms<=50' --out DIR`: configuration
// search under an SLO. The config's sweep (and --set axes) is the space; every point, or a
// seeded sample of --trials of them, runs in the simulator through the experiments' runner
// (DIR/sim: results.db and every run); capacity/config_search.h picks the feasible best and
// the Pareto front; --measure-best K runs the best K on the real engine (DIR/measured) and
// puts predicted against measured. Writes DIR/search.json and DIR/search.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "capacity/config_search.h"
#include "cli/search_page.h"
#include "cli/subcommands.h"
#include "experiments/backends.h"
#include "experiments/config_metrics.h"
#include "experiments/results_index.h"
#include "experiments/runner.h"

namespace servelab::cli {
namespace {

namespace po = boost::program_options;
namespace ex = servelab::experiments;
namespace fs = std::filesystem;

po::options_description search_options() {
  po::options_description opts("servelab search options");
  opts.add_options()("help,h", "show this help")(
      "config", po::value<std::string>()->required(), "experiment YAML: its sweep is the space")(
      "out", po::value<std::string>()->required(), "results folder")(
      "maximize", po::value<std::string>(), "metric to maximize (default throughput_rps)")(
      "minimize", po::value<std::string>(),
      "metric to minimize instead; also servers or memory_bytes, what a config provisions")(
      "subject-to", po::value<std::vector<std::string>>()->composing(),
      "constraint METRIC<=X or METRIC>=X, e.g. 'p99_ms<=50' (repeatable)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "path=value as for servelab run; a list adds a search axis: "
      "--set 'engine.max_batch=[1,4,16,64]'")(
      "trials", po::value<uint64_t>()->default_value(0),
      "simulate a uniform random sample of this many points, without repetition, drawn by "
      "--seed, when the space is larger (0: every point); for a grid too large to simulate "
      "whole: it finds a near-best, to refine with a finer grid around it")(
      "seed", po::value<uint64_t>()->default_value(1), "the sample's seed")(
      "margin", po::value<double>()->default_value(0),
      "judge the simulated candidates with each bound moved this fraction to the safe side "
      "(0.2: p99_ms<=450 as p99_ms<=360), e.g. the prediction's measured error; the "
      "measured best are judged by the bounds as written")(
      "measure-best", po::value<uint32_t>()->default_value(0),
      "run the best K on the real engine and compare with the prediction")(
      "profile", po::value<std::string>()->default_value(""), "as for servelab run")(
      "models-dir", po::value<std::string>()->default_value("models"), "TorchScript models")(
      "url", po::value<std::string>()->default_value(""), "real runs: this server")(
      "image", po::value<std::string>()->default_value(""), "as for servelab run")(
      "quiet,q", "no progress bars");
  return opts;
}

struct SearchArgs {
  ex::ExperimentSpec spec;
  std::string out;
  std::vector<capacity::Constraint> constraints;
  capacity::Objective objective;
  uint64_t trials = 0, seed = 1;
  uint32_t measure_best = 0;
  double margin = 0;  // of every constraint, for the simulated candidates
  bool quiet = false;
};

// What a search may rank by or bound: the summaries' metrics and the configs' own.
std::vector<std::string> metric_names() {
  auto known = ex::summary_metric_names();
  for (const auto& m : ex::config_metric_names()) known.push_back(m);
  return known;
}

SearchArgs search_args(const po::variables_map& vm) {
  SearchArgs a;
  a.spec = ex::load_experiment(vm["config"].as<std::string>());
  if (vm.count("set"))
    for (const auto& s : vm["set"].as<std::vector<std::string>>()) ex::apply_set(a.spec, s);
  a.out = vm["out"].as<std::string>();
  const auto known = metric_names();
  if (vm.count("maximize") && vm.count("minimize"))
    throw std::invalid_argument("--maximize and --minimize: give one");
  if (vm.count("minimize"))
    a.objective = {capacity::metric_named(vm["minimize"].as<std::string>(), known), false};
  if (vm.count("maximize"))
    a.objective = {capacity::metric_named(vm["maximize"].as<std::string>(), known), true};
  if (vm.count("subject-to"))
    for (const auto& c : vm["subject-to"].as<std::vector<std::string>>())
      a.constraints.push_back(capacity::parse_constraint(c, known));
  a.trials = vm["trials"].as<uint64_t>();
  a.seed = vm["seed"].as<uint64_t>();
  a.measure_best = vm["measure-best"].as<uint32_t>();
  a.margin = vm["margin"].as<double>();
  for (const auto& c : a.constraints) capacity::with_margin(c, a.margin);  // refused early
  a.quiet = vm.count("quiet") > 0;
  return a;
}

// Each point's metrics, the means over its runs in `mode` under `dir`, and what its config
// provisions (servers, memory_bytes) where a run of it finished.
std::vector<capacity::Candidate> candidates(const ex::ExperimentSpec& spec,
                                            const std::vector<ex::SweepPoint>& points,
                                            const std::vector<uint32_t>& chosen,
                                            const fs::path& dir, const std::string& mode) {
  std::vector<capacity::Candidate> out;
  for (uint32_t i : chosen) {
    capacity::Candidate c{i, points[i].label, {}};
    std::map<std::string, std::pair<double, int>> sums;
    for (uint32_t r = 0; r < ex::repetitions_at(spec, points[i]); ++r) {
      char name[64];
      std::snprintf(name, sizeof name, "p%03u-%s-r%u", i, mode.c_str(), r);
      std::ifstream in(dir / "runs" / name / "summary.json");
      if (!in) continue;  // a failed run
      const nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
      for (const auto& m : ex::summary_metric_names())
        if (const double v = ex::summary_metric(s, m); !std::isnan(v)) {
          sums[m].first += v;
          sums[m].second += 1;
        }
    }
    for (const auto& [m, sum] : sums) c.metrics[m] = sum.first / sum.second;
    if (!sums.empty())
      c.metrics.merge(ex::config_metrics(ex::resolve_config(spec, points[i], mode, spec.seeds[0])));
    out.push_back(std::move(c));
  }
  return out;
}

nlohmann::json candidate_json(const capacity::Candidate& c) {
  return {{"point", c.point}, {"label", c.label}, {"metrics", c.metrics}};
}

// The best K measured on the real engine: predicted, measured and the error per metric.
nlohmann::json measure(const SearchArgs& a, const std::vector<ex::SweepPoint>& points,
                       const capacity::SearchOutcome& found, ex::Backend& real) {
  std::vector<uint32_t> best;
  for (size_t i = 0; i < found.ranked.size() && i < a.measure_best; ++i)
    best.push_back(found.ranked[i].point);
  ex::RunOptions ro;
  ro.modes = {"real"};
  ro.out_dir = (fs::path(a.out) / "measured").string();
  ro.points = best;
  ro.quiet = a.quiet;
  ex::run_experiment(a.spec, ro, {{"real", &real}});
  const auto measured = candidates(a.spec, points, best, ro.out_dir, "real");
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < measured.size(); ++i) {
    nlohmann::json row = {{"label", measured[i].label}, {"predicted", found.ranked[i].metrics},
                          {"measured", measured[i].metrics}};
    for (const char* m : {"throughput_rps", "latency_p99_ms", "latency_mean_ms"}) {
      const auto p = found.ranked[i].metrics.find(m), r = measured[i].metrics.find(m);
      if (p != found.ranked[i].metrics.end() && r != measured[i].metrics.end() && r->second != 0)
        row["error"][m] = p->second / r->second - 1;
    }
    row["constraints_met"] = std::all_of(a.constraints.begin(), a.constraints.end(),
                                         [&](const auto& k) { return k.holds(measured[i]); });
    rows.push_back(row);
  }
  return rows;
}

std::string markdown(const SearchArgs& a, const nlohmann::json& j) {
  std::string md = "# Configuration search: " + a.spec.name + "\n\n";
  md += std::string(a.objective.maximize ? "Maximize " : "Minimize ") + a.objective.metric;
  for (const auto& c : a.constraints) md += ", subject to " + c.text;
  if (a.margin > 0) {
    md += " (the simulated candidates judged by";
    for (const auto& c : a.constraints) md += " " + capacity::with_margin(c, a.margin).text;
    md += ")";
  }
  md += ". " + std::to_string(j["evaluated"].get<size_t>()) + " of " +
        std::to_string(j["space"].get<size_t>()) + " configurations simulated.\n\n";
  if (j["ranked"].empty()) {
    md += "No configuration is feasible:\n\n";
    for (const auto& r : j["infeasible"]) md += "- " + r.get<std::string>() + "\n";
    return md;
  }
  md += "| rank | configuration | " + a.objective.metric + " | p99 (ms) |\n|---|---|---|---|\n";
  int rank = 0;
  for (const auto& c : j["ranked"]) {
    if (++rank > 10) break;
    md += "| " + std::to_string(rank) + " | " + c["label"].get<std::string>() + " | " +
          table_cell(c["metrics"].value(a.objective.metric, nlohmann::json())) + " | " +
          table_cell(c["metrics"].value("latency_p99_ms", nlohmann::json())) + " |\n";
  }
  md += "\nPareto front (throughput against p99): " + std::to_string(j["pareto"].size()) +
        " configurations (search.json).\n";
  if (j.contains("measured")) md += measured_table(j["measured"]);
  return md;
}

// Draws DIR/search.png (reports/search_plot.py); the page's line for it, or a note why not.
std::string plot(const std::string& out) {
  const std::string cmd = "/usr/bin/python3 " + std::string(SERVELAB_SOURCE_DIR) +
                          "/reports/search_plot.py '" + out + "' >/dev/null";
  if (out.find('\'') == std::string::npos && std::system(cmd.c_str()) == 0)
    return "\n![throughput against p99 latency](search.png)\n";
  return "\n(no plot: reports/search_plot.py needs python3 with matplotlib)\n";
}

int run_search(const po::variables_map& vm) {
  SearchArgs a = search_args(vm);
  const auto points = ex::expand_sweep(a.spec);
  const auto chosen = capacity::sample_points(points.size(), a.trials ? a.trials : points.size(),
                                              a.seed);
  const std::string base_dir = fs::absolute(a.spec.file).parent_path().string();
  const std::string profile = vm["profile"].as<std::string>();
  const std::string models_dir = vm["models-dir"].as<std::string>();
  const std::string image = vm["image"].as<std::string>();
  auto sim = ex::make_sim_backend({profile, models_dir, base_dir, false, image});
  ex::RunOptions ro;
  ro.modes = {"sim"};
  ro.out_dir = (fs::path(a.out) / "sim").string();
  ro.points = chosen;
  ro.quiet = a.quiet;
  const ex::RunOutcome ran = ex::run_experiment(a.spec, ro, {{"sim", sim.get()}});
  if (ran.failed > 0)
    std::fprintf(stderr, "search: %zu of %zu simulated runs failed (left out); first: %s\n",
                 ran.failed, ran.runs, ran.first_error.c_str());
  if (ran.failed == ran.runs)
    throw std::runtime_error("every simulated run failed: " + ran.first_error);
  auto all = candidates(a.spec, points, chosen, ro.out_dir, "sim");
  std::erase_if(all, [](const capacity::Candidate& c) { return c.metrics.empty(); });
  std::vector<capacity::Constraint> judged;
  for (const auto& c : a.constraints) judged.push_back(capacity::with_margin(c, a.margin));
  const capacity::SearchOutcome found = capacity::select(all, judged, a.objective);
  nlohmann::json j = {{"space", points.size()}, {"evaluated", all.size()},
                      {"objective", {{"metric", a.objective.metric},
                                     {"maximize", a.objective.maximize}}},
                      {"ranked", nlohmann::json::array()}, {"pareto", nlohmann::json::array()},
                      {"infeasible", found.infeasible}};
  for (const auto& c : a.constraints) j["constraints"].push_back(c.text);
  j["margin"] = a.margin;
  for (const auto& c : all) j["all"].push_back(candidate_json(c));
  for (const auto& c : found.ranked) j["ranked"].push_back(candidate_json(c));
  for (const auto& c : found.pareto) j["pareto"].push_back(candidate_json(c));
  if (a.measure_best > 0 && !found.ranked.empty()) {
    auto real = ex::make_real_backend({vm["url"].as<std::string>(), models_dir, profile,
                                       base_dir, image, false});
    if (!real) throw std::invalid_argument("--measure-best needs the engine (LibTorch build)");
    j["measured"] = measure(a, points, found, *real);
  }
  std::ofstream(fs::path(a.out) / "search.json") << j.dump(2) << "\n";
  std::ofstream(fs::path(a.out) / "search.md") << markdown(a, j) << plot(a.out);
  if (found.ranked.empty()) {
    std::fprintf(stderr, "search: no configuration is feasible:\n");
    for (const auto& r : found.infeasible) std::fprintf(stderr, "  %s\n", r.c_str());
    return 1;
  }
  std::printf("best: %s (%s %g); %zu feasible of %zu; %s/search.md\n",
              found.ranked.front().label.c_str(), a.objective.metric.c_str(),
              found.ranked.front().metrics.at(a.objective.metric), found.ranked.size(),
              all.size(), a.out.c_str());
  return 0;
}

}  // namespace

int search_main(int argc, char** argv) {
  po::options_description opts = search_options();
  po::positional_options_description pos;
  pos.add("config", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: servelab search CONFIG.yaml --out DIR [--maximize M | --minimize M] "
                   "[--subject-to 'p99_ms<=50' ...]\n\n"
                << opts << "\n";
      return 0;
    }
    po::notify(vm);
    return run_search(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "servelab search: %s (see servelab search --help)\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "servelab search: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "servelab search: %s\n", e.what());
    return 1;
  }
}

}  // namespace servelab::cli
