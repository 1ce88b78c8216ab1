// The typed run configuration (config/run_config.h): one parser for every mode, its bounds,
// its key lists, duplicate keys, and the effective config written back.
#include <catch2/catch.hpp>

#include <fstream>

#include "config/run_config.h"
#include "config/yaml_util.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

const char* kBase = R"(
name: t
models: [a, {name: b, profile_model: a, contexts: 3, max_batch: 7}]
profile: p.yaml
workload:
  requests: 10
  access: {type: uniform, seed: 5}
  arrival: {type: closed, concurrency: 2}
)";

// kBase plus `extra`, and the default engine section unless `extra` has one (yaml-cpp keeps
// the first of two equal keys in a string it loads).
config::RunConfig parse(const std::string& extra = "") {
  std::string text = std::string(kBase) + extra + "\n";
  if (extra.find("engine:") == std::string::npos) text += "engine: {workers: 2, max_batch: 16}\n";
  return config::parse_run_config(YAML::Load(text), "t.yaml", "/cfg");
}

std::string error_of(const std::string& extra) {
  try {
    parse(extra);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("run config: models resolve engine defaults and paths resolve against the folder",
          "[config]") {
  const config::RunConfig c = parse();
  REQUIRE(c.models.size() == 2);
  CHECK(c.profile == "/cfg/p.yaml");
  CHECK(c.contexts_of(c.models[0]) == 1);  // engine.contexts default
  CHECK(c.max_batch_of(c.models[0]) == 16);
  CHECK(c.contexts_of(c.models[1]) == 3);
  CHECK(c.max_batch_of(c.models[1]) == 7);
  CHECK(c.models[1].profile_model == "a");
  CHECK(c.cluster.servers == 1);
  CHECK(c.simulation.event_list == "radix");
}

TEST_CASE("run config: a seed sets the simulation, access and arrival streams", "[config]") {
  const config::RunConfig c = config::parse_run_config(
      YAML::Load(std::string(kBase) + "engine: {}\n"), "t.yaml", "/cfg", uint64_t{40});
  CHECK(c.simulation.seed == 40);
  CHECK(c.workload.access.seed == 40);
  CHECK(c.workload.arrival.seed == 41);
}

TEST_CASE("run config: the effective config parses back to the same values", "[config]") {
  const config::RunConfig a = parse(
      "simulation: {cost_scale: 2, io_threads: 3, client_timeout_s: 1.5, speed_trace: [[0, 1], "
      "[2, 1.5]]}\ncluster: {servers: 3, router: {name: power-of-two, choices: 2}}\n");
  const YAML::Node emitted = config::emit_run_config(a);
  const config::RunConfig b = config::parse_run_config(emitted, "", "");
  CHECK(YAML::Dump(config::emit_run_config(b)) == YAML::Dump(emitted));
  CHECK(b.simulation.io_threads == 3);
  CHECK(b.simulation.speed_trace.size() == 2);
  CHECK(b.cluster.servers == 3);
  CHECK(b.max_batch_of(b.models[1]) == 7);
  CHECK(b.warm_up.clients == 4);  // the documented defaults, written out
  CHECK(b.warm_up.requests_per_model == 8);
}

TEST_CASE("run config: simulation.machine names the simulated machine, and writes back as read",
          "[config]") {
  const config::MachineSection all = parse().simulation.machine;
  CHECK(all.all());
  const config::MachineSection bare = parse("simulation: {machine: costs-only}").simulation.machine;
  CHECK(bare.none());
  const config::MachineSection some =
      parse("simulation: {machine: {without: [served_extra, speed_drift]}}").simulation.machine;
  CHECK_FALSE(some.served_extra);
  CHECK_FALSE(some.speed_drift);
  CHECK(some.idle_slowdown);
  CHECK(some.served_miss);
  for (const char* m : {"profile", "costs-only", "{without: [idle_slowdown]}"}) {
    CAPTURE(m);
    const YAML::Node emitted =
        config::emit_run_config(parse(std::string("simulation: {machine: ") + m + "}"));
    const config::RunConfig back = config::parse_run_config(emitted, "", "");
    CHECK(YAML::Dump(config::emit_run_config(back)) == YAML::Dump(emitted));
  }
  CHECK(YAML::Dump(config::emit_run_config(parse("simulation: {machine: {without: [idle_slowdown]}}"))
                       ["simulation"]["machine"]) == "without: [idle_slowdown]");
}

TEST_CASE("run config: the real engine's warm-up is configured and bounded", "[config]") {
  const config::RunConfig c = parse("engine_warm_up: {clients: 2, requests_per_model: 0}");
  CHECK(c.warm_up.clients == 2);
  CHECK(c.warm_up.requests_per_model == 0);
  CHECK(c.warm_up.pause_quanta == 50);
  CHECK_THAT(error_of("engine_warm_up: {clients: 0}"), Contains("engine_warm_up.clients"));
  CHECK_THAT(error_of("engine_warm_up: {pause_quanta: -1}"), Contains("engine_warm_up.pause_quanta"));
}

TEST_CASE("run config: numbers outside their range are refused with the key", "[config]") {
  // Each of these once asked for unbounded memory or time (issue 14).
  CHECK_THAT(error_of("engine: {workers: 1000000000}"), Contains("engine.workers") && Contains("1..4096"));
  CHECK_THAT(error_of("engine: {quantum_ms: 1e9}"), Contains("engine.quantum_ms"));
  CHECK_THAT(error_of("engine: {max_batch: .nan}"), Contains("engine.max_batch"));
  CHECK_THAT(error_of("simulation: {io_threads: 100000}"), Contains("simulation.io_threads"));
  CHECK_THAT(error_of("cluster: {servers: 0}"), Contains("cluster.servers"));
  CHECK_THAT(error_of("simulation: {max_time_s: -1}"), Contains("simulation.max_time_s"));
}

TEST_CASE("run config: cluster.front names the real front end, a proxy balancing as "
          "least-outstanding", "[config][cluster]") {
  CHECK(parse("cluster: {servers: 2}").cluster.front == "servelab");
  const config::RunConfig n = parse("cluster: {servers: 2, front: nginx}");
  CHECK(n.cluster.front == "nginx");
  CHECK(n.cluster.router.name == "least-outstanding");  // what least_conn does
  CHECK(parse("cluster: {servers: 2, front: haproxy, router: least-outstanding}").cluster.router.name ==
        "least-outstanding");
  const YAML::Node emitted = config::emit_run_config(n);
  CHECK(emitted["cluster"]["front"].as<std::string>() == "nginx");
  const config::RunConfig back = config::parse_run_config(emitted, "", "");
  CHECK(YAML::Dump(config::emit_run_config(back)) == YAML::Dump(emitted));
  CHECK_FALSE(config::emit_run_config(parse("cluster: {servers: 2}"))["cluster"]["front"]);
  CHECK_THAT(error_of("cluster: {front: envoy}"),
             Contains("cluster.front") && Contains("servelab, nginx or haproxy"));
  CHECK_THAT(error_of("cluster: {front: nginx, router: round-robin}"),
             Contains("cluster.router") && Contains("least_conn"));
  CHECK_THAT(error_of("cluster: {front: haproxy, placement: {name: memory-balanced}}"),
             Contains("cluster.placement") && Contains("does not know placement"));
  CHECK_THAT(error_of("cluster: {front: nginx, backup_after_s: 0.005}"),
             Contains("cluster.backup_after_s") && Contains("no backup requests"));
}

TEST_CASE("run config: experiment keys pass, unknown keys are named", "[config]") {
  CHECK_NOTHROW(parse("title: x\nsweep: {engine.workers: [1, 2]}\nrepetitions: 2\n"));
  for (const auto& k : config::experiment_keys()) CHECK(config::is_experiment_key(k));
  CHECK_FALSE(config::is_experiment_key("engine"));
  CHECK_THAT(error_of("wrkload: {}"), Contains("unknown key 'wrkload'"));
}

TEST_CASE("run config files: a key written twice is an error naming its line", "[config]") {
  testutil::TempDir dir("run-config");
  const std::string path = (dir / "dup.yaml").string();
  std::ofstream(path) << "name: a\nengine:\n  workers: 1\n  workers: 4\n";
  CHECK_THROWS_WITH(config::load_file(path), Contains("dup.yaml:4") && Contains("duplicate key 'workers'"));
  std::ofstream(path) << "name: a\nmodels: [{name: x}, {name: y}]\n";
  CHECK_NOTHROW(config::load_file(path));  // the same key in two mappings is fine
}

TEST_CASE("servelab load reads models as every mode does", "[config]") {
  const auto family = config::parse_models_section(
      YAML::Load("{count: 3, profile_model: resnet}"), {"f", "models"});
  REQUIRE(family.size() == 3);
  CHECK(family[2].name == "resnet-2");
  CHECK_THROWS_WITH(config::parse_models_section(YAML::Load("{count: 2000000, profile_model: r}"),
                                                 {"f", "models"}),
                    Contains("models.count"));
  CHECK_THROWS_WITH(config::parse_models_section(YAML::Load("[a, a]"), {"f", "models"}),
                    Contains("listed twice"));
}

TEST_CASE("run config: late requests are served or dropped as engine.late_requests says",
          "[config]") {
  CHECK_FALSE(parse().engine.control.drop_late);  // served late by default
  CHECK(parse("engine: {late_requests: drop, slo_ms: 50}").engine.control.drop_late);
  CHECK_THAT(error_of("engine: {late_requests: never}"), Contains("engine.late_requests"));
  const YAML::Node emitted = config::emit_run_config(parse("engine: {late_requests: drop}"));
  CHECK(emitted["engine"]["late_requests"].as<std::string>() == "drop");
}

TEST_CASE("run config: an empty profile path is refused with the key", "[config]") {
  // `profile: !p` (a tag on an empty scalar) once reached the effective config's
  // fs::absolute(""), which threw std::filesystem::error past every handler (found by fuzzing).
  for (const char* profile : {"!p", "''"}) {
    const std::string text = std::string("name: t\nmodels: [a]\nprofile: ") + profile +
                             "\nworkload: {requests: 1}\n";
    INFO("profile: " << profile);
    CHECK_THROWS_WITH(config::parse_run_config(YAML::Load(text), "t.yaml", "/cfg"),
                      Contains("profile") && Contains("must name a cost profile file"));
  }
}

TEST_CASE("model names in configs follow the server's rule, without echoing a bad one",
          "[config]") {
  auto models_error = [](const std::string& yaml) {
    try {
      config::parse_models_section(YAML::Load(yaml), {"f", "models"});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(models_error("[resnet_50, a.b-c]") == "(no error)");
  CHECK_THAT(models_error("[\"a b\"]"), Contains("may only contain letters"));
  CHECK_THAT(models_error("[{name: \"x\\x1e\\xc4\"}]"),
             Contains("models") && Contains("may only contain letters") && !Contains("\x1e"));
  CHECK_THAT(models_error("[{name: a, profile_model: ../p}]"), Contains("profile_model"));
  CHECK_THAT(models_error("[.hidden]"), Contains("must not start with '.'"));
  CHECK_THAT(models_error("{count: 2, prefix: \"" + std::string(63, 'p') + "\", profile_model: r}"),
             Contains("models.prefix") && Contains("longer than 64"));
}
