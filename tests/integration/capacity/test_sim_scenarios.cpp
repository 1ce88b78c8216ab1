// `servelab simulate --scenario`: the Server scenario on an M/D/1 server (Poisson arrivals,
// one worker, a fixed 10 ms a request, no batching) finds the rate that Erlang's closed form
// for the M/D/1 waiting time gives for its p99 bound; single-stream and offline report what a
// deterministic server must show; each writes loadgen_summary.txt.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli/subcommands.h"
#include "tests/integration/capacity/md1_fixture.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

constexpr double kService = test::kMd1Service;

int simulate(std::vector<std::string> args) {
  return test::run_command(cli::simulate_main, "simulate", std::move(args));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An M/D/1 server: one model costing exactly 10 ms, one worker, served as it arrives.
fs::path write_md1(const fs::path& dir) {
  test::write_md1_profile(dir);
  std::ofstream(dir / "md1.yaml")
      << "name: md1\nmodels: [md1]\nprofile: md1-profile.yaml\n"
         "engine: {workers: 1, quantum_ms: 0, max_batch: 1}\n"
         "policies: {batching: {name: gre}}\n"
         "workload: {requests: 100, arrival: {type: poisson, rate: 10}, access: {type: uniform}}\n"
         "simulation: {noise: none, seed: 1}\n";
  return dir / "md1.yaml";
}

// The rate at which the sojourn's `p` quantile is `bound`: P(W <= bound - D) = p.
double md1_rate_for(double bound, double p) {
  double lo = 0.1, hi = 1 / kService - 1e-9;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (test::md1_wait_cdf(mid, bound - kService) >= p ? lo : hi) = mid;
  }
  return lo;
}

double number_after(const std::string& text, const std::string& label) {
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex(label + R"(\s*:\s*([0-9.]+))")));
  return std::stod(m[1]);
}

}  // namespace

TEST_CASE("Erlang's M/D/1 formula holds where it is plain to check") {
  CHECK(test::md1_wait_cdf(50, 0) == Approx(0.5));          // P(W = 0) = 1 - rho
  CHECK(test::md1_wait_cdf(50, 0.0099) == Approx(0.5 * std::exp(0.5 * 0.99)));  // k = 0 only
}

TEST_CASE("the server scenario on M/D/1 finds the rate queueing theory gives for its p99 bound",
          "[capacity][scenario]") {
  testutil::TempDir tmp("servelab-md1");
  const fs::path config = write_md1(tmp.path());
  const double expected = md1_rate_for(0.050, 0.99);  // about 56 req/s
  // Early stopping off: valid exactly where the run's p99 is within 50 ms.
  REQUIRE(simulate({config.string(), "--out", (tmp.path() / "a").string(), "-q", "--summary-only",
                    "--scenario", "server", "--target-latency-ms", "50", "--min-duration-s",
                    "3000", "--early-stopping-confidence", "0", "--start-rate", "8",
                    "--search-precision", "0.005"}) == 0);
  const std::string text = slurp(tmp.path() / "a" / "loadgen_summary.txt");
  CHECK_THAT(text, Contains("Scenario : Server") && Contains("Result is : VALID"));
  const double found = number_after(text, "Highest valid scheduled rate");
  INFO("closed form " << expected << " req/s, found " << found);
  CHECK(std::abs(found / expected - 1) < 0.05);
  // LoadGen's early stopping asks for evidence that fewer than 1% are over: a lower rate.
  REQUIRE(simulate({config.string(), "--out", (tmp.path() / "b").string(), "-q", "--summary-only",
                    "--scenario", "server", "--target-latency-ms", "50", "--min-duration-s",
                    "3000", "--start-rate", "8"}) == 0);
  const double careful = number_after(slurp(tmp.path() / "b" / "loadgen_summary.txt"),
                                      "Highest valid scheduled rate");
  CHECK(careful <= found * 1.01);
  CHECK(careful > 0.9 * expected);
}

TEST_CASE("single-stream and offline on a deterministic server report its fixed costs",
          "[capacity][scenario]") {
  testutil::TempDir tmp("servelab-md1-streams");
  const fs::path config = write_md1(tmp.path());
  REQUIRE(simulate({config.string(), "--out", (tmp.path() / "s").string(), "-q", "--scenario",
                    "single-stream", "--min-duration-s", "20"}) == 0);
  const std::string single = slurp(tmp.path() / "s" / "loadgen_summary.txt");
  CHECK(number_after(single, "90.0th percentile latency \\(ns\\)") == Approx(1e7));
  CHECK_THAT(single, Contains("Result is : VALID"));
  REQUIRE(simulate({config.string(), "--out", (tmp.path() / "o").string(), "-q", "--scenario",
                    "offline", "--min-duration-s", "5", "--min-query-count", "200"}) == 0);
  const std::string offline = slurp(tmp.path() / "o" / "loadgen_summary.txt");
  // One worker, 10 ms each: 100 samples a second.
  CHECK(number_after(offline, "Samples per second") == Approx(100).epsilon(0.01));
  CHECK(fs::exists(tmp.path() / "o" / "summary.json"));
}

