// Model-access patterns: sequential, uniform, zipf, pareto, weights, trace, and their registry.
#include "common/huge_pages.h"
#include "workloads/access_patterns.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
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

// --- checks, one per type that has fields ---

void validate_alpha(const AccessSpec& spec, uint32_t) {
  if (!std::isfinite(spec.alpha) || spec.alpha <= 0)
    fail("alpha must be a positive number for " + spec.type + ", got " +
         std::to_string(spec.alpha));
}

void validate_weights(const AccessSpec& spec, uint32_t num_models) {
  if (spec.weights.size() != num_models)
    fail("weights has " + std::to_string(spec.weights.size()) + " entries but there are " +
         std::to_string(num_models) + " models");
  double sum = 0;
  for (double w : spec.weights) {
    if (!std::isfinite(w) || w < 0) fail("weights must be finite and non-negative");
    sum += w;
  }
  if (sum <= 0) fail("weights must not all be zero");
}

void validate_trace(const AccessSpec& spec, uint32_t) {
  if (spec.trace_file.empty()) fail("type trace needs 'file'");
  if (spec.trace_column.empty()) fail("type trace needs 'column' (a CSV header name)");
}

// --- unnormalized probabilities of the randomized types ---

std::vector<double> uniform_weights(const AccessSpec&, uint32_t n) {
  return std::vector<double>(n, 1.0);
}

std::vector<double> zipf_weights(const AccessSpec& spec, uint32_t n) {
  std::vector<double> p;
  for (uint32_t i = 0; i < n; ++i) p.push_back(std::pow(i + 1.0, -spec.alpha));
  return p;
}

std::vector<double> pareto_weights(const AccessSpec& spec, uint32_t n) {
  std::vector<double> p;
  for (uint32_t i = 0; i < n; ++i)
    p.push_back(std::pow(i + 1.0, -spec.alpha) - std::pow(i + 2.0, -spec.alpha));
  return p;
}

std::vector<double> listed_weights(const AccessSpec& spec, uint32_t) { return spec.weights; }

// --- streams, one per type ---

class SequentialModels final : public ModelStream {
 public:
  SequentialModels(const AccessSpec&, uint32_t n) : n_(n) {}
  uint32_t next() override { return static_cast<uint32_t>(i_++ % n_); }

 private:
  uint32_t n_;
  uint64_t i_ = 0;
};

class UniformModels final : public ModelStream {
 public:
  UniformModels(const AccessSpec& spec, uint32_t n) : n_(n), rng_(spec.seed) {}
  // One model: every draw would be 0 (the stream is this pattern's alone), so none is made.
  uint32_t next() override { return n_ == 1 ? 0 : static_cast<uint32_t>(rng_.below(n_)); }

 private:
  uint32_t n_;
  Rng rng_;
};

// Inverse CDF of Pareto(x_m = 1, alpha) truncated to [1, n + 1), floored to an index.
class ParetoModels final : public ModelStream {
 public:
  ParetoModels(const AccessSpec& spec, uint32_t n)
      : n_(n), alpha_(spec.alpha), tail_(1.0 - std::pow(n + 1.0, -spec.alpha)), rng_(spec.seed) {}
  uint32_t next() override {
    const double x = std::pow(1.0 - rng_.uniform() * tail_, -1.0 / alpha_);
    return static_cast<uint32_t>(std::min<double>(std::floor(x) - 1.0, n_ - 1.0));
  }

 private:
  uint32_t n_;
  double alpha_, tail_;
  Rng rng_;
};

// Inverse CDF over the type's probabilities (zipf, weights).
class CategoricalModels final : public ModelStream {
 public:
  CategoricalModels(const AccessSpec& spec, uint32_t n)
      : rng_(spec.seed), table_(access_probabilities(spec, n)) {}
  uint32_t next() override { return table_.draw(rng_); }

 private:
  Rng rng_;
  Categorical table_;
};

