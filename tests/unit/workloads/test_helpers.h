// Small helpers shared by the workload tests: spec builders, statistics and temp files.
#pragma once

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "workloads/workload.h"

namespace servelab::workloads::test {

// Copies of ../shared/traces (Azure LLM inference 2023, public), so a clone anywhere tests alone.
inline std::string traces_dir() { return std::string(SERVELAB_SOURCE_DIR) + "/tests/data/traces"; }

// An open-loop spec at a constant rate, for tests that only look at the models.
inline WorkloadSpec access_only(const std::string& type, uint32_t num_models, uint64_t n) {
  WorkloadSpec s;
  s.num_models = num_models;
  s.requests = n;
  s.arrival.type = "constant";
  s.arrival.rate = 1000;
  s.access.type = type;
  return s;
}

// Pearson chi-square statistic of observed model counts against probabilities.
inline double chi_square(const std::vector<uint32_t>& models, const std::vector<double>& pmf) {
  std::vector<double> counts(pmf.size(), 0);
  for (auto m : models) counts.at(m) += 1;
  double chi = 0;
  for (size_t i = 0; i < pmf.size(); ++i) {
    const double expected = pmf[i] * static_cast<double>(models.size());
    chi += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi;
}

inline double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

inline double stddev(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// Writes `text` to a fresh file under the build tree and returns its path.
inline std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = std::string(SERVELAB_BINARY_DIR) + "/test_workloads_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace servelab::workloads::test
