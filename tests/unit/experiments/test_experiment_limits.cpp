// An experiment file that would expand to more runs than memory holds is refused, before
// anything is expanded, with a message naming the key and the limit (experiments/experiment.h).
#include <catch2/catch.hpp>

#include <sstream>

#include "experiments/experiment.h"
#include "tests/support/watchdog.h"

using namespace servelab::experiments;
using Catch::Matchers::Contains;

namespace {

const char* kBase = R"(
name: t
models: [a]
engine: {workers: 1}
workload: {requests: 10, arrival: {type: closed, concurrency: 1}}
)";

// kBase plus `extra`, parsed and expanded as `servelab run` does, under a watchdog.
std::string error_of(const std::string& extra, const std::string& set = "") {
  const std::string text = std::string(kBase) + extra;
  return servelab::testutil::error_within([text, set] {
    ExperimentSpec spec = parse_experiment(YAML::Load(text), "big.yaml");
    if (!set.empty()) apply_set(spec, set);
    const auto points = expand_sweep(spec);
    for (const SweepPoint& p : points) (void)repetitions_at(spec, p);
  });
}

// `axes` sweep axes of ten values each.
std::string sweep_of(int axes) {
  std::ostringstream out;
  out << "sweep:\n";
  for (int a = 0; a < axes; ++a) out << "  engine.x" << a << ": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n";
  return out.str();
}

}  // namespace

TEST_CASE("a sweep of nine axes of ten values is refused naming the run limit", "[limits]") {
  const std::string error = error_of(sweep_of(9));
  CHECK_THAT(error, Contains("big.yaml: sweep") && Contains(std::to_string(kMaxRuns)) &&
                        Contains("10 x 10 x 10"));
  CHECK(error_of(sweep_of(3)) == "(no error)");
}

TEST_CASE("repetitions beyond the limit are refused naming the key", "[limits]") {
  const std::string limit = "at most " + std::to_string(kMaxRepetitions);
  CHECK_THAT(error_of("repetitions: 2000000000\n"),
             Contains("'repetitions' must be " + limit) && Contains("2000000000"));
  CHECK_THAT(error_of("sweep: {engine.x: [1, 2]}\nmore_repetitions:\n"
                      "  - {where: {engine.x: 1}, repetitions: 2000000000}\n"),
             Contains("more_repetitions") && Contains(limit));
  CHECK_THAT(error_of("", "repetitions=2000000000"), Contains("--set repetitions") && Contains(limit));
}

TEST_CASE("runs are counted over points, repetitions and modes, and after --set", "[limits]") {
  // 1000 points x 200 repetitions: each factor is allowed, the product is not.
  CHECK_THAT(error_of(sweep_of(3) + "repetitions: 200\n"),
             Contains(std::to_string(kMaxRuns)) && Contains("200 repetitions"));
  std::string many = "[";
  for (int i = 0; i < 200; ++i) many += (i ? ", " : "") + std::to_string(i);
  many += "]";
  CHECK(error_of(sweep_of(4)) == "(no error)");
  CHECK_THAT(error_of(sweep_of(4), "engine.x0=" + many), Contains(std::to_string(kMaxRuns)));
}
