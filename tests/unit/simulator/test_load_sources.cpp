// Loads by source (engine/control/load_sources.h): the profile's load_sources_ms read, written
// back, scaled and checked, and simulation.load_source making a simulated miss cost the
// source's measured load. Schedules worked out by hand.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <yaml-cpp/yaml.h>

#include "config/profile_yaml.h"
#include "config/yaml_util.h"
#include "simulator/sim_config.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

// One model: a batch of 1 costs 4 ms; loaded from its file in 10 ms; through the store in
// 20 + 5 ms plus 1 ms more on its first batch (26 ms in all); from the file read cold 30 ms.
const char* kProfile =
    "models: {m: {size_bytes: 1000, batch_latency_ms: [{batch: 1, mean: 4}], "
    "load_ms: {disk->host: 10}, load_samples_ms: {disk->host: [9, 11]}, "
    "load_sources_ms: {store: {deserialize: 20, share: 5, first_batch: 1}, "
    "file-cold: {read: 12, deserialize: 18}}}}";

// A server with room for the one model, which its first request loads; two requests in a
// closed loop; `source` the simulation's load source (empty: the default).
sim::SimConfig config_with(const std::string& dir, const std::string& source) {
  std::string text = "profile: p.yaml\nmodels: [m]\n"
                     "engine: {exec_tier: host, max_batch: 1, tiers: {host: {models: 1}}}\n"
                     "workload: {requests: 2, arrival: {type: closed, concurrency: 1}}\n"
                     "simulation: {preload: none";
  if (!source.empty()) text += ", load_source: " + source;
  return sim::parse_sim_config(YAML::Load(text + "}\n"), dir + "/s.yaml", dir);
}

std::vector<double> finishes(const sim::SimConfig& c) {
  std::vector<double> out;
  for (const auto& q : sim::simulate(c.setup, workloads::generate(c.run.workload)).records.requests)
    out.push_back(q.finish);
  return out;
}

struct ProfileDir {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("load-sources-" + std::to_string(::getpid()))).string();
  ProfileDir() {
    std::filesystem::create_directories(path);
    std::ofstream(path + "/p.yaml") << kProfile;
  }
  ~ProfileDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("profile load sources are read, written back, scaled and checked",
          "[simulator][profile][sources]") {
  YAML::Node n = YAML::Load(kProfile);
  CostProfile p = config::parse_profile(n, "p.yaml");
  const auto& store = p.models[0].load_sources[int(LoadSource::Store)];
  REQUIRE(store);
  CHECK(store->deserialize == Approx(0.020));
  CHECK(store->share == Approx(0.005));
  CHECK(store->total() == Approx(0.026));
  CHECK_FALSE(p.models[0].load_sources[int(LoadSource::StoreCold)]);
  CostProfile back = config::parse_profile(config::profile_to_yaml({p, {}}), "back");
  REQUIRE(back.models[0].load_sources[int(LoadSource::FileCold)]);
  CHECK(back.models[0].load_sources[int(LoadSource::FileCold)]->total() == Approx(0.030));
  p.models[0].scale_costs(2);
  CHECK(p.models[0].load_sources[int(LoadSource::Store)]->total() == Approx(0.052));
  for (const char* bad : {"{disk: {read: 1}}", "{store: {read: -1}}", "{store: {map: 1}}",
                          "{store: 3}", "[1]"}) {
    CAPTURE(bad);
    YAML::Node b = YAML::Clone(n);
    b["models"]["m"]["load_sources_ms"] = YAML::Load(bad);
    CHECK_THROWS_WITH(config::parse_profile(b, "p.yaml"), Contains("load_sources_ms"));
  }
}

TEST_CASE("simulation.load_source makes a miss cost that source's load",
          "[simulator][sources]") {
  ProfileDir dir;
  // From the file (the default): 10 ms of load, 4 of compute; the second request hits.
  for (const char* source : {"", "file"}) {
    CAPTURE(source);
    auto file = finishes(config_with(dir.path, source));
    REQUIRE(file.size() == 2);
    CHECK(file[0] == Approx(0.014).margin(1e-9));
    CHECK(file[1] == Approx(0.018).margin(1e-9));
  }
  // Through the store: 26 ms, the first batch's extra included; from the file read cold: 30.
  auto store = finishes(config_with(dir.path, "store"));
  REQUIRE(store.size() == 2);
  CHECK(store[0] == Approx(0.030).margin(1e-9));
  CHECK(store[1] == Approx(0.034).margin(1e-9));
  CHECK(finishes(config_with(dir.path, "file-cold"))[0] == Approx(0.034).margin(1e-9));
}

TEST_CASE("a load source the profile lacks or does not know is a config error",
          "[simulator][sources][config]") {
  ProfileDir dir;
  auto err = [&](const std::string& source) {
    try {
      config_with(dir.path, source);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = err("store-cold");
  CHECK_THAT(missing, Contains("simulation.load_source") && Contains("'m'") &&
                          Contains("store-cold"));
  CHECK_THAT(err("ssd"), Contains("load_source") && Contains("file, file-cold, store, store-cold or store-sibling"));
}
