// `servelab simulate CONFIG.yaml --out DIR`: one simulation run, written as DIR/requests.csv,
// DIR/summary.json and DIR/config.yaml (the effective config).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "capacity/loadgen_summary.h"
#include "cli/simulate_scenario.h"
#include "cli/subcommands.h"
#include "engine/control/ensemble.h"
#include "engine/control/ensemble_dispatch.h"
#include "engine/control/policy_registry.h"
#include "results/records.h"
#include "simulator/event_list.h"
#include "engine/route/router.h"
#include "simulator/sim_config.h"
#include "simulator/simulator.h"
#include "workloads/workload.h"

namespace servelab::cli {

namespace po = boost::program_options;

namespace {

void print_policies(std::ostream& out) {
  auto list = [&](const char* what, const std::vector<std::string>& names) {
    out << "  " << what << ":";
    for (const auto& n : names) out << " " << n;
    out << "\n";
  };
  out << "Registered policies:\n";
  list("batching", PolicyRegistry::batching_names());
  list("eviction", PolicyRegistry::eviction_names());
  list("scheduling", PolicyRegistry::scheduling_names());
  out << "Routers (cluster.router, with cluster.servers > 1):\n";
  for (const route::RouterInfo& r : route::routers()) out << "  " << r.name << ": " << r.help << "\n";
  out << "Subset policies of model groups (groups.NAME.subset):\n";
  for (const SubsetPolicyInfo& p : subset_policies()) out << "  " << p.name << ": " << p.help << "\n";
  out << "Ensemble dispatchers of model groups (groups.NAME.dispatch):\n";
  for (const EnsembleDispatcherInfo& d : ensemble_dispatchers())
    out << "  " << d.name << ": " << d.help << "\n";
  list("event lists (simulation.event_list)", sim::event_list_names());
  out << "Arrival processes (workload.arrival.type):\n";
  for (const auto& t : workloads::arrival_processes()) out << "  " << t.name << ": " << t.help << "\n";
  out << "Access patterns (workload.access.type):\n";
  for (const auto& t : workloads::access_patterns()) out << "  " << t.name << ": " << t.help << "\n";
}

void print_summary_line(const std::string& name, const nlohmann::json& s) {
  auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : -1.0; };
  const auto& l = s["latency_ms"];
  std::fprintf(stdout,
               "%s: %llu requests, %llu completed, %.1f req/s, latency ms mean %.3f p50 %.3f "
               "p99 %.3f max %.3f, loads %llu\n",
               name.c_str(), s["requests"].get<unsigned long long>(),
               s["completed"].get<unsigned long long>(), num(s["throughput_rps"]),
               num(l["mean"]), num(l["p50"]), num(l["p99"]), num(l["max"]),
               s["loads"].get<unsigned long long>());
}

// The command line: what to run and where to write it.
struct SimulateArgs {
  std::string config_path, out_dir;
  std::vector<std::string> sets;
  std::optional<uint64_t> seed;
  bool summary_only = false, quiet = false;
  std::optional<capacity::ScenarioSettings> scenario;  // --scenario: LoadGen's rules
};

po::options_description simulate_options(SimulateArgs& a, uint64_t& seed) {
  po::options_description opts(
      "usage: servelab simulate CONFIG.yaml --out DIR [options]\n\n"
      "Runs the controller on a cost profile in virtual time and writes DIR/requests.csv,\n"
      "DIR/summary.json and DIR/config.yaml (the effective config). Config schema:\n"
      "docs/config.md. Exit status: 0 ok, 1 run finished with lost requests or contract\n"
      "violations, 2 bad usage or config, 3 output not writable.\n\nOptions");
  opts.add_options()
      ("help,h", "print this help and the registered policies")
      ("config", po::value(&a.config_path), "the simulation config (YAML); also positional")
      ("out,o", po::value(&a.out_dir), "output folder (created if missing); required")
      ("seed", po::value(&seed),
       "override every seed: simulation.seed=N, workload access seed N, arrival seed N+1")
      ("set", po::value(&a.sets)->composing(),
       "override a config value before parsing: --set workload.access.type=zipf "
       "(dotted key, YAML value; repeatable, applied in order)")
      ("summary-only", "write summary.json and config.yaml, not requests.csv (large sweeps)")
      ("quiet,q", "do not print the summary line");
  add_scenario_options(opts);
  return opts;
}

// Parses the command line; returns an exit status when there is nothing to run.
std::optional<int> parse_simulate_args(int argc, char** argv, SimulateArgs& a) {
  uint64_t seed = 0;
  po::options_description opts = simulate_options(a, seed);
  po::positional_options_description pos;
  pos.add("config", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "servelab simulate: " << e.what() << "\n\n" << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    print_policies(std::cout);
    return 0;
  }
  if (a.config_path.empty() || a.out_dir.empty()) {
    std::cerr << "servelab simulate: need a CONFIG.yaml and --out DIR\n\n" << opts << "\n";
    return 2;
  }
  if (vm.count("seed")) a.seed = seed;
  if (vm.count("scenario")) {
    try {
      a.scenario = scenario_settings(vm);
    } catch (const std::invalid_argument& e) {
      std::cerr << "servelab simulate: " << e.what() << "\n";
      return 2;
    }
  }
  a.summary_only = vm.count("summary-only") > 0;
  a.quiet = vm.count("quiet") > 0;
  return std::nullopt;
}

// An output file could not be written (exit status 3).
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where the records go while the run goes on: requests.csv (streamed, unless summary only)
// and the summary's running numbers. Neither keeps every record. Throws OutputError.
class RunOutputs : public results::RecordSink {
 public:
  RunOutputs(const SimulateArgs& a, const sim::SimConfig& cfg)
      : args_(a), names_(model_names(cfg)), summary_(names_, cfg.setup.slo,
                                                    cfg.run.workload.warmup) {
    summary_.expect(expected_requests(cfg.run.workload, names_.size()));
    output_step([&] {
      std::filesystem::create_directories(a.out_dir);
      if (!a.summary_only)
        rows_.emplace(a.out_dir + "/requests.csv", names_, has_accuracy(cfg.setup),
                      has_slo(cfg.setup), cfg.setup.cluster.backups());
    });
  }

