// Model-access patterns: sequential, uniform, zipf, pareto, weights, trace.
#include "workloads/access_patterns.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "workloads/random.h"
#include "workloads/trace_reader.h"

namespace servelab::workloads::detail {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("workload.access: " + what);
}

// Draws an index from unnormalized probabilities by inverting the cumulative sum.
class Categorical {
 public:
  explicit Categorical(const std::vector<double>& weights) : cumulative_(weights.size()) {
    double sum = 0;
    for (size_t i = 0; i < weights.size(); ++i) cumulative_[i] = sum += weights[i];
  }
  uint32_t draw(Rng& rng) const {
    const double target = rng.uniform() * cumulative_.back();
    auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), target);
    // Skip trailing zero-weight entries that a rounding target could land on.
    size_t i = std::min<size_t>(it - cumulative_.begin(), cumulative_.size() - 1);
    while (i > 0 && cumulative_[i] == cumulative_[i - 1]) --i;
    return static_cast<uint32_t>(i);
  }

 private:
  std::vector<double> cumulative_;
};

std::vector<uint32_t> trace_models(const AccessSpec& spec, uint32_t n, uint64_t count) {
  const auto values = read_trace_column(spec.trace_file, spec.trace_column);
  std::vector<uint32_t> per_row(values.size());
  std::unordered_map<std::string, uint64_t> first_seen;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& v = values[i];
    long long number = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), number);
    if (!v.empty() && ec == std::errc() && p == v.data() + v.size()) {
      per_row[i] = static_cast<uint32_t>(((number % n) + n) % n);
    } else {
      auto [it, inserted] = first_seen.emplace(v, first_seen.size());
      per_row[i] = static_cast<uint32_t>(it->second % n);
    }
  }
  std::vector<uint32_t> models(count);
  for (uint64_t i = 0; i < count; ++i) models[i] = per_row[i % per_row.size()];
  return models;
}

}  // namespace

void validate_access(const AccessSpec& spec, uint32_t num_models) {
  if (num_models == 0) fail("num_models must be at least 1");
  const std::string& t = spec.type;
  if (t == "zipf" || t == "pareto") {
    if (!std::isfinite(spec.alpha) || spec.alpha <= 0)
      fail("alpha must be a positive number for " + t + ", got " + std::to_string(spec.alpha));
  } else if (t == "weights") {
    if (spec.weights.size() != num_models)
      fail("weights has " + std::to_string(spec.weights.size()) + " entries but there are " +
           std::to_string(num_models) + " models");
    double sum = 0;
    for (double w : spec.weights) {
      if (!std::isfinite(w) || w < 0) fail("weights must be finite and non-negative");
      sum += w;
    }
    if (sum <= 0) fail("weights must not all be zero");
  } else if (t == "trace") {
    if (spec.trace_file.empty()) fail("type trace needs 'file'");
    if (spec.trace_column.empty()) fail("type trace needs 'column' (a CSV header name)");
  } else if (t != "sequential" && t != "uniform") {
    fail("unknown type '" + t + "' (expected sequential, uniform, zipf, pareto, weights, trace)");
  }
}

std::vector<double> access_probabilities(const AccessSpec& spec, uint32_t n) {
  validate_access(spec, n);
  std::vector<double> p;
  if (spec.type == "uniform") {
    p.assign(n, 1.0);
  } else if (spec.type == "zipf") {
    for (uint32_t i = 0; i < n; ++i) p.push_back(std::pow(i + 1.0, -spec.alpha));
  } else if (spec.type == "pareto") {
    for (uint32_t i = 0; i < n; ++i)
      p.push_back(std::pow(i + 1.0, -spec.alpha) - std::pow(i + 2.0, -spec.alpha));
  } else if (spec.type == "weights") {
    p = spec.weights;
  } else {
    return p;
  }
  double sum = 0;
  for (double x : p) sum += x;
  for (double& x : p) x /= sum;
  return p;
}

std::vector<uint32_t> generate_models(const AccessSpec& spec, uint32_t n, uint64_t count) {
  validate_access(spec, n);
  std::vector<uint32_t> models(count);
  Rng rng(spec.seed);
  if (spec.type == "sequential") {
    for (uint64_t i = 0; i < count; ++i) models[i] = static_cast<uint32_t>(i % n);
  } else if (spec.type == "uniform") {
    for (auto& m : models) m = static_cast<uint32_t>(rng.below(n));
  } else if (spec.type == "pareto") {
    // Inverse CDF of Pareto(x_m = 1, alpha) truncated to [1, n + 1), floored to an index.
    const double tail = 1.0 - std::pow(n + 1.0, -spec.alpha);
    for (auto& m : models) {
      const double x = std::pow(1.0 - rng.uniform() * tail, -1.0 / spec.alpha);
      m = static_cast<uint32_t>(std::min<double>(std::floor(x) - 1.0, n - 1.0));
    }
  } else if (spec.type == "zipf" || spec.type == "weights") {
    const Categorical table(access_probabilities(spec, n));
    for (auto& m : models) m = table.draw(rng);
  } else {  // trace
    return trace_models(spec, n, count);
  }
  return models;
}

}  // namespace servelab::workloads::detail
