// `groups:` in a run configuration: clear errors for broken groups and accuracy tables, the
// table read into per-subset accuracies, and the summary's mean accuracy for `all` and
// `fixed` subsets computed by hand from the digits table (experiments/profiles/
// digits-ensembles.json, measured by scripts/digits_models.py).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "config/groups_yaml.h"
#include "config/yaml_util.h"
#include "results/records.h"
#include "simulator/sim_config.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

const std::string kSource = SERVELAB_SOURCE_DIR;
const std::string kTable = kSource + "/experiments/profiles/digits-ensembles.json";

// Four digits models on caffenet's paper costs, a group of `group` (YAML), `extra` appended.
std::string config_yaml(const std::string& group, const std::string& extra = "") {
  return "profile: " + kSource + "/experiments/profiles/rafiqi-caffenet.yaml\n"
         "models:\n"
         "  - {name: digits_linear, profile_model: caffenet}\n"
         "  - {name: digits_mlp, profile_model: caffenet}\n"
         "  - {name: digits_cnn_small, profile_model: caffenet}\n"
         "  - {name: digits_cnn, profile_model: caffenet}\n"
         "groups:\n  " + group + "\n" + extra +
         "workload: {requests: 40, arrival: {type: closed, concurrency: 1}, access: {type: "
         "weights, weights: [0, 0, 0, 0, 1]}}\n";
}

std::string group(const std::string& subset, const std::string& table = kTable) {
  return "ens: {members: [digits_linear, digits_mlp, digits_cnn_small, digits_cnn], "
         "accuracy_table: " + table + ", subset: " + subset + "}";
}

sim::SimConfig parse(const std::string& yaml) {
  return sim::parse_sim_config(YAML::Load(yaml), "g.yaml", kSource);
}

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

double mean_accuracy(const std::string& yaml) {
  sim::SimConfig c = parse(yaml);
  sim::SimulationResult r = sim::simulate(c.setup, workloads::generate(c.run.workload));
  REQUIRE(r.violations.empty());
  return results::summarize(r.records)["accuracy"].get<double>();
}

}  // namespace

TEST_CASE("groups read every subset's accuracy from the table", "[simulator][groups][config]") {
  sim::SimConfig c = parse(config_yaml(group("all")));
  REQUIRE(c.setup.groups.size() == 1);
  const sim::SimGroup& g = c.setup.groups[0];
  CHECK(g.members == std::vector<ModelId>{0, 1, 2, 3});
  CHECK(g.accuracy.of(0b0001) == 0.957328);  // digits_linear alone
  CHECK(g.accuracy.of(0b1010) == 0.985158);  // digits_mlp + digits_cnn
  CHECK(g.accuracy.of(0b1101) == 0.979592);  // linear + cnn_small + cnn
  CHECK(g.accuracy.of(0b1111) == 0.983302);
  CHECK(c.setup.models[1].accuracy == 0.974026);  // a model's own, from its single entry
  CHECK(c.resolved["groups"]["ens"]["subset"]["name"].as<std::string>() == "all");
  CHECK(parse(config_yaml(group("all"))).run.workload.num_models == 5);
}

TEST_CASE("all and fixed subsets give the table's accuracy as the run's mean",
          "[simulator][groups][ground-truth]") {
  // Every request goes to the group and every member answers: the mean is the table's entry.
  CHECK(mean_accuracy(config_yaml(group("all"))) == Approx(0.983302));
  CHECK(mean_accuracy(config_yaml(group("{name: fixed, members: [digits_mlp, digits_cnn]}"))) ==
        Approx(0.985158));
  CHECK(mean_accuracy(config_yaml(group("{name: fixed, members: [digits_linear]}"))) ==
        Approx(0.957328));
  // Sequential over the five indices: two requests each to the four models and the group.
  std::string seq = config_yaml(group("all"));
  const std::string weights = "weights, weights: [0, 0, 0, 0, 1]";
  seq.replace(seq.find(weights), weights.size(), "sequential");
  const double by_hand = (0.957328 + 0.974026 + 0.970315 + 0.985158 + 0.983302) / 5;
  CHECK(mean_accuracy(seq) == Approx(by_hand));
}

TEST_CASE("broken groups get clear errors", "[simulator][groups][config]") {
  CHECK_THAT(error_of(config_yaml("e: {members: [digits_mlp, nope], accuracy_table: " +
                                  kTable + "}")),
             Contains("g.yaml") && Contains("groups.e.members.1") && Contains("'nope' is not in models"));
  CHECK_THAT(error_of(config_yaml("e: {members: [], accuracy_table: " + kTable + "}")),
             Contains("non-empty list"));
  CHECK_THAT(error_of(config_yaml("e: {members: [digits_mlp, digits_mlp], accuracy_table: " +
                                  kTable + "}")),
             Contains("listed twice"));
  CHECK_THAT(error_of(config_yaml("digits_mlp: {members: [digits_mlp], accuracy_table: " +
                                  kTable + "}")),
             Contains("a model's name"));
  CHECK_THAT(error_of(config_yaml("e: {members: [digits_mlp]}")), Contains("accuracy_table"));
  CHECK_THAT(error_of(config_yaml(group("biggest"))),
             Contains("unknown subset policy 'biggest'") && Contains("least-loaded"));
  CHECK_THAT(error_of(config_yaml(group("{name: least-loaded, k: 5}"))), Contains("k must be in 1..4"));
  CHECK_THAT(error_of(config_yaml(group("{name: least-loaded, n: 2}"))),
             Contains("unknown parameter 'n'"));
  CHECK_THAT(error_of(config_yaml(group("{name: fixed, members: [alexnet]}"))),
             Contains("'alexnet' is not a member"));
  CHECK_THAT(error_of(config_yaml(group("all"), "groups2: 1\n")), Contains("groups2"));
}

