// The window of a model's answered latencies that a percentile backup delay comes from
// (engine/route/http/forwarder_impl.h): no delay before enough answers, the percentile of
// the window after, recomputed as answers come, and bounded in size.
#include <catch2/catch.hpp>

#include "engine/route/http/forwarder_impl.h"

using servelab::route::LatencyWindow;

TEST_CASE("a latency window gives its percentile once it holds enough answers",
          "[route][backups]") {
  LatencyWindow w;
  for (int i = 1; i < int(LatencyWindow::kMinSamples); ++i) w.add(i, 50);
  CHECK(w.percentile < 0);  // too few answers: no percentile delay yet
  w.add(LatencyWindow::kMinSamples, 50);
  CHECK(w.percentile == 10);  // the median rank of 1..20
  for (size_t i = 0; i < LatencyWindow::kRecomputeEvery; ++i) w.add(1000, 50);
  CHECK(w.percentile == 18);  // recomputed: rank 17 of 1..20 and sixteen slow answers
  for (size_t i = 0; i < 10 * LatencyWindow::kSize; ++i) w.add(5, 50);
  CHECK(w.seconds.size() == LatencyWindow::kSize);
  CHECK(w.percentile == 5);
}
