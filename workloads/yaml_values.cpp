// Strict readers of single YAML values: numbers by std::from_chars, so '5x' is an error.
#include "workloads/yaml_values.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace servelab::workloads::detail {

void fail_at(const std::string& path, const std::string& what) {
  throw std::invalid_argument(path + ": " + what);
}

std::string yaml_text(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) fail_at(path, "expected a single value");
  return n.Scalar();
}

double yaml_number(const YAML::Node& n, const std::string& path) {
  const std::string s = yaml_text(n, path);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    fail_at(path, "expected a number, got '" + s + "'");
  return v;
}

uint64_t yaml_count(const YAML::Node& n, const std::string& path) {
  const std::string s = yaml_text(n, path);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  const double d = yaml_number(n, path);  // accept 1e6
  if (d < 0 || d != std::floor(d) || d > 1.8e19)
    fail_at(path, "expected a non-negative integer, got '" + s + "'");
  return static_cast<uint64_t>(d);
}

}  // namespace servelab::workloads::detail
