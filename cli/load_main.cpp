// `servelab load --url URL WORKLOAD.yaml --out DIR`: generate the workload of a YAML file and
// send it to a running server; write DIR/requests.csv, DIR/summary.json, DIR/workload.yaml.
// Exit status: 0 done, 1 the load failed (see --max-failed-fraction), 2 bad options or files.
#include <yaml-cpp/yaml.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "capacity/loadgen_summary.h"
#include "cli/load_scenario.h"
#include "cli/scenario_options.h"
#include "cli/subcommands.h"
#include "config/run_config.h"
#include "config/yaml_util.h"
#include "workloads/loadgen/loadgen.h"
#include "workloads/workload.h"

namespace servelab::cli {
namespace {

namespace po = boost::program_options;

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');)
    if (!name.empty()) names.push_back(name);
  return names;
}

// The names in `models:`, read as every mode reads them (config/run_config.h).
// The YAML `models:` list's names and their SLOs (slo_ms) into `o`.
void yaml_models(const YAML::Node& models, const std::string& file, loadgen::LoadOptions& o) {
  if (!models) return;
  for (const config::ModelEntry& m : config::parse_models_section(models, {file, "models"})) {
    o.model_names.push_back(m.name);
    o.model_slo.push_back(m.slo);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("--image '" + path + "': cannot open file");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string content_type_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (auto& ch : ext) ch = static_cast<char>(std::tolower(ch));
  if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
  if (ext == ".png") return "image/png";
  return "application/octet-stream";
}

// The registered workload types, for --help.
void print_workload_types(std::ostream& out) {
  auto list = [&](const char* what, const std::vector<workloads::WorkloadTypeHelp>& types) {
    out << what << ":\n";
    for (const auto& t : types) out << "  " << t.name << ": " << t.help << "\n";
  };
  list("Arrival processes (workload.arrival.type; every type also takes seed)",
       workloads::arrival_processes());
  list("Access patterns (workload.access.type; every type also takes seed)",
       workloads::access_patterns());
}

// The command line of `servelab load`.
struct LoadArgs {
  std::string url, workload_file, out_dir, image, models;
  double timeout = 30, slo_ms = 0;
  double max_failed_fraction = 1;  // above it the run exits 1; none completed: 1 as well
  bool send_slo = false;
  uint32_t max_connections = 1024;
  std::optional<capacity::ScenarioSettings> scenario;  // --scenario: LoadGen's rules
};

// Parses the command line into `a`; false when --help was asked for (and printed).
bool parse_args(int argc, char** argv, LoadArgs& a) {
  po::options_description opts("usage: servelab load --url URL WORKLOAD.yaml --out DIR [options]");
  opts.add_options()("help,h", "show this help and the workload types")(
      "url", po::value(&a.url)->required(), "server base URL, e.g. http://127.0.0.1:8080")(
      "out", po::value(&a.out_dir)->required(), "results folder (created if missing)")(
      "image", po::value(&a.image)->required(), "file sent as the body of every request")(
      "models", po::value(&a.models), "model names a,b,c (default: the YAML `models:` list)")(
      "timeout", po::value(&a.timeout), "seconds per request before it counts as Timeout (30)")(
      "max-connections", po::value(&a.max_connections), "open loop: socket limit (1024)")(
      "slo-ms", po::value(&a.slo_ms),
      "latency SLO for attainment and overdue counts (models' own: `models: [{name, slo_ms}]`)")(
      "max-failed-fraction", po::value(&a.max_failed_fraction),
      "exit with status 1 when more than this fraction (0..1) of the requests did not "
      "complete (default 1: only when none completed)")(
      "send-slo", po::bool_switch(&a.send_slo),
      "send each request's SLO in X-SLO-Ms (the server's per-request SLO)")(
      "workload", po::value(&a.workload_file)->required(), "YAML file with `workload:`");
  add_scenario_options(opts);
  po::positional_options_description positional;
  positional.add("workload", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(opts).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    print_workload_types(std::cout);
    return false;
  }
  po::notify(vm);
  if (vm.count("scenario")) a.scenario = scenario_settings(vm);
  if (!(a.max_failed_fraction >= 0 && a.max_failed_fraction <= 1))
    throw std::invalid_argument("--max-failed-fraction must be between 0 and 1");
  return true;
}

// The workload file, read as every mode reads YAML (syntax errors and duplicate keys, with
// lines); std::invalid_argument when it is missing or malformed.
YAML::Node load_workload_file(const std::string& file) {
  if (!std::filesystem::is_regular_file(file))
    throw std::invalid_argument(file + ": no such workload file");
  try {
    return config::load_file(file);
  } catch (const ConfigError& e) {
    throw std::invalid_argument(e.what());
  }
}

// What the load generator sends: the models (--models, else the file's `models:` list with
// their SLOs), the image, and the limits of the command line.
loadgen::LoadOptions load_options(const LoadArgs& a, const YAML::Node& doc) {
  loadgen::LoadOptions options;
  options.url = a.url;
  if (a.models.empty()) yaml_models(doc["models"], a.workload_file, options);
  else options.model_names = split_names(a.models);
  if (options.model_names.empty())
    throw std::invalid_argument("no model names: pass --models a,b,c or list `models:` in " +
                                a.workload_file);
  options.body = read_file(a.image);
  options.content_type = content_type_of(a.image);
  options.timeout = a.timeout;
  options.max_connections = a.max_connections;
  if (a.slo_ms > 0) options.slo = a.slo_ms / 1000;
  options.send_slo = a.send_slo;
  return options;
}

// requests.csv and summary.json (with the load generator's own figures) into the results
// folder, and a one-line digest on stdout.
// Returns the summary.
nlohmann::json write_results(const LoadArgs& a, const results::RunRecords& records,
                             const loadgen::LoadStats& stats) {
  auto summary = results::summarize(records);
  summary["loadgen"] = {{"url", a.url},
                        {"connections", stats.connections},
                        {"retries", stats.retries},
                        {"send_lag_ms_mean", stats.send_lag_mean * 1e3},
                        {"send_lag_ms_max", stats.send_lag_max * 1e3},
                        {"first_error", stats.first_error}};
  results::write_requests_csv(a.out_dir + "/requests.csv", records);
  results::write_json(a.out_dir + "/summary.json", summary);
  std::printf("completed %s of %s, failed %s, throughput %s rps, p50 %s ms, p99 %s ms -> %s\n",
              summary["completed"].dump().c_str(), summary["requests"].dump().c_str(),
              summary["failed"].dump().c_str(), summary["throughput_rps"].dump().c_str(),
              summary["latency_ms"]["p50"].dump().c_str(),
              summary["latency_ms"]["p99"].dump().c_str(), a.out_dir.c_str());
  return summary;
}

// 1 when the load failed (no request completed, or too many did not: a server that is down
// or broken must not look like a finished run to a script), else 0.
int load_status(const LoadArgs& a, const nlohmann::json& summary) {
  const double requests = summary.value("requests", 0.0);
  const double completed = summary.value("completed", 0.0);
  if (requests == 0) return 0;
  const double failed = (requests - completed) / requests;
  if (completed > 0 && failed <= a.max_failed_fraction) return 0;
  if (completed == 0) {
    std::fprintf(stderr, "servelab load: none of %.0f requests completed: exit status 1\n",
                 requests);
  } else {
    std::fprintf(stderr, "servelab load: %.0f of %.0f requests did not complete, more than "
                 "--max-failed-fraction %g: exit status 1\n",
                 requests - completed, requests, a.max_failed_fraction);
  }
  return 1;
}

// --scenario: the scenario's trials, then the reported run written as any run, with
// loadgen_summary.txt beside it.
int run_scenario(const LoadArgs& a, const loadgen::LoadOptions& options,
                 const workloads::WorkloadSpec& spec) {
  std::fprintf(stderr, "servelab load: LoadGen scenario %s against %s\n",
               capacity::scenario_name(a.scenario->scenario).c_str(), a.url.c_str());
  LoadScenarioRun run = run_load_scenario(options, spec, *a.scenario, &std::cerr);
  std::filesystem::create_directories(a.out_dir);
  std::ofstream(a.out_dir + "/workload.yaml") << workloads::to_yaml(run.spec) << "\n";
  const nlohmann::json summary = write_results(a, run.records, run.stats);
  capacity::write_text(a.out_dir + "/loadgen_summary.txt", run.loadgen_summary);
  return load_status(a, summary);
}

int run(int argc, char** argv) {
  LoadArgs a;
  if (!parse_args(argc, argv, a)) return 0;
  const YAML::Node doc = load_workload_file(a.workload_file);
  const loadgen::LoadOptions options = load_options(a, doc);
  if (!doc["workload"]) throw std::invalid_argument(a.workload_file + ": no `workload:` section");
  const auto spec = workloads::parse_workload(doc["workload"],
                                              static_cast<uint32_t>(options.model_names.size()));
  if (a.scenario) return run_scenario(a, options, spec);
  const auto workload = workloads::generate(spec);
  std::filesystem::create_directories(a.out_dir);
  std::ofstream(a.out_dir + "/workload.yaml") << workloads::to_yaml(spec) << "\n";
  std::fprintf(stderr, "servelab load: %zu requests (%s) to %s\n", workload.models.size(),
               spec.arrival.type.c_str(), a.url.c_str());
  loadgen::LoadStats stats;
  const auto records = loadgen::run_load(options, workload, &stats);
  const nlohmann::json summary = write_results(a, records, stats);
  if (!stats.first_error.empty())
    std::fprintf(stderr, "servelab load: first transport error: %s\n", stats.first_error.c_str());
  return load_status(a, summary);
}

}  // namespace

int load_main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // bad options, specs, files: one clear line
    std::fprintf(stderr, "servelab load: %s\n", e.what());
    return 2;
  }
}

}  // namespace servelab::cli
