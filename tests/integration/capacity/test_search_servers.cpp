// `servelab search --minimize servers` at a fixed load: a cluster of N servers, each one
// worker serving a request in exactly 10 ms, behind a random router (so each server sees
// Poisson arrivals at rate/N: an M/D/1 queue). The ground truth is queueing theory: a server
// with utilisation >= 1 has no stationary p99 (its queue grows for the whole run), and below
// 1 Erlang's M/D/1 waiting-time distribution gives the p99. The fewest servers that meet the
// bound is the answer; the servers axis comes from --set on a path the config leaves out.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/search_page.h"
#include "cli/subcommands.h"
#include "tests/integration/capacity/md1_fixture.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
namespace fs = std::filesystem;

namespace {

constexpr double kService = test::kMd1Service;
constexpr double kRate = 250;       // requests/s into the cluster
constexpr double kBoundMs = 300;
constexpr double kHostBytes = 2e9;

int search(std::vector<std::string> args) {
  return test::run_command(cli::search_main, "search", std::move(args));
}

fs::path write_cluster_config(const fs::path& dir) {
  test::write_md1_profile(dir);
  std::ofstream(dir / "cluster.yaml")
      << "name: md1-cluster\nmodels: [md1]\nprofile: md1-profile.yaml\n"
         "engine: {workers: 1, quantum_ms: 0, max_batch: 1, tiers: {host: {bytes: 2000000000}}}\n"
         "policies: {batching: {name: none}}\n"
         "workload: {requests: 20000, arrival: {type: poisson, rate: 250}, "
         "access: {type: uniform}}\n"
         "simulation: {noise: none}\n"
         "cluster: {router: random}\n";  // no servers: the default, one
  return dir / "cluster.yaml";
}

// The p99 latency (ms) of an M/D/1 server at `lambda`: service plus the wait's p99, to 0.1 ms.
double md1_p99_ms(double lambda) {
  double wait = 0;
  while (test::md1_wait_cdf(lambda, wait) < 0.99) wait += 0.0001;
  return (wait + kService) * 1000;
}

// The fewest of 1..4 servers whose M/D/1 queues are stable with p99 latency within the bound.
int expected_servers() {
  for (int n = 1; n <= 4; ++n) {
    const double lambda = kRate / n;
    if (lambda * kService >= 1) continue;  // overloaded: the queue grows without bound
    const double p = test::md1_wait_cdf(lambda, kBoundMs / 1000 - kService);
    REQUIRE(p > 0.995);  // clear of the bound, not on its edge
    return n;
  }
  return 0;
}

}  // namespace

TEST_CASE("search --minimize servers picks the fewest M/D/1 servers that meet a p99 bound",
          "[capacity][search]") {
  const int n = expected_servers();
  REQUIRE(n == 3);  // 1 and 2 servers are overloaded (utilisation 2.5 and 1.25)
  testutil::TempDir tmp("servelab-search-servers");
  const fs::path config = write_cluster_config(tmp.path());
  REQUIRE(search({config.string(), "--out", (tmp.path() / "s").string(), "-q", "--set",
                  "cluster.servers=[1,2,3,4]", "--minimize", "servers", "--subject-to",
                  "p99_ms<=300"}) == 0);
  nlohmann::json j;
  std::ifstream(tmp.path() / "s" / "search.json") >> j;
  CHECK(j["evaluated"] == 4);
  REQUIRE(j["ranked"].size() == 2);  // 3 and 4 servers
  const auto& best = j["ranked"][0]["metrics"];
  CHECK(best["servers"] == n);
  CHECK(best["memory_bytes"].get<double>() == n * kHostBytes);
  // Each server is the M/D/1 queue the closed form describes (137 ms at rate 250/3).
  CHECK(best["latency_p99_ms"].get<double>() == Approx(md1_p99_ms(kRate / n)).epsilon(0.1));
  CHECK(j["ranked"][1]["metrics"]["servers"] == 4);
}

TEST_CASE("search --minimize memory_bytes ranks by servers x the host budget",
          "[capacity][search]") {
  testutil::TempDir tmp("servelab-search-memory");
  const fs::path config = write_cluster_config(tmp.path());
  REQUIRE(search({config.string(), "--out", (tmp.path() / "m").string(), "-q", "--set",
                  "cluster.servers=[4,3,2]", "--minimize", "memory_bytes", "--subject-to",
                  "p99_ms<=300"}) == 0);
  nlohmann::json j;
  std::ifstream(tmp.path() / "m" / "search.json") >> j;
  REQUIRE(j["ranked"].size() == 2);
  CHECK(j["ranked"][0]["metrics"]["memory_bytes"].get<double>() == 3 * kHostBytes);
}

TEST_CASE("the page puts each measured best's prediction beside its measurement and error",
          "[capacity][search]") {
  // Predicted 100 req/s and 40 ms, measured 80 req/s and 50 ms: errors 0.25 and -0.2.
  const auto rows = nlohmann::json::parse(R"([{"label": "max_batch=16",
      "predicted": {"throughput_rps": 100, "latency_p99_ms": 40},
      "measured": {"throughput_rps": 80, "latency_p99_ms": 50},
      "error": {"throughput_rps": 0.25, "latency_p99_ms": -0.2}, "constraints_met": false}])");
  const std::string md = cli::measured_table(rows);
  CHECK_THAT(md, Catch::Contains("| max_batch=16 | 100 | 80 | 0.25 | 40 | 50 | -0.2 | no |"));
  CHECK_THAT(md, Catch::Contains("throughput predicted | measured | error"));
}
