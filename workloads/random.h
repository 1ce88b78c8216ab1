// Deterministic random draws for workload generation (private to servelab_workloads).
// std::mt19937_64's output sequence is fixed by the C++ standard, but std:: distributions are
// implementation-defined; the draws below are written out so that a seed gives the same
// schedule with every standard library. Not thread-safe: one Rng per generator.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

namespace servelab::workloads::detail {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // Uniform on (0, 1]: safe to take the logarithm of.
  double uniform_open0() { return 1.0 - uniform(); }

  // Uniform integer in [0, n) by inversion of a 53-bit uniform (n far below 2^53 here).
  uint64_t below(uint64_t n) {
    uint64_t i = static_cast<uint64_t>(uniform() * static_cast<double>(n));
    return i < n ? i : n - 1;
  }

  // Exponential with the given mean, by inversion: -mean * ln(U), U in (0, 1].
  double exponential(double mean) { return -mean * std::log(uniform_open0()); }

  // Standard normal by the Box-Muller transform; the second value of each pair is kept.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform_open0()));
    const double theta = 2.0 * std::numbers::pi * uniform();
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace servelab::workloads::detail
