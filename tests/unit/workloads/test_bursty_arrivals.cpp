// Bursty arrival processes against closed forms: gamma gaps (mean 1/rate, CV as asked, the
// shape's third moment), an MMPP's long-run rate (sum r_i d_i / sum d_i) and its
// overdispersion against Poisson, and a trace replayed over a window keeping each row's model.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "tests/unit/workloads/test_helpers.h"

using namespace servelab::workloads;
using namespace servelab::workloads::test;

namespace {

WorkloadSpec bursty_spec(const std::string& type, uint64_t requests, double duration = 0) {
  WorkloadSpec s;
  s.requests = requests;
  s.duration = duration;
  s.arrival.type = type;
  return s;
}

std::vector<double> arrival_gaps(const std::vector<double>& t) {
  std::vector<double> g{t.front()};
  for (size_t i = 1; i < t.size(); ++i) g.push_back(t[i] - t[i - 1]);
  return g;
}

// Variance over mean of the counts in consecutive windows of `width` (1 for Poisson).
double dispersion(const std::vector<double>& t, double width) {
  std::vector<double> counts(static_cast<size_t>(t.back() / width), 0);
  for (double x : t)
    if (static_cast<size_t>(x / width) < counts.size()) counts[static_cast<size_t>(x / width)]++;
  const double m = mean(counts);
  return stddev(counts) * stddev(counts) / m;
}

double skewness(const std::vector<double>& v) {
  const double m = mean(v), s = stddev(v);
  double third = 0;
  for (double x : v) third += std::pow((x - m) / s, 3);
  return third / static_cast<double>(v.size());
}

}  // namespace

TEST_CASE("gamma gaps have mean 1/rate, the asked CV and a gamma's skewness 2 cv",
          "[workloads][arrival]") {
  for (double cv : {0.5, 1.0, 2.0, 4.0}) {
    auto spec = bursty_spec("gamma", 200000);
    spec.arrival.rate = 40;
    spec.arrival.cv = cv;
    const auto w = generate(spec);
    REQUIRE(std::is_sorted(w.send_times.begin(), w.send_times.end()));
    const auto g = arrival_gaps(w.send_times);
    INFO("cv " << cv);
    // The mean's standard error is cv / rate / sqrt(n), under 1% of the mean at cv 4.
    CHECK(mean(g) == Approx(1.0 / 40).epsilon(0.03));
    CHECK(stddev(g) / mean(g) == Approx(cv).epsilon(0.05));
    if (cv <= 2) CHECK(skewness(g) == Approx(2 * cv).epsilon(0.15));  // Gamma: 2 / sqrt(shape)
  }
}

TEST_CASE("gamma arrivals are reproducible per seed and refuse a CV out of range",
          "[workloads][arrival]") {
  auto spec = bursty_spec("gamma", 1000);
  spec.arrival.cv = 3;
  CHECK(generate(spec).send_times == generate(spec).send_times);
  auto other = spec;
  other.arrival.seed = 3;
  CHECK(generate(other).send_times != generate(spec).send_times);
  spec.arrival.cv = 0;
  CHECK_THROWS_WITH(generate(spec), Catch::Contains("cv"));
}

TEST_CASE("mmpp's long-run rate is sum(rate_i dwell_i) / sum(dwell_i), and it is bursty",
          "[workloads][arrival]") {
  auto spec = bursty_spec("mmpp", 0, 20000);
  spec.arrival.state_rates = {10, 100};
  spec.arrival.state_dwell = {1.0, 0.5};
  const auto w = generate(spec);
  const double expected = (10 * 1.0 + 100 * 0.5) / 1.5;  // 40 requests/s
  CHECK(static_cast<double>(w.send_times.size()) / 20000 == Approx(expected).epsilon(0.03));
  // Counts over a second vary far beyond a Poisson stream's (variance = mean).
  CHECK(dispersion(w.send_times, 1.0) > 5);

  auto three = bursty_spec("mmpp", 0, 20000);
  three.arrival.state_rates = {0, 30, 90};
  three.arrival.state_dwell = {2, 1, 1};
  const auto w3 = generate(three);
  CHECK(static_cast<double>(w3.send_times.size()) / 20000 ==
        Approx((0 * 2 + 30 * 1 + 90 * 1) / 4.0).epsilon(0.04));
}

TEST_CASE("mmpp refuses lists that disagree, too many states and no positive rate",
          "[workloads][arrival]") {
  auto spec = bursty_spec("mmpp", 100);
  spec.arrival.state_rates = {10, 20};
  spec.arrival.state_dwell = {1};
  CHECK_THROWS_WITH(generate(spec), Catch::Contains("state_dwell_s has 1"));
  spec.arrival.state_rates = std::vector<double>(65, 1);
  spec.arrival.state_dwell = std::vector<double>(65, 1);
  CHECK_THROWS_WITH(generate(spec), Catch::Contains("1..64"));
  spec.arrival.state_rates = {0, 0};
  spec.arrival.state_dwell = {1, 1};
  CHECK_THROWS_WITH(generate(spec), Catch::Contains("positive rate"));
  spec.arrival.state_rates = {5, -1};
  CHECK_THROWS_WITH(generate(spec), Catch::Contains("state_rates"));
}

TEST_CASE("a trace replayed over a window starts at 0 and keeps each row's model",
          "[workloads][trace]") {
  const std::string path =
      temp_file("window.csv", "t,model\n0,a\n1,b\n2,c\n3.5,a\n4,c\n6,b\n");
  WorkloadSpec spec;
  spec.num_models = 3;
  spec.requests = 0;
  spec.arrival.type = "trace";
  spec.arrival.trace_file = path;
  spec.arrival.window_start = 2;
  spec.arrival.window_end = 5;
  spec.arrival.time_scale = 0.5;  // twice the rate
  spec.access.type = "trace";
  spec.access.trace_file = path;
  spec.access.trace_column = "model";
  const Workload w = generate(spec);
  CHECK(w.send_times == std::vector<double>{0.0, 0.75, 1.0});  // rows at 2, 3.5 and 4
  // Models by first appearance in the file: a 0, b 1, c 2; the rows at 2, 3.5, 4 are c, a, c.
  CHECK(w.models == std::vector<uint32_t>{2, 0, 2});
  spec.arrival.window_end = 2;
  CHECK_THROWS_WITH(generate(spec), Catch::Contains("window_end_s"));
}
