// apply_server_timing: reads the time split a ServeLab server puts in its classify answer.
#include <cmath>
#include <nlohmann/json.hpp>

#include "workloads/loadgen/loadgen.h"

namespace servelab::loadgen {

bool apply_server_timing(const std::string& body, results::RequestRecord& r) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  auto number = [&j](const char* key, double* out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return false;
    *out = it->get<double>();
    return std::isfinite(*out) && *out >= 0;
  };
  double batch = 0, load_ms = 0, compute_ms = 0, queue_ms = 0;
  if (!number("batch_size", &batch) || !number("load_ms", &load_ms) ||
      !number("compute_ms", &compute_ms) || batch < 1 || !std::isfinite(r.finish))
    return false;
  r.batch_size = static_cast<uint32_t>(batch);
  r.start = r.finish - compute_ms * 1e-3;
  r.dispatch = r.start - load_ms * 1e-3;
  if (number("queue_ms", &queue_ms)) r.queued = r.dispatch - queue_ms * 1e-3;
  r.waited_for_load = load_ms > 0;
  return true;
}

}  // namespace servelab::loadgen
