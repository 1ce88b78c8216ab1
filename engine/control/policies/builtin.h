// Internal: the tables behind PolicyRegistry and the functions that fill them with the
// built-in policies. Not part of the contract.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "engine/control/policy_registry.h"

namespace servelab::detail {

template <class Factory>
struct PolicyEntry {
  std::string help;
  Factory factory;
};

struct PolicyTables {
  std::map<std::string, PolicyEntry<BatchingFactory>> batching;
  std::map<std::string, PolicyEntry<EvictionFactory>> eviction;
  std::map<std::string, PolicyEntry<SchedulingFactory>> scheduling;
};

void add_builtin_batching(PolicyTables& t);    // policies/batching_basic.cpp, rafiqi.cpp
void add_builtin_rafiqi(PolicyTables& t);
void add_builtin_clipper(PolicyTables& t);     // policies/clipper.cpp
void add_builtin_rafiki(PolicyTables& t);      // policies/rafiki.cpp
void add_builtin_eviction(PolicyTables& t);    // policies/eviction.cpp
void add_builtin_scheduling(PolicyTables& t);  // policies/scheduling.cpp

// Throws ConfigError when `p` has a key not in `known` (catches typos in YAML configs).
void check_keys(const PolicyParams& p, std::initializer_list<const char*> known);

// Typed parameters with bounds (policies/common.cpp); each throws ConfigError naming `key`.
long long positive_int(const PolicyParams& p, const char* key, long long fallback);
double non_negative(const PolicyParams& p, const char* key, double fallback);
double param_in(const PolicyParams& p, const char* key, double fallback, double lo, double hi);
// `slo_ms` in seconds when given (must be > 0); kNever when absent.
Time slo_ms_param(const PolicyParams& p);
// A comma-separated list of numbers (a YAML list arrives so); `fallback` when absent.
std::vector<double> number_list(const PolicyParams& p, const char* key,
                                std::vector<double> fallback);

// Delayed batching shared by max-delay and clipper-aimd: ready with `cap` when `cap` are
// queued or the oldest request has waited `delay`; otherwise wake at oldest + delay.
BatchDecision delayed_batch(const ModelView& m, Time now, uint32_t cap, Time delay);
// Rafiki's B, `batch_sizes` as listed (whole numbers 1..2^20; default 16,32,48,64).
std::vector<uint32_t> batch_size_list(const PolicyParams& p);
// Records `seconds` as c(size) in `costs` (sorted by batch): a policy learning c(b) from the
// batches it sees.
void record_batch_seconds(std::vector<BatchSeconds>& costs, uint32_t size, double seconds);

// The SLO of the queue head (deadline - arrival); kNever when it has no deadline.
Time head_slo(const ModelView& m);

}  // namespace servelab::detail