TEST_CASE("a missing or malformed accuracy table is a clear error", "[simulator][groups][config]") {
  testutil::TempDir dir("servelab-groups");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() / name) << text;
    return (dir.path() / name).string();
  };
  CHECK_THAT(error_of(config_yaml(group("all", (dir.path() / "none.json").string()))),
             Contains("cannot read accuracy table"));
  // A directory opens as a stream and failed only when read, with std::ios_base::failure
  // (found by fuzzing): it is refused like a missing file.
  CHECK_THAT(error_of(config_yaml(group("all", dir.path().string()))),
             Contains("not a readable regular file"));
  CHECK_THAT(error_of(config_yaml(group("all", write("bad.json", "{\"ensembles\": [")))),
             Contains("not valid JSON"));
  CHECK_THAT(error_of(config_yaml(group("all", write("empty.json", "{}")))),
             Contains("no 'ensembles' list"));
  const std::string partial = write(
      "partial.json",
      R"({"ensembles": [{"members": ["digits_mlp"], "accuracy": 0.9},
                        {"members": ["digits_cnn"], "accuracy": 0.95}]})");
  CHECK_THAT(error_of(config_yaml("e: {members: [digits_mlp, digits_cnn], "
                                  "accuracy_table: " + partial + "}")),
             Contains("no entry for members [digits_mlp, digits_cnn]"));
  const std::string range = write(
      "range.json", R"({"ensembles": [{"members": ["digits_mlp"], "accuracy": 97.4}]})");
  CHECK_THAT(error_of(config_yaml("e: {members: [digits_mlp], accuracy_table: " + range + "}")),
             Contains("not in 0..1"));
}

TEST_CASE("the shipped ensemble experiment runs and its sweep key reaches the group",
          "[simulator][groups][config]") {
  // Its profile is this machine's (local); caffenet's paper costs stand in for it here. They
  // are ~100 times the digits models' (8 ms for one image against 0.1 ms), so the run keeps
  // the config but sets its own rate: the experiment's rates suit the digits costs, and at
  // some of them (400/s with Algorithm 3's batches of 16) every caffenet member is dropped at
  // its deadline and no group request has an accuracy.
  const std::string dir = kSource + "/experiments/rafiki";
  YAML::Node doc = YAML::LoadFile(dir + "/ensemble-digits.yaml");
  doc["profile"] = kSource + "/experiments/profiles/rafiqi-caffenet.yaml";
  YAML::Node models;
  for (const auto& m : doc["models"])
    models.push_back(YAML::Load("{name: " + m.as<std::string>() + ", profile_model: caffenet}"));
  doc["models"] = models;
  config::apply_override(doc, "groups.digits_ens.subset={name: least-loaded, k: 2}");
  config::apply_override(doc, "workload.duration=5");
  config::apply_override(doc, "workload.arrival.peak_base=20");
  sim::SimConfig c = sim::parse_sim_config(doc, "ensemble-digits.yaml", dir);
  REQUIRE(c.setup.groups.size() == 1);
  CHECK(c.setup.groups[0].subset.name == "least-loaded");
  sim::SimulationResult r = sim::simulate(c.setup, workloads::generate(c.run.workload));
  CHECK(r.violations.empty());
  const nlohmann::json s = results::summarize(r.records);
  CHECK(s["per_model"].contains("digits_ens"));
  CHECK(s.contains("accuracy"));
}

TEST_CASE("accuracy_table gives a run without groups its models' accuracy",
          "[simulator][groups][config]") {
  const std::string yaml =
      "profile: " + kSource + "/experiments/profiles/rafiqi-caffenet.yaml\n"
      "models:\n  - {name: digits_mlp, profile_model: caffenet}\n"
      "  - {name: digits_cnn, profile_model: caffenet}\n"
      "accuracy_table: " + kTable + "\n"
      "workload: {requests: 40, arrival: {type: closed, concurrency: 1}, access: {type: "
      "weights, weights: [1, 3]}}\n";
  sim::SimConfig c = parse(yaml);
  CHECK(c.run.accuracy_of("digits_mlp") == 0.974026);  // the table's entries alone
  CHECK(c.run.accuracy_of("digits_cnn") == 0.985158);
  sim::SimulationResult r = sim::simulate(c.setup, workloads::generate(c.run.workload));
  REQUIRE(r.violations.empty());
  size_t mlp = 0;
  for (const auto& rec : r.records.requests) mlp += rec.model == 0;
  const double expected = (mlp * 0.974026 + (40 - mlp) * 0.985158) / 40;  // by hand
  CHECK(results::summarize(r.records)["accuracy"].get<double>() == Approx(expected).epsilon(1e-12));
  CHECK_THAT(error_of("profile: " + kSource + "/experiments/profiles/rafiqi-caffenet.yaml\n"
                      "models: [caffenet]\naccuracy_table: " + kTable + "\n"),
             Contains("caffenet"));  // a model the table lacks
}