TEST_CASE("a single-stream run too short for its p90 is INVALID, and says why",
          "[capacity][scenario]") {
  testutil::TempDir tmp("servelab-md1-short");
  const fs::path config = write_md1(tmp.path());
  // 5 queries: a p90 needs 44 with none over it (0.9^44 < 1 - 0.99 confidence).
  REQUIRE(simulate({config.string(), "--out", (tmp.path() / "s").string(), "-q", "--scenario",
                    "single-stream", "--min-query-count", "5", "--min-duration-s", "0"}) == 0);
  const std::string text = slurp(tmp.path() / "s" / "loadgen_summary.txt");
  CHECK_THAT(text, Contains("Result is : INVALID"));
  CHECK_THAT(text, Contains("Min queries satisfied : Yes"));
  CHECK_THAT(text, Contains("Reason: not enough queries processed for a 90th percentile early "
                            "stopping estimate (would need at least 44 in all)"));
}

TEST_CASE("multi-stream sends queries of N together: a query's latency is its slowest sample",
          "[capacity][scenario]") {
  testutil::TempDir tmp("servelab-md1-multi");
  const fs::path config = write_md1(tmp.path());
  // One worker, 10 ms a sample, no batching: a query of 4 ends 40 ms after it leaves.
  // 459 queries: the fewest whose p99 LoadGen's early stopping can estimate.
  REQUIRE(simulate({config.string(), "--out", (tmp.path() / "m").string(), "-q", "--scenario",
                    "multi-stream", "--samples-per-query", "4", "--min-duration-s", "2",
                    "--min-query-count", "459"}) == 0);
  const std::string one = slurp(tmp.path() / "m" / "loadgen_summary.txt");
  CHECK_THAT(one, Contains("Scenario : MultiStream"));
  CHECK_THAT(one, Contains("samples_per_query : 4"));
  CHECK(number_after(one, "99.0th percentile latency \\(ns\\)") == Approx(4e7));
  CHECK_THAT(one, Contains("Result is : VALID"));
  // One model runs one batch at a time (its contexts): a second worker changes nothing.
  REQUIRE(simulate({config.string(), "--out", (tmp.path() / "w").string(), "-q", "--scenario",
                    "multi-stream", "--samples-per-query", "4", "--min-duration-s", "2",
                    "--set", "engine.workers=2"}) == 0);
  const std::string two = slurp(tmp.path() / "w" / "loadgen_summary.txt");
  CHECK(number_after(two, "99.0th percentile latency \\(ns\\)") == Approx(4e7));
  // Fixed batches of 4, 16 ms each: a query is one batch.
  std::ofstream(tmp.path() / "md1-profile.yaml")
      << "models:\n  md1:\n    size_mb: 1\n    batch_latency_ms:\n"
         "      - {batch: 1, mean: 10.0, stddev: 0}\n"
         "      - {batch: 4, mean: 16.0, stddev: 0}\n"
         "    load_ms: {disk->host: 1, host->device: 1}\n";
  REQUIRE(simulate({config.string(), "--out", (tmp.path() / "b").string(), "-q", "--scenario",
                    "multi-stream", "--samples-per-query", "4", "--min-duration-s", "2",
                    "--set", "engine.max_batch=4", "--set",
                    "policies.batching={name: fixed, size: 4}"}) == 0);
  const std::string batched = slurp(tmp.path() / "b" / "loadgen_summary.txt");
  CHECK(number_after(batched, "99.0th percentile latency \\(ns\\)") == Approx(1.6e7));
}

TEST_CASE("a bad scenario or setting is refused before anything runs", "[capacity][scenario]") {
  testutil::TempDir tmp("servelab-md1-bad");
  const fs::path config = write_md1(tmp.path());
  CHECK(simulate({config.string(), "--out", (tmp.path() / "x").string(), "-q", "--scenario",
                  "multi"}) == 2);
  CHECK(simulate({config.string(), "--out", (tmp.path() / "y").string(), "-q", "--scenario",
                  "server", "--target-latency-percentile", "1.5"}) == 2);
  CHECK(simulate({config.string(), "--out", (tmp.path() / "z").string(), "-q", "--scenario",
                  "multi-stream", "--samples-per-query", "0"}) == 2);
  CHECK_FALSE(fs::exists(tmp.path() / "x"));
}
