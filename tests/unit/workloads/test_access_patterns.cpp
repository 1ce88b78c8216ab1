// Access patterns against closed-form probabilities (chi-square) and exact sequences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "tests/unit/workloads/test_helpers.h"

using namespace servelab::workloads;
using namespace servelab::workloads::test;

namespace {
// Chi-square critical values at p = 0.001 (tables): a correct sampler fails 1 in 1000 seeds,
// and the seeds are fixed, so these tests are deterministic.
constexpr double kChi2_df3 = 16.27, kChi2_df9 = 27.88, kChi2_df19 = 43.82;
constexpr uint64_t kSamples = 200000;
}  // namespace

TEST_CASE("sequential access is exact round robin", "[workloads][access]") {
  auto spec = access_only("sequential", 5, 23);
  const Workload w = generate(spec);
  REQUIRE(w.models.size() == 23);
  for (size_t i = 0; i < w.models.size(); ++i) CHECK(w.models[i] == i % 5);
}

TEST_CASE("uniform access matches 1/n", "[workloads][access]") {
  const Workload w = generate(access_only("uniform", 10, kSamples));
  CHECK(chi_square(w.models, std::vector<double>(10, 0.1)) < kChi2_df9);
}

TEST_CASE("zipf access matches (i+1)^-alpha / H", "[workloads][access]") {
  for (double alpha : {0.8, 1.2}) {
    auto spec = access_only("zipf", 20, kSamples);
    spec.access.alpha = alpha;
    std::vector<double> pmf(20);
    double h = 0;
    for (int i = 0; i < 20; ++i) h += pmf[i] = 1.0 / std::pow(i + 1, alpha);
    for (double& p : pmf) p /= h;
    const Workload w = generate(spec);
    CAPTURE(alpha);
    CHECK(chi_square(w.models, pmf) < kChi2_df19);
    // model 0 is the most popular
    CHECK(std::count(w.models.begin(), w.models.end(), 0u) >
          std::count(w.models.begin(), w.models.end(), 1u));
  }
}

TEST_CASE("pareto access is a floored Pareto(1, alpha) truncated to the models",
          "[workloads][access]") {
  // Pareto CDF F(x) = 1 - x^-alpha for x >= 1; index i holds x in [i+1, i+2), truncated at n+1.
  const double alpha = 1.0;
  const int n = 10;
  auto spec = access_only("pareto", n, kSamples);
  spec.access.alpha = alpha;
  std::vector<double> pmf(n);
  const double mass = 1 - std::pow(n + 1.0, -alpha);
  for (int i = 0; i < n; ++i)
    pmf[i] = (std::pow(i + 1.0, -alpha) - std::pow(i + 2.0, -alpha)) / mass;
  CHECK(pmf[0] == Approx(0.5 / mass));
  const Workload w = generate(spec);
  CHECK(chi_square(w.models, pmf) < kChi2_df9);
}

TEST_CASE("explicit weights are followed and zero weights never drawn", "[workloads][access]") {
  auto spec = access_only("weights", 5, kSamples);
  spec.access.weights = {1, 0, 3, 6, 10};
  const Workload w = generate(spec);
  CHECK(std::count(w.models.begin(), w.models.end(), 1u) == 0);
  std::vector<uint32_t> nonzero;
  const uint32_t remap[] = {0, 0, 1, 2, 3};
  for (auto m : w.models) nonzero.push_back(remap[m]);
  CHECK(chi_square(nonzero, {0.05, 0.15, 0.30, 0.50}) < kChi2_df3);
}

TEST_CASE("trace access maps integers modulo n and names by first appearance",
          "[workloads][access]") {
  SECTION("integer column of the Azure trace") {
    auto spec = access_only("trace", 7, 6);
    spec.access.trace_file = traces_dir() + "/azure-llm-2023-code.csv";
    spec.access.trace_column = "ContextTokens";
    const Workload w = generate(spec);
    // First rows of the file: ContextTokens 4808, 3180, 110, 7433, ...
    CHECK(w.models[0] == 4808 % 7);
    CHECK(w.models[1] == 3180 % 7);
    CHECK(w.models[2] == 110 % 7);
    CHECK(w.models[3] == 7433 % 7);
  }
  SECTION("names, cycling past the end of the file") {
    const std::string path =
        temp_file("names.csv", "time,model\n0,resnet\n1,\"vgg,16\"\n2,resnet\n3,alexnet\n-1,x\n");
    auto spec = access_only("trace", 3, 7);
    spec.access.trace_file = path;
    spec.access.trace_column = "model";
    CHECK(generate(spec).models == std::vector<uint32_t>{0, 1, 0, 2, 0, 0, 1});
    spec.access.trace_column = "time";  // integers, -1 mod 3 = 2
    CHECK(generate(spec).models == std::vector<uint32_t>{0, 1, 2, 0, 2, 0, 1});
  }
  SECTION("a missing column is named with the available ones") {
    auto spec = access_only("trace", 3, 7);
    spec.access.trace_file = traces_dir() + "/azure-llm-2023-code.csv";
    spec.access.trace_column = "Model";
    CHECK_THROWS_WITH(generate(spec),
                      Catch::Contains("no column 'Model'") && Catch::Contains("ContextTokens"));
  }
}

TEST_CASE("access and arrival seeds are independent", "[workloads][determinism]") {
  WorkloadSpec spec = access_only("zipf", 8, 5000);
  spec.arrival.type = "poisson";
  spec.arrival.rate = 100;
  const Workload a = generate(spec);
  const Workload same = generate(spec);
  CHECK(a.models == same.models);
  CHECK(a.send_times == same.send_times);  // bit-identical

  WorkloadSpec other_access = spec;
  other_access.access.seed = 99;
  const Workload b = generate(other_access);
  CHECK(b.send_times == a.send_times);
  CHECK(b.models != a.models);

  WorkloadSpec other_arrival = spec;
  other_arrival.arrival.seed = 99;
  const Workload c = generate(other_arrival);
  CHECK(c.models == a.models);
  CHECK(c.send_times != a.send_times);
}
