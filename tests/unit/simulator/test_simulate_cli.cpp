// `servelab simulate` end to end, in-process: outputs, exit codes, overrides, config errors.
#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "cli/subcommands.h"
#include "config/yaml_util.h"
#include "results/records.h"
#include "simulator/sim_config.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

int simulate(std::vector<std::string> args) {
  args.insert(args.begin(), "simulate");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::simulate_main(int(argv.size()), argv.data());
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kExperiment =
    std::string(SERVELAB_SOURCE_DIR) + "/experiments/rafiqi/access-patterns.yaml";

}  // namespace

TEST_CASE("simulate writes requests.csv, summary.json and the effective config",
          "[simulator][cli]") {
  servelab::testutil::TempDir tmp_dir("servelab-simulate-cli");
  const std::filesystem::path dir = tmp_dir.path();
  REQUIRE(simulate({kExperiment, "--out", (dir / "a").string(), "-q", "--set",
                    "workload.requests=500", "--set", "workload.access={type: uniform}"}) == 0);
  results::RunRecords back = results::read_requests_csv((dir / "a" / "requests.csv").string());
  CHECK(back.requests.size() == 500);
  nlohmann::json s = nlohmann::json::parse(slurp(dir / "a" / "summary.json"));
  CHECK(s["requests"] == 500);
  CHECK(s["completed"] == 500);
  CHECK(s["per_model"].size() == 5);
  CHECK(s["simulation"]["lost"] == 0);

  // The effective config runs again to the same bytes.
  REQUIRE(simulate({(dir / "a" / "config.yaml").string(), "--out", (dir / "b").string(), "-q"}) == 0);
  CHECK(slurp(dir / "a" / "requests.csv") == slurp(dir / "b" / "requests.csv"));
  YAML::Node eff = YAML::LoadFile((dir / "a" / "config.yaml").string());
  CHECK(eff["workload"]["access"]["type"].as<std::string>() == "uniform");
  CHECK(eff["engine"]["tiers"]["device"]["models"].as<int>() == 4);
  CHECK(eff["simulation"]["seed"].as<int>() == 1);

  // --seed changes the run.
  REQUIRE(simulate({kExperiment, "--out", (dir / "c").string(), "-q", "--seed", "9", "--set",
                    "workload.requests=500", "--set", "workload.access={type: uniform}"}) == 0);
  CHECK(slurp(dir / "a" / "requests.csv") != slurp(dir / "c" / "requests.csv"));
}

TEST_CASE("simulate rejects bad usage and bad configs with exit status 2", "[simulator][cli]") {
  servelab::testutil::TempDir tmp_dir1("servelab-simulate-bad");
  const std::filesystem::path dir = tmp_dir1.path();
  CHECK(simulate({}) == 2);
  CHECK(simulate({kExperiment}) == 2);  // no --out
  CHECK(simulate({"/nonexistent.yaml", "--out", dir.string()}) == 2);
  CHECK(simulate({kExperiment, "--out", dir.string(), "--set", "engine.wrokers=2"}) == 2);
  CHECK(simulate({kExperiment, "--out", dir.string(), "--set", "policies.batching=nope"}) == 2);
  CHECK(simulate({kExperiment, "--out", dir.string(), "--bogus"}) == 2);
  CHECK(simulate({"--help"}) == 0);
  CHECK_FALSE(fs::exists(dir / "summary.json"));
}

