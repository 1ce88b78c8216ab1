// A run configuration that `servelab simulate` accepts must fit the machine and the clock:
// the models and requests are counted before anything is allocated, and a run whose times
// would round away (a rate of 1e-300) is refused; each message names the field and the limit.
#include <catch2/catch.hpp>

#include "cli/subcommands.h"
#include "config/bounds.h"
#include "simulator/sim_config.h"
#include "tests/support/temp_dir.h"
#include "tests/support/watchdog.h"
#include "workloads/workload.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

const std::string kExperiment =
    std::string(SERVELAB_SOURCE_DIR) + "/experiments/rafiqi/access-patterns.yaml";

// The message of loading the shipped experiment with `overrides`, under a watchdog.
std::string error_of(std::vector<std::string> overrides) {
  return testutil::error_within([overrides] { sim::load_sim_config(kExperiment, overrides); });
}

int simulate(std::vector<std::string> args) {
  args.insert(args.begin(), "simulate");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::simulate_main(int(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("simulate limits: a million models are refused naming models.count", "[limits]") {
  const std::string limit = "1.." + std::to_string(config::kModelCount.hi);
  CHECK_THAT(error_of({"models={count: 1000000, profile_model: caffenet}"}),
             Contains("models.count") && Contains(limit) && Contains("1000000"));
  CHECK(error_of({"models={count: 20, profile_model: caffenet}"}) == "(no error)");
}

TEST_CASE("simulate limits: a rate over a huge duration is counted before it is drawn",
          "[limits]") {
  const std::string error = error_of({"workload.requests=0", "workload.duration=1e9",
                                      "workload.arrival={type: poisson, rate: 1e6}"});
  CHECK_THAT(error, Contains("workload.duration") && Contains("100000000") &&
                        Contains("workload.requests"));
}

TEST_CASE("simulate limits: times the clock cannot resolve are refused", "[limits]") {
  CHECK_THAT(error_of({"workload.arrival={type: poisson, rate: 1e-300}"}),
             Contains("rate must be in") && Contains("1e-300"));
  CHECK_THAT(error_of({"workload.arrival={type: constant, rate: 1e300}"}),
             Contains("rate must be in") && Contains("1e+300"));
  CHECK_THAT(error_of({"workload.arrival={type: closed, concurrency: 1, think_time_ms: 1e300}"}),
             Contains("think time must be in"));
  CHECK_THAT(error_of({"workload.duration=1e300"}), Contains("workload.duration must be a non-negative number of seconds, at most"));

  // Through the command: refused with the usage status, nothing run.
  testutil::TempDir dir("simulate-limits");
  const std::string out = (dir / "out").string();
  CHECK(simulate({kExperiment, "--out", out, "-q", "--set",
                  "workload.arrival={type: poisson, rate: 1e-300}"}) == 2);
}

TEST_CASE("simulate limits: a send time past the clock's range stops the schedule",
          "[limits]") {
  workloads::WorkloadSpec spec;
  spec.arrival.type = "poisson";
  spec.arrival.rate = workloads::kMinRate;  // gaps of about 2^32 s: the second passes it
  spec.requests = 50;
  CHECK_THROWS_WITH(workloads::generate(spec), Contains("a send time passes"));
}
