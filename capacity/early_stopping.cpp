#include "capacity/early_stopping.h"

#include <cmath>

namespace servelab::capacity {

double overlatency_odds(uint64_t queries, uint64_t overlatency, double percentile) {
  if (overlatency >= queries) return 1.0;
  const double q = 1.0 - percentile;  // the allowed share over the bound
  const double n = static_cast<double>(queries);
  // Summed in log space term by term: each term is C(n, x) q^x (1 - q)^(n - x).
  double total = 0;
  for (uint64_t x = 0; x <= overlatency; ++x) {
    const double k = static_cast<double>(x);
    const double log_term = std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1) +
                            k * std::log(q) + (n - k) * std::log1p(-q);
    total += std::exp(log_term);
  }
  return total;
}

bool early_stopping_passes(uint64_t queries, uint64_t overlatency, double percentile,
                           double confidence) {
  return overlatency_odds(queries, overlatency, percentile) < 1.0 - confidence;
}

uint64_t queries_needed(uint64_t overlatency, double percentile, double confidence) {
  // The odds fall as queries grow with the overlatency count fixed: search on the count.
  uint64_t hi = overlatency + 1;
  while (!early_stopping_passes(hi, overlatency, percentile, confidence)) hi *= 2;
  uint64_t lo = hi / 2;  // fails (or is below overlatency + 1)
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (early_stopping_passes(mid, overlatency, percentile, confidence) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace servelab::capacity
