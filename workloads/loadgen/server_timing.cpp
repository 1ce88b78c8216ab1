// apply_server_timing and answer_label: read what a ServeLab server puts in its classify
// answer (time split, label).
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

std::optional<std::string> answer_label(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  if (auto it = j.find("label"); it != j.end() && it->is_string()) return it->get<std::string>();
  if (auto top = j.find("top"); top != j.end() && top->is_array() && !top->empty()) {
    const auto& first = (*top)[0];
    if (first.is_object())
      if (auto l = first.find("label"); l != first.end() && l->is_string())
        return l->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace servelab::loadgen
