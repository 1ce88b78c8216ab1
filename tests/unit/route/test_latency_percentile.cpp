// The percentile a backup waits for (engine/route/latency_percentile.h), on hand-computed
// values: linear interpolation between the closest ranks, and a window that forgets the
// oldest latencies.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/route/latency_percentile.h"

using servelab::route::LatencyPercentile;

TEST_CASE("a latency percentile interpolates between the closest ranks", "[route][backup]") {
  LatencyPercentile p50(50, 100), p95(95, 100);
  CHECK(std::isnan(p50.value()));  // nothing answered yet
  for (double v : {0.030, 0.010, 0.020, 0.040}) {
    p50.add(v);
    p95.add(v);
  }
  // Sorted 10, 20, 30, 40 ms: p50 at rank 1.5, p95 at rank 2.85.
  CHECK(p50.value() == Approx(0.025));
  CHECK(p95.value() == Approx(0.0385));
  LatencyPercentile top(100, 100);
  top.add(0.005);
  CHECK(top.value() == 0.005);  // one latency is every percentile
}

TEST_CASE("a latency percentile keeps only its window's latest latencies", "[route][backup]") {
  LatencyPercentile p(50, 3);
  for (double v : {0.100, 0.001, 0.002, 0.003}) p.add(v);  // 100 ms leaves first
  CHECK(p.size() == 3);
  CHECK(p.value() == Approx(0.002));
  p.add(0.002);  // 1 ms leaves: 2, 3, 2
  p.add(0.050);  // 2 ms (the older one) leaves: 3, 2, 50
  CHECK(p.value() == Approx(0.003));
}