class TraceModels final : public ModelStream {
 public:
  TraceModels(const AccessSpec& spec, uint32_t n) {
    const auto values = read_trace_column(spec.trace_file, spec.trace_column);
    std::unordered_map<std::string, uint64_t> first_seen;
    for (const std::string& v : values) {
      long long number = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), number);
      if (!v.empty() && ec == std::errc() && p == v.data() + v.size()) {
        per_row_.push_back(static_cast<uint32_t>(((number % n) + n) % n));
      } else {
        auto [it, inserted] = first_seen.emplace(v, first_seen.size());
        per_row_.push_back(static_cast<uint32_t>(it->second % n));
      }
    }
  }
  uint32_t next() override {  // cycling through the rows
    const uint32_t m = per_row_[i_];
    i_ = i_ + 1 == per_row_.size() ? 0 : i_ + 1;
    return m;
  }

 private:
  std::vector<uint32_t> per_row_;
  size_t i_ = 0;
};

template <class Stream>
std::unique_ptr<ModelStream> stream(const AccessSpec& spec, uint32_t n) {
  return std::make_unique<Stream>(spec, n);
}

using S = AccessSpec;

}  // namespace

// The registry. A new access pattern is one entry here plus its generator above: parsing,
// key checks, validation, generation, to_yaml and --help all follow from the entry.
const std::vector<AccessPattern>& access_registry() {
  static const std::vector<AccessPattern> registry = {
      {.name = "sequential",
       .help = "round robin: request i goes to model i mod n (no keys)",
       .models = stream<SequentialModels>},
      {.name = "uniform",
       .help = "every model equally likely (no keys)",
       .models = stream<UniformModels>,
       .weights = uniform_weights},
      {.name = "zipf",
       .help = "P(i) proportional to (i+1)^-alpha, model 0 the most popular: alpha (exponent > 0)",
       .keys = {number_key("alpha", &S::alpha)},
       .validate = validate_alpha,
       .models = stream<CategoricalModels>,
       .weights = zipf_weights},
      {.name = "pareto",
       .help = "TrIMS Pareto(1, alpha) draw truncated to [1, n+1), floored to a model: "
               "alpha (shape > 0)",
       .keys = {number_key("alpha", &S::alpha)},
       .validate = validate_alpha,
       .models = stream<ParetoModels>,
       .weights = pareto_weights},
      {.name = "weights",
       .help = "P(i) = w_i / sum w: weights (list, one non-negative number per model)",
       .keys = {number_list_key("weights", &S::weights)},
       .validate = validate_weights,
       .models = stream<CategoricalModels>,
       .weights = listed_weights},
      {.name = "trace",
       .help = "models from a CSV column, cycling: file (path), column (header name; integers "
               "map mod n, other text by first appearance)",
       .keys = {text_key("file", &S::trace_file), text_key("column", &S::trace_column)},
       .validate = validate_trace,
       .models = stream<TraceModels>},
  };
  return registry;
}

const AccessPattern& access_pattern(const std::string& type) {
  return require_type(access_registry(), type, "workload.access");
}

void validate_access(const AccessSpec& spec, uint32_t num_models) {
  if (num_models == 0) fail("num_models must be at least 1");
  const AccessPattern& pattern = access_pattern(spec.type);
  if (pattern.validate) pattern.validate(spec, num_models);
}

std::vector<double> access_probabilities(const AccessSpec& spec, uint32_t n) {
  validate_access(spec, n);
  const AccessPattern& pattern = access_pattern(spec.type);
  if (!pattern.weights) return {};
  std::vector<double> p = pattern.weights(spec, n);
  double sum = 0;
  for (double x : p) sum += x;
  for (double& x : p) x /= sum;
  return p;
}

std::unique_ptr<ModelStream> model_stream(const AccessSpec& spec, uint32_t n, uint64_t skip) {
  validate_access(spec, n);
  auto stream = access_pattern(spec.type).models(spec, n);
  for (uint64_t i = 0; i < skip; ++i) stream->next();
  return stream;
}

std::vector<uint32_t> generate_models(const AccessSpec& spec, uint32_t n, uint64_t count,
                                      uint64_t skip) {
  auto stream = model_stream(spec, n, skip);
  auto models = huge_vector<uint32_t>(count);
  for (uint32_t& m : models) m = stream->next();
  return models;
}

}  // namespace servelab::workloads::detail
