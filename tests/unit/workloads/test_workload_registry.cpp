// Contract tests over every registered arrival process and access pattern, through the public
// API only: a new registry entry is covered without touching this file.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "workloads/workload.h"

using namespace servelab::workloads;
using Catch::Contains;

namespace {

constexpr uint32_t kModels = 4;

// Every field set to a valid value other than its default, so that a key that is not read
// back shows up as a difference in the re-emitted YAML.
WorkloadSpec populated_spec() {
  WorkloadSpec s;
  s.num_models = kModels;
  s.requests = 12;
  s.duration = 30;
  s.warmup = 0.5;
  s.arrival = {.type = "poisson", .concurrency = 3, .think_time = 0.25, .rate = 7.5,
               .cv = 2.5, .state_rates = {3, 0, 40}, .state_dwell = {1.5, 0.25, 2},
               .peak_base = 50, .period = 30, .noise = 0.2, .interval = 0.125,
               .trace_file = "arrivals.csv", .time_scale = 0.5, .window_start = 1.5,
               .window_end = 9, .burst = 5, .burst_span = 0.004, .seed = 17};
  s.access = {.type = "uniform", .alpha = 1.3, .weights = {1, 2, 0, 4},
              .trace_file = "models.csv", .trace_column = "Model", .seed = 23};
  return s;
}

std::vector<std::string> names_of(const std::vector<WorkloadTypeHelp>& types) {
  std::vector<std::string> names;
  for (const auto& t : types) names.push_back(t.name);
  return names;
}

// The types the YAML schema in docs/workloads.md lists, e.g. `type: closed  # closed | poisson`.
std::set<std::string> documented_types(const std::string& section) {
  std::ifstream in(std::string(SERVELAB_SOURCE_DIR) + "/docs/workloads.md");
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find(section + ":") != std::string::npos) inside = true;
    const auto hash = line.find('#');
    if (!inside || line.find("type:") == std::string::npos || hash == std::string::npos) continue;
    std::set<std::string> names;
    std::stringstream list(line.substr(hash + 1));
    for (std::string name; list >> name;)
      if (name != "|") names.insert(name);
    return names;
  }
  return {};
}

// The emitted `arrival:` or `access:` mapping of `spec`.
YAML::Node section_of(const WorkloadSpec& spec, const std::string& section) {
  return YAML::Load(to_yaml(spec))["workload"][section];
}

// Round trip and key checks for one dimension; `set_type` picks the type in a spec.
void check_dimension(const std::string& section, const std::vector<WorkloadTypeHelp>& types,
                     void (*set_type)(WorkloadSpec&, const std::string&)) {
  REQUIRE(!types.empty());
  for (const auto& type : types) {
    CAPTURE(section, type.name);
    CHECK(!type.help.empty());
    WorkloadSpec a = populated_spec();
    set_type(a, type.name);
    const std::string emitted = to_yaml(a);
    CAPTURE(emitted);
    const WorkloadSpec b = parse_workload(YAML::Load(emitted), kModels);
    CHECK(to_yaml(b) == emitted);  // every key of the type, at full precision

    // Each key that another type has and this one lacks is rejected by name.
    const YAML::Node own = section_of(a, section);
    for (const auto& other : types) {
      WorkloadSpec o = populated_spec();
      set_type(o, other.name);
      for (const auto& kv : section_of(o, section)) {
        const std::string key = kv.first.as<std::string>();
        if (own[key]) continue;
        YAML::Node doc = YAML::Load(emitted);
        doc["workload"][section][key] = kv.second;
        CHECK_THROWS_WITH(parse_workload(doc, kModels),
                          Contains("unknown key '" + key + "' for type " + type.name));
      }
    }
  }
}

}  // namespace

TEST_CASE("every arrival process round-trips its YAML and rejects other types' keys",
          "[workloads][registry]") {
  check_dimension("arrival", arrival_processes(),
                  [](WorkloadSpec& s, const std::string& t) { s.arrival.type = t; });
}

TEST_CASE("every access pattern round-trips its YAML and rejects other types' keys",
          "[workloads][registry]") {
  check_dimension("access", access_patterns(),
                  [](WorkloadSpec& s, const std::string& t) { s.access.type = t; });
}

TEST_CASE("the listings and docs/workloads.md name the same types", "[workloads][registry]") {
  const std::set<std::string> arrivals = documented_types("arrival");
  const std::set<std::string> accesses = documented_types("access");
  CHECK(arrivals == std::set<std::string>{"closed", "poisson", "constant", "gamma", "mmpp", "sine",
                                          "trace", "bursts"});
  CHECK(accesses == std::set<std::string>{"sequential", "uniform", "zipf", "pareto", "weights",
                                           "trace"});
  const auto listed_arrivals = names_of(arrival_processes());
  const auto listed_accesses = names_of(access_patterns());
  CHECK(std::set<std::string>(listed_arrivals.begin(), listed_arrivals.end()) == arrivals);
  CHECK(std::set<std::string>(listed_accesses.begin(), listed_accesses.end()) == accesses);
}

TEST_CASE("an unknown type lists every registered name", "[workloads][registry]") {
  for (const auto& [section, types] :
       {std::pair{std::string("arrival"), arrival_processes()},
        std::pair{std::string("access"), access_patterns()}}) {
    const YAML::Node doc = YAML::Load("workload: {" + section + ": {type: bursty}}");
    for (const auto& type : types)
      CHECK_THROWS_WITH(parse_workload(doc, kModels),
                        Contains("workload." + section + ".type") && Contains("'bursty'") &&
                            Contains(type.name));
  }
}
