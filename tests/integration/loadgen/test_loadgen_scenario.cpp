// `servelab load --scenario`: LoadGen's scenarios sent over HTTP to a server that answers
// after a fixed delay. Asserted: the form of loadgen_summary.txt and what the delay makes
// certain (no answer comes sooner than it), never a timing of this machine.
#include <catch2/catch.hpp>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli/subcommands.h"
#include "results/records.h"
#include "tests/integration/loadgen/fixed_delay_server.h"

using namespace servelab;
using loadgen::test::FixedDelayServer;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// Runs `servelab load` on a one-model workload file in `dir` with `extra` options.
int load(const fs::path& dir, const std::string& url, const std::vector<std::string>& extra) {
  fs::create_directories(dir);
  std::ofstream(dir / "image.jpg") << "not really a jpeg";
  std::ofstream(dir / "workload.yaml")
      << "models: [m]\nworkload: {requests: 10, arrival: {type: closed}, access: "
         "{type: uniform}}\n";
  std::vector<std::string> args = {"load", "--url", url, (dir / "workload.yaml").string(),
                                   "--out", (dir / "out").string(), "--image",
                                   (dir / "image.jpg").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::load_main(static_cast<int>(argv.size()), argv.data());
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double number_after(const std::string& text, const std::string& label) {
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex(label + R"(\s*:\s*([0-9.]+))")));
  return std::stod(m[1]);
}

}  // namespace

TEST_CASE("load --scenario single-stream sends one at a time and reports the p90",
          "[loadgen][integration][scenario]") {
  FixedDelayServer server(0.010);
  const fs::path dir = fs::path(SERVELAB_BINARY_DIR) / "test_loadgen_scenario_single";
  fs::remove_all(dir);
  // 44 queries: the fewest whose p90 LoadGen's early stopping can estimate (0.9^44 < 0.01).
  REQUIRE(load(dir, server.url(), {"--scenario", "single-stream", "--min-query-count", "44",
                                   "--min-duration-s", "0.3"}) == 0);
  const std::string text = slurp(dir / "out" / "loadgen_summary.txt");
  CHECK_THAT(text, Contains("Scenario : SingleStream") && Contains("Result is : VALID"));
  CHECK(number_after(text, "90.0th percentile latency \\(ns\\)") >= 1e7);  // the delay
  CHECK(server.max_in_flight() == 1);
  const auto records = results::read_requests_csv((dir / "out" / "requests.csv").string());
  CHECK(records.requests.size() == static_cast<size_t>(number_after(text, "Completed queries")));
}

TEST_CASE("load --scenario multi-stream sends each query whole after the previous one answered",
          "[loadgen][integration][scenario]") {
  FixedDelayServer server(0.010);
  const fs::path dir = fs::path(SERVELAB_BINARY_DIR) / "test_loadgen_scenario_multi";
  fs::remove_all(dir);
  // Early stopping off (confidence 0): a p99 of 20 queries then counts, as 459 would take
  // this test 18 s.
  REQUIRE(load(dir, server.url(), {"--scenario", "multi-stream", "--samples-per-query", "4",
                                   "--min-query-count", "20", "--min-duration-s", "0.3",
                                   "--early-stopping-confidence", "0"}) == 0);
  const std::string text = slurp(dir / "out" / "loadgen_summary.txt");
  CHECK_THAT(text, Contains("Scenario : MultiStream") && Contains("Result is : VALID"));
  CHECK(number_after(text, "99.0th percentile latency \\(ns\\)") >= 1e7);  // the delay
  CHECK(server.max_in_flight() <= 4);
  auto records = results::read_requests_csv((dir / "out" / "requests.csv").string());
  auto& r = records.requests;
  const auto queries = static_cast<size_t>(number_after(text, "Completed queries"));
  REQUIRE(r.size() == 4 * queries);
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  for (size_t q = 1; q < queries; ++q) {
    double previous_last = 0, first = 1e300;
    for (size_t i = 0; i < 4; ++i) {
      previous_last = std::max(previous_last, r[4 * (q - 1) + i].finish);
      first = std::min(first, r[4 * q + i].arrival);
    }
    INFO("query " << q);
    CHECK(first >= previous_last);
  }
}

TEST_CASE("load --scenario server lists its trials and reports the highest valid rate",
          "[loadgen][integration][scenario]") {
  FixedDelayServer server(0.005);
  const fs::path dir = fs::path(SERVELAB_BINARY_DIR) / "test_loadgen_scenario_server";
  fs::remove_all(dir);
  // A bound no answer of a 5 ms server misses: both trials valid, the search still climbing.
  REQUIRE(load(dir, server.url(), {"--scenario", "server", "--target-latency-ms", "5000",
                                   "--min-duration-s", "0.5", "--min-query-count", "20",
                                   "--early-stopping-confidence", "0", "--start-rate", "40",
                                   "--max-trials", "2"}) == 0);
  const std::string text = slurp(dir / "out" / "loadgen_summary.txt");
  CHECK_THAT(text, Contains("Scenario : Server") && Contains("Trials : 2"));
  CHECK_THAT(text, Contains("rate 40.000: VALID") && Contains("rate 80.000: VALID"));
  CHECK(number_after(text, "Highest valid scheduled rate") == Approx(80));
  CHECK(number_after(text, "Scheduled samples per second") == Approx(80));
}

TEST_CASE("load --scenario refuses an unknown scenario before sending anything",
          "[loadgen][integration][scenario]") {
  FixedDelayServer server(0.005);
  const fs::path dir = fs::path(SERVELAB_BINARY_DIR) / "test_loadgen_scenario_bad";
  fs::remove_all(dir);
  CHECK(load(dir, server.url(), {"--scenario", "many-streams"}) == 2);
  CHECK(server.requests() == 0);
}