  void add(const results::RequestRecord& r) override {
    if (rows_) output_step([&] { rows_->add(r); });
    summary_.add(r);
  }

  // Closes requests.csv, writes summary.json and config.yaml; returns the summary.
  nlohmann::json finish(const sim::SimConfig& cfg, const sim::SimulationResult& result) {
    if (rows_) output_step([&] { rows_->close(); });
    nlohmann::json summary = summary_.summary(result.records);
    summary["name"] = cfg.run.name;
    summary["simulation"] = {{"events", result.events},
                             {"timers", result.timers},
                             {"lost", result.lost},
                             {"virtual_time_s", result.end_time},
                             {"violations", result.violations}};
    if (!result.hosts.empty()) {  // a placement left some model off some server: say where each is
      nlohmann::json hosts = nlohmann::json::object();
      for (size_t m = 0; m < result.hosts.size() && m < cfg.setup.models.size(); ++m)
        hosts[cfg.setup.models[m].name] = result.hosts[m];
      summary["simulation"]["placement"] = {{"name", cfg.setup.cluster.placement.name},
                                            {"hosts", hosts}};
    }
    if (!result.servers.empty())
      summary["simulation"]["servers"] = server_shares(cfg, result);
    output_step([&] {
      results::write_json(args_.out_dir + "/summary.json", summary);
      std::ofstream yaml(args_.out_dir + "/config.yaml");
      YAML::Emitter em;
      em << cfg.resolved;
      yaml << em.c_str() << "\n";
      if (!yaml) throw std::runtime_error("cannot write " + args_.out_dir + "/config.yaml");
    });
    return summary;
  }

