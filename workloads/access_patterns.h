// Model-access patterns: which model each request goes to (private to servelab_workloads).
// The registry (access_registry) holds one entry per `access.type`; everything that depends
// on the type goes through it. Thread-compatible; each call builds its own generator from the
// spec's seed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "workloads/streams.h"
#include "workloads/type_registry.h"
#include "workloads/workload.h"

namespace servelab::workloads::detail {

// One registered access pattern: its name, help, YAML keys, checks and generator.
struct AccessPattern {
  std::string name;
  std::string help;                       // one line: what it does, its keys with units
  std::vector<SpecKey<AccessSpec>> keys = {};  // besides type and seed, in to_yaml order
  // Throws std::invalid_argument naming the field; null when the type has nothing to check.
  void (*validate)(const AccessSpec&, uint32_t num_models) = nullptr;
  std::unique_ptr<ModelStream> (*models)(const AccessSpec&, uint32_t num_models);
  // Unnormalized categorical weights of a randomized pattern; null for the others.
  std::vector<double> (*weights)(const AccessSpec&, uint32_t num_models) = nullptr;
};

// Every access pattern, in the order --help lists them.
const std::vector<AccessPattern>& access_registry();

// The pattern of `type`; throws std::invalid_argument listing the registered names.
const AccessPattern& access_pattern(const std::string& type);

// Checks the access fields of a spec for `num_models` models; throws std::invalid_argument
// with a message naming the field.
void validate_access(const AccessSpec& spec, uint32_t num_models);

// The model index (0..num_models-1) of each of `count` requests. Mappings:
//   sequential  i mod num_models (round robin, no randomness)
//   uniform     floor(U * n)
//   zipf        P(i) = (i+1)^-alpha / H(n, alpha), inverse CDF over the cumulative table
//   pareto      X = (1 - U * (1 - (n+1)^-alpha))^(-1/alpha), a Pareto(x_m = 1, alpha) sample
//               truncated to [1, n+1); index = floor(X) - 1, so
//               P(i) = ((i+1)^-alpha - (i+2)^-alpha) / (1 - (n+1)^-alpha)
//   weights     P(i) = w_i / sum(w), inverse CDF
//   trace       column value per row, cycling when count exceeds the rows: an integer v maps to
//               v mod n (non-negative); any other text maps to the order in which distinct
//               values first appear in the file (first value -> 0, second -> 1, ...), mod n.
// `skip`: draws dropped first (a trace replayed from a window: the rows before it).
std::vector<uint32_t> generate_models(const AccessSpec& spec, uint32_t num_models,
                                      uint64_t count, uint64_t skip = 0);

// The same models as a stream, checked as above.
std::unique_ptr<ModelStream> model_stream(const AccessSpec& spec, uint32_t num_models,
                                          uint64_t skip = 0);

// The categorical probabilities used by the randomized patterns (uniform, zipf, pareto,
// weights), for documentation and reuse by the simulator; empty for sequential and trace.
std::vector<double> access_probabilities(const AccessSpec& spec, uint32_t num_models);

}  // namespace servelab::workloads::detail
