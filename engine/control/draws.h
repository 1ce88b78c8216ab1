// Seeded draws over mt19937_64 (whose output the standard fixes) rather than std::
// distributions (implementation-defined), so a seed gives the same costs with every standard
// library, like the workload generator (docs/workloads.md). Shared by the cost profile and the
// front-end profile (profiles/), whose draws must stay bit-identical: change neither lightly.
#pragma once

#include <cmath>
#include <numbers>
#include <random>

namespace servelab {

// Uniform in [0, 1): one draw.
inline double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

// Box-Muller: one value per two draws.
inline double standard_normal(std::mt19937_64& rng) {
  double u1 = uniform01(rng), u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Normal truncated at > 0 by rejection; if the mass above zero is tiny, gives up on noise.
inline double positive_normal(double mean, double sd, std::mt19937_64& rng) {
  for (int tries = 0; tries < 64; ++tries) {
    double x = mean + sd * standard_normal(rng);
    if (x > 0) return x;
  }
  return mean;
}

}  // namespace servelab
