// `servelab search` on an M/D/1 server (Poisson arrivals, one worker, 10 ms a request): over a
// sweep of arrival rates, maximizing throughput subject to p99 <= 50 ms picks the highest rate
// whose p99 Erlang's closed form puts within the bound; an SLO no rate meets is named.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/subcommands.h"
#include "tests/integration/capacity/md1_fixture.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

constexpr double kService = test::kMd1Service;
const std::vector<double> kRates = {30, 40, 50, 60, 70};

int search(std::vector<std::string> args) {
  return test::run_command(cli::search_main, "search", std::move(args));
}

fs::path write_md1_search(const fs::path& dir) {
  test::write_md1_profile(dir);
  std::ofstream(dir / "md1.yaml")
      << "name: md1-search\nmodels: [md1]\nprofile: md1-profile.yaml\n"
         "engine: {workers: 1, quantum_ms: 0, max_batch: 1}\n"
         "policies: {batching: {name: gre}}\n"
         "workload: {requests: 100000, arrival: {type: poisson, rate: 10}, "
         "access: {type: uniform}}\n"
         "simulation: {noise: none}\n"
         "sweep:\n  workload.arrival.rate: [30, 40, 50, 60, 70]\n";
  return dir / "md1.yaml";
}

}  // namespace

TEST_CASE("search on M/D/1 rates picks the highest rate whose closed-form p99 is within 50 ms",
          "[capacity][search]") {
  // The closed form's answer, with every rate of the grid clear of the bound by a margin.
  double expected = 0;
  for (double r : kRates) {
    const double p = test::md1_wait_cdf(r, 0.050 - kService);
    REQUIRE(std::abs(p - 0.99) > 0.002);  // no rate sits on the edge
    if (p >= 0.99) expected = r;
  }
  REQUIRE(expected == 50);
  testutil::TempDir tmp("servelab-search-md1");
  const fs::path config = write_md1_search(tmp.path());
  REQUIRE(search({config.string(), "--out", (tmp.path() / "s").string(), "-q", "--maximize",
                  "throughput", "--subject-to", "p99_ms<=50"}) == 0);
  nlohmann::json j;
  std::ifstream(tmp.path() / "s" / "search.json") >> j;
  CHECK(j["evaluated"] == 5);
  REQUIRE(j["ranked"].size() == 3);  // 30, 40 and 50 req/s
  CHECK_THAT(j["ranked"][0]["label"].get<std::string>(), Contains("50"));
  CHECK(fs::exists(tmp.path() / "s" / "sim" / "results.db"));
  CHECK(fs::exists(tmp.path() / "s" / "search.md"));
  CHECK(fs::exists(tmp.path() / "s" / "search.png"));  // reports/search_plot.py
}

TEST_CASE("search names the constraint no configuration meets, and refuses unknown metrics",
          "[capacity][search]") {
  testutil::TempDir tmp("servelab-search-md1-none");
  const fs::path config = write_md1_search(tmp.path());
  CHECK(search({config.string(), "--out", (tmp.path() / "n").string(), "-q", "--subject-to",
                "p99_ms<=5", "--trials", "2"}) == 1);
  std::ifstream in(tmp.path() / "n" / "search.md");
  const std::string md((std::istreambuf_iterator<char>(in)), {});
  CHECK_THAT(md, Contains("p99_ms<=5 holds nowhere") && Contains("2 of 5"));
  CHECK(search({config.string(), "--out", (tmp.path() / "u").string(), "-q", "--subject-to",
                "goodput<=5"}) == 2);
}