 private:
  // Each server's requests, batches, compute seconds and utilization (its workers' share of
  // the run's virtual time spent computing), in server order.
  static nlohmann::json server_shares(const sim::SimConfig& cfg,
                                      const sim::SimulationResult& result) {
    const double capacity = double(cfg.setup.control.workers) * result.end_time;
    nlohmann::json servers = nlohmann::json::array();
    for (const sim::SimulationResult::ServerShare& s : result.servers)
      servers.push_back({{"requests", s.requests},
                         {"batches", s.batches},
                         {"compute_s", s.compute_seconds},
                         {"utilization", capacity > 0 ? s.compute_seconds / capacity : 0.0}});
    return servers;
  }
  static std::vector<std::string> model_names(const sim::SimConfig& cfg) {
    return sim::target_names(cfg.setup);
  }
  // The latencies the summary will keep, where the spec says in advance: a run of one target
  // whose count decides its length (the others grow as they go).
  static std::vector<uint64_t> expected_requests(const workloads::WorkloadSpec& w,
                                                 size_t targets) {
    if (targets != 1 || w.duration > 0) return {};
    return {w.requests};  // a trace may end sooner: reserved, never touched
  }
  // Records carry an accuracy: a group's, or a model's measured one.
  static bool has_accuracy(const sim::SimulationSetup& s) {
    return !s.groups.empty() || std::any_of(s.models.begin(), s.models.end(), [](const auto& m) {
             return !std::isnan(m.accuracy);
           });
  }
  // Records carry a deadline: the run has an SLO, or a model has its own.
  static bool has_slo(const sim::SimulationSetup& s) {
    return s.slo || std::any_of(s.models.begin(), s.models.end(),
                                [](const auto& m) { return m.slo.has_value(); });
  }
  // Runs one step that writes files; its failure is an OutputError.
  template <class F>
  static void output_step(F&& step) {
    try {
      step();
    } catch (const std::exception& e) {
      throw OutputError(e.what());
    }
  }

  const SimulateArgs& args_;
  std::vector<std::string> names_;
  std::optional<results::RequestsCsvStream> rows_;
  results::SummaryBuilder summary_;
};

void report_problems(const sim::SimulationResult& result) {
  for (const auto& v : result.violations) std::cerr << "contract violation: " << v << "\n";
  if (result.lost > 0) {
    std::cerr << "servelab simulate: " << result.lost
              << " requests never completed (the run stalled or hit simulation.max_time_s)\n";
  }
}

}  // namespace

int simulate_main(int argc, char** argv) {
  SimulateArgs a;
  if (const std::optional<int> status = parse_simulate_args(argc, argv, a)) return *status;
  sim::SimConfig cfg;
  sim::SimulationResult result;
  nlohmann::json summary;
  try {
    cfg = sim::load_sim_config(a.config_path, a.sets, a.seed);
    std::optional<SimScenarioRun> scenario;
    if (a.scenario) {
      scenario = run_sim_scenario(cfg, *a.scenario, a.quiet ? nullptr : &std::cerr);
      cfg.run.workload = scenario->workload;  // the reported run, written as any run
    }
    workloads::WorkloadStream workload(cfg.run.workload);
    RunOutputs outputs(a, cfg);
    result = sim::simulate(cfg.setup, workload, outputs);
    summary = outputs.finish(cfg, result);
    if (scenario) {
      try {
        capacity::write_text(a.out_dir + "/loadgen_summary.txt", scenario->loadgen_summary);
      } catch (const std::runtime_error& e) {
        throw OutputError(e.what());
      }
    }
  } catch (const ConfigError& e) {
    std::cerr << "servelab simulate: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "servelab simulate: " << a.config_path << ": " << e.what() << "\n";
    return 2;
  } catch (const OutputError& e) {
    std::cerr << "servelab simulate: " << e.what() << "\n";
    return 3;
  }
  if (!a.quiet) print_summary_line(cfg.run.name, summary);
  report_problems(result);
  return result.violations.empty() && result.lost == 0 ? 0 : 1;
}

}  // namespace servelab::cli
