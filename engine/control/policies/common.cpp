// Helpers shared by the built-in policies: bounded parameters and delayed batching.
#include <algorithm>
#include <sstream>

#include "engine/control/policies/builtin.h"

namespace servelab::detail {

namespace {

ConfigError bad(const char* key, const std::string& what) {
  return ConfigError(std::string("parameter '") + key + "' must be " + what);
}

}  // namespace

long long positive_int(const PolicyParams& p, const char* key, long long fallback) {
  long long v = p.get_int(key, fallback);
  if (v < 1 || v > (1 << 30)) throw bad(key, ">= 1");
  return v;
}

double non_negative(const PolicyParams& p, const char* key, double fallback) {
  double v = p.get_double(key, fallback);
  if (!(v >= 0)) throw bad(key, ">= 0");
  return v;
}

double param_in(const PolicyParams& p, const char* key, double fallback, double lo, double hi) {
  double v = p.get_double(key, fallback);
  if (!(v >= lo && v <= hi))
    throw bad(key, "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

Time slo_ms_param(const PolicyParams& p) {
  if (!p.has("slo_ms")) return kNever;
  double ms = p.get_double("slo_ms", 0);
  if (!(ms > 0 && ms < 1e12)) throw bad("slo_ms", "> 0");
  return ms / 1e3;
}

std::vector<double> number_list(const PolicyParams& p, const char* key,
                                std::vector<double> fallback) {
  if (!p.has(key)) return fallback;
  std::vector<double> out;
  std::stringstream in(p.get_string(key, ""));
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    PolicyParams one;
    one.set(key, first == std::string::npos ? "" : item.substr(first, last - first + 1));
    out.push_back(one.get_double(key, 0));  // throws ConfigError on a malformed number
  }
  if (out.empty()) throw bad(key, "a non-empty list of numbers");
  return out;
}

BatchDecision delayed_batch(const ModelView& m, Time now, uint32_t cap, Time delay) {
  if (m.queued == 0) return {};
  Time due = m.oldest_arrival + delay;
  if (m.queued >= cap || now >= due) return {cap};
  return {0, due};
}

Time head_slo(const ModelView& m) {
  if (m.queued == 0 || m.oldest_deadline == kNever) return kNever;
  return m.oldest_deadline - m.oldest_arrival;
}

std::vector<uint32_t> batch_size_list(const PolicyParams& p) {
  std::vector<uint32_t> out;
  for (double v : number_list(p, "batch_sizes", {16, 32, 48, 64})) {
    if (!(v >= 1 && v <= (1 << 20) && v == double(uint32_t(v))))
      throw ConfigError("parameter 'batch_sizes' must list whole numbers >= 1");
    out.push_back(uint32_t(v));
  }
  return out;
}

void record_batch_seconds(std::vector<BatchSeconds>& costs, uint32_t size, double seconds) {
  auto it = std::lower_bound(costs.begin(), costs.end(), size,
                             [](const BatchSeconds& c, uint32_t x) { return c.batch < x; });
  if (it != costs.end() && it->batch == size) it->seconds = seconds;
  else costs.insert(it, {size, seconds});
}

}  // namespace servelab::detail
