#include "engine/control/policy_params.h"

#include <cerrno>
#include <cstdlib>

namespace servelab {

namespace {
[[noreturn]] void bad(const std::string& key, const std::string& value, const char* want) {
  throw ConfigError("parameter '" + key + "': expected " + want + ", got '" + value + "'");
}
}  // namespace

double PolicyParams::get_double(const std::string& key, double fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || errno) bad(key, it->second, "a number");
  return v;
}

long long PolicyParams::get_int(const std::string& key, long long fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || errno) bad(key, it->second, "an integer");
  return v;
}

bool PolicyParams::get_bool(const std::string& key, bool fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  if (s == "true" || s == "1" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "no") return false;
  bad(key, s, "a boolean");
}

std::string PolicyParams::get_string(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

}  // namespace servelab
