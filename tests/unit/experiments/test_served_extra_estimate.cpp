// ServedExtra::extra(): the fastest served turn less the fastest back-to-back turn, on turns
// as the profiler measured them on a machine that flips between speed states.
#include <catch2/catch.hpp>

#include "calibration/served_probe.h"

using servelab::experiments::ServedExtra;

TEST_CASE("served extra: fastest turn against fastest turn, not the turns' differences",
          "[experiments][served]") {
  // One profile's six turns (ms, served/alone), flips between ~13 and ~16 ms in both
  // columns. Differences: -1.94, +3.08, -2.48, -2.46, +0.22, +2.43 (median -0.86).
  ServedExtra t;
  t.served = {13.904761e-3, 16.046624e-3, 13.088258e-3, 13.242325e-3, 15.776592e-3, 15.649265e-3};
  t.alone = {15.846919e-3, 12.966750e-3, 15.571209e-3, 15.699707e-3, 15.558396e-3, 13.222508e-3};
  CHECK(t.extra() == Approx(13.088258e-3 - 12.966750e-3).margin(1e-12));

  // Another: +3.42, -3.40, -0.45, +0.41, +0.61, +0.12 (median +0.26 ms).
  t.served = {17.497398e-3, 13.924595e-3, 13.676701e-3, 14.007489e-3, 14.378809e-3, 13.669702e-3};
  t.alone = {14.077531e-3, 17.328169e-3, 14.130968e-3, 13.602301e-3, 13.771242e-3, 13.546708e-3};
  CHECK(t.extra() == Approx(13.669702e-3 - 13.546708e-3).margin(1e-12));
}

TEST_CASE("served extra: at least 0, and 0 without turns", "[experiments][served]") {
  ServedExtra t;
  CHECK(t.extra() == 0);
  t.served = {12.0e-3, 12.5e-3};
  t.alone = {12.4e-3, 12.2e-3};  // served faster than back to back: no extra
  CHECK(t.extra() == 0);
  t.served = {14.0e-3};
  t.alone = {12.0e-3};
  CHECK(t.extra() == Approx(2.0e-3));
}