TEST_CASE("simulation config errors name the file and key", "[simulator][config]") {
  auto err = [](const std::string& yaml) {
    try {
      sim::parse_sim_config(YAML::Load(yaml), "s.yaml",
                            std::string(SERVELAB_SOURCE_DIR) + "/experiments/rafiqi");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string base =
      "profile: ../profiles/rafiqi-caffenet.yaml\nworkload: {requests: 10, access: {type: uniform}}\n";
  CHECK_THAT(err(base + "models: [resnet]"), Contains("'resnet'") && Contains("it has: caffenet"));
  CHECK_THAT(err(base + "models: {count: 2}"), Contains("models") && Contains("profile_model"));
  CHECK_THAT(err(base + "models: [caffenet]\nsimulation: {noise: loud}"),
             Contains("simulation.noise"));
  CHECK_THAT(err(base + "models: [caffenet]\nsimulaton: {}"), Contains("unknown key 'simulaton'"));
  CHECK_THAT(err("models: [caffenet]\nworkload: {requests: 10}"), Contains("missing 'profile'"));
  CHECK_THAT(err("profile: ../profiles/rafiqi-caffenet.yaml\nmodels: [caffenet]\n"
                 "workload: {requets: 1}"),
             Contains("s.yaml") && Contains("requets"));
  CHECK_THAT(err("profile: nope.yaml\nmodels: [caffenet]\nworkload: {}"), Contains("cannot read"));
  // The simulated machine is named as a whole.
  CHECK_THAT(err(base + "models: [caffenet]\nsimulation: {speed_drift: off}"),
             Contains("simulation.speed_drift") && Contains("machine: {without: [speed_drift]}"));
  CHECK_THAT(err(base + "models: [caffenet]\nsimulation: {machine: fast}"),
             Contains("simulation.machine") && Contains("costs-only"));
  CHECK_THAT(err(base + "models: [caffenet]\nsimulation: {machine: {without: [gpu]}}"),
             Contains("unknown term 'gpu'") && Contains("served_miss"));
  CHECK_THAT(err(base + "models: [caffenet]\nsimulation: {machine: {}}"),
             Contains("simulation.machine"));
  // Names only the simulator knows: config/ leaves them, the simulator's setup checks them.
  CHECK_THAT(err(base + "models: [caffenet]\nsimulation: {event_list: calendar}"),
             Contains("s.yaml") && Contains("simulation.event_list") &&
                 Contains("known: radix, quad, heap, set"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, router: nearest}"),
             Contains("s.yaml") && Contains("cluster.router") && Contains("unknown router 'nearest'"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {router: {name: power-of-two, choices: 0}}"),
             Contains("cluster.router") && Contains("choices"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, placement: {name: static, "
                        "caffenet: '0', vgg: '1'}}"),
             Contains("s.yaml") && Contains("cluster.placement") && Contains("unknown model 'vgg'"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, placement: {name: static, "
                        "caffenet: '2'}}"),
             Contains("cluster.placement") && Contains("server '2' is not one of 0..1"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {placement: spread}"),
             Contains("cluster.placement") && Contains("unknown placement 'spread'"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, backup_after_s: -1}"),
             Contains("cluster.backup_after_s"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, backup_percentile: 0}"),
             Contains("cluster.backup_percentile") && Contains("(0, 100]"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, backup_percentile: 100.5}"),
             Contains("cluster.backup_percentile") && Contains("(0, 100]"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, backup_after_s: 0.002, "
                        "backup_percentile: 95}"),
             Contains("cluster.backup_percentile") && Contains("not both"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, cancel_copies: maybe}"),
             Contains("cluster.cancel_copies"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, cores: 0}"),
             Contains("cluster.cores") && Contains("machine"));
  CHECK_THAT(err(base + "models: [caffenet]\ncluster: {servers: 2, cores: many}"),
             Contains("cluster.cores"));
  CHECK_THAT(err("profile: local\nmodels: [caffenet]\nworkload: {}"),
             Contains("profile") && Contains("servelab run") && Contains("--set profile="));
  sim::SimConfig ok = sim::parse_sim_config(
      YAML::Load(base + "models: [caffenet, {name: b, profile_model: caffenet, contexts: 3}]"),
      "s.yaml", std::string(SERVELAB_SOURCE_DIR) + "/experiments/rafiqi");
  REQUIRE(ok.setup.models.size() == 2);
  CHECK(ok.setup.models[1].name == "b");
  CHECK(ok.setup.models[1].contexts == 3);
  CHECK(ok.setup.models[1].profile.size_bytes == 233000000);
}

TEST_CASE("simulate takes every shipped experiment file's base config", "[simulator][config]") {
  // Experiment keys belong to `servelab run`; simulate must ignore them, not reject them.
  // The models and profile are swapped for the paper profile's (local ones need measuring).
  for (const char* dir : {"rafiqi", "regression"}) {
    const fs::path folder = fs::path(SERVELAB_SOURCE_DIR) / "experiments" / dir;
    for (const auto& e : fs::directory_iterator(folder)) {
      if (e.path().extension() != ".yaml") continue;
      CAPTURE(e.path().string());
      YAML::Node doc = YAML::LoadFile(e.path().string());
      doc["profile"] = (fs::path(SERVELAB_SOURCE_DIR) / "experiments/profiles/rafiqi-caffenet.yaml").string();
      if (doc["groups"]) {  // keep the names its groups use, each on caffenet's costs
        YAML::Node models;
        for (const YAML::Node& m : doc["models"]) {
          YAML::Node entry;
          entry["name"] = m.IsMap() ? m["name"].as<std::string>() : m.as<std::string>();
          entry["profile_model"] = "caffenet";
          models.push_back(entry);
        }
        doc["models"] = models;
      } else {
        doc["models"] = YAML::Load("[caffenet]");
      }
      CHECK_NOTHROW(sim::parse_sim_config(doc, e.path().string(), folder.string()));
    }
  }
}

TEST_CASE("simulate --summary-only writes the same summary without rows and clusters run from YAML",
          "[simulator][cli][cluster]") {
  servelab::testutil::TempDir tmp_dir2("servelab-simulate-summary");
  const std::filesystem::path dir = tmp_dir2.path();
  const std::vector<std::string> common = {kExperiment, "-q", "--set", "workload.requests=300"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  REQUIRE(simulate(with({"--out", (dir / "rows").string()})) == 0);
  REQUIRE(simulate(with({"--out", (dir / "only").string(), "--summary-only"})) == 0);
  CHECK(fs::exists(dir / "rows" / "requests.csv"));
  CHECK_FALSE(fs::exists(dir / "only" / "requests.csv"));
  CHECK(slurp(dir / "rows" / "summary.json") == slurp(dir / "only" / "summary.json"));

  // Two servers behind power-of-two: every request completes; the effective config says so.
  REQUIRE(simulate(with({"--out", (dir / "two").string(), "--set",
                         "cluster={servers: 2, router: {name: power-of-two, choices: 2}}"})) == 0);
  YAML::Node eff = YAML::LoadFile((dir / "two" / "config.yaml").string());
  CHECK(eff["cluster"]["servers"].as<int>() == 2);
  CHECK(eff["cluster"]["router"]["name"].as<std::string>() == "power-of-two");
  CHECK_FALSE(eff["cluster"]["cores"]);  // none: a core per worker
  // `cores: machine` is this machine's count, written as a number into the resolved config.
  REQUIRE(simulate(with({"--out", (dir / "cores").string(), "--set",
                         "cluster={servers: 2, cores: machine}"})) == 0);
  CHECK(YAML::LoadFile((dir / "cores" / "config.yaml").string())["cluster"]["cores"].as<unsigned>() ==
        std::max(1u, std::thread::hardware_concurrency()));
  nlohmann::json s = nlohmann::json::parse(slurp(dir / "two" / "summary.json"));
  CHECK(s["completed"] == 300);
  CHECK_FALSE(s["simulation"].contains("placement"));  // every model everywhere
  // Each server's share: the 300 requests split between the two (no backups, no groups), and
  // utilization its compute seconds over its workers' share of the virtual time.
  const nlohmann::json& shares = s["simulation"]["servers"];
  REQUIRE(shares.size() == 2);
  const double workers = eff["engine"]["workers"].as<double>();
  const double span = s["simulation"]["virtual_time_s"].get<double>();
  uint64_t requests = 0;
  for (const nlohmann::json& server : shares) {
    requests += server["requests"].get<uint64_t>();
    CHECK(server["batches"].get<uint64_t>() >= 1);
    CHECK(server["utilization"].get<double>() ==
          Approx(server["compute_s"].get<double>() / (workers * span)));
    CHECK(server["utilization"].get<double>() > 0);
    CHECK(server["utilization"].get<double>() <= 1);
  }
  CHECK(requests == 300);
  CHECK_FALSE(nlohmann::json::parse(slurp(dir / "rows" / "summary.json"))["simulation"]
                  .contains("servers"));  // one server: nothing to share
  // A placement that leaves models off servers says where each one is: one replica each of
  // the 5 models, memory-balanced over 2 servers, so each server hosts some and not all.
  REQUIRE(simulate(with({"--out", (dir / "placed").string(), "--set",
                         "cluster={servers: 2, placement: {name: memory-balanced}}"})) == 0);
  const nlohmann::json placed =
      nlohmann::json::parse(slurp(dir / "placed" / "summary.json"))["simulation"]["placement"];
  CHECK(placed["name"] == "memory-balanced");
  REQUIRE(placed["hosts"].size() == 5);
  std::set<unsigned> used;
  for (const auto& [model, servers] : placed["hosts"].items()) {
    REQUIRE(servers.size() == 1);
    used.insert(servers[0].get<unsigned>());
  }
  CHECK(used == std::set<unsigned>{0, 1});
  CHECK(s["throughput_rps"].get<double>() >
        nlohmann::json::parse(slurp(dir / "rows" / "summary.json"))["throughput_rps"].get<double>());
  CHECK(simulate(with({"--out", (dir / "bad").string(), "--set", "cluster.router=nearest"})) == 2);
  CHECK(simulate(with({"--out", (dir / "bad").string(), "--set", "cluster.servers=0"})) == 2);
  CHECK(simulate(with({"--out", (dir / "bad").string(), "--set",
                       "simulation.client_timeout_s=-1"})) == 2);
}
