// Early stopping against the binomial distribution summed by hand, and LoadGen's own minimum
// (459 queries for the 99th percentile at 99% confidence with none over the bound).
#include <catch2/catch.hpp>

#include <cmath>

#include "capacity/early_stopping.h"

using namespace servelab::capacity;

namespace {

// P(X <= k), X ~ Binomial(n, q), by the recurrence P(x+1) = P(x) (n-x)/(x+1) q/(1-q).
double binomial_cdf(int n, int k, double q) {
  double p = std::pow(1 - q, n), total = p;
  for (int x = 0; x < k; ++x) {
    p *= static_cast<double>(n - x) / (x + 1) * q / (1 - q);
    total += p;
  }
  return total;
}

}  // namespace

TEST_CASE("overlatency odds are the binomial's lower tail at the allowed share") {
  CHECK(overlatency_odds(200, 0, 0.99) == Approx(std::pow(0.99, 200)));
  CHECK(overlatency_odds(1000, 5, 0.99) == Approx(binomial_cdf(1000, 5, 0.01)).epsilon(1e-9));
  CHECK(overlatency_odds(50, 7, 0.90) == Approx(binomial_cdf(50, 7, 0.10)).epsilon(1e-9));
  CHECK(overlatency_odds(10, 10, 0.99) == 1.0);
}

TEST_CASE("early stopping needs 459 clean queries at p99 and 99% confidence") {
  // 0.99^n < 0.01  <=>  n > ln(0.01) / ln(0.99) = 458.2
  CHECK(queries_needed(0, 0.99, 0.99) == 459);
  CHECK(early_stopping_passes(459, 0, 0.99, 0.99));
  CHECK_FALSE(early_stopping_passes(458, 0, 0.99, 0.99));
  // With 10 over the bound: the smallest n whose binomial tail falls below 1%.
  const uint64_t n = queries_needed(10, 0.99, 0.99);
  CHECK(binomial_cdf(static_cast<int>(n), 10, 0.01) < 0.01);
  CHECK(binomial_cdf(static_cast<int>(n) - 1, 10, 0.01) >= 0.01);
}

TEST_CASE("a run with exactly the allowed share over the bound does not pass") {
  // 1% over at p99: no evidence that the true share is below 1%.
  CHECK_FALSE(early_stopping_passes(100000, 1000, 0.99, 0.99));
  CHECK(early_stopping_passes(100000, 900, 0.99, 0.99));
  CHECK(early_stopping_passes(100000, 1000, 0.99, 0.0) == (overlatency_odds(100000, 1000, 0.99) < 1));
}
