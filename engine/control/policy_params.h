// Named parameters for a policy, as read from a YAML mapping (the YAML layer converts nodes
// to strings so that control stays free of I/O libraries). Value type; not thread-safe.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace servelab {

// Thrown for bad configuration (unknown policy, bad parameter); message is user-facing.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class PolicyParams {
 public:
  PolicyParams() = default;
  explicit PolicyParams(std::map<std::string, std::string> values) : values_(std::move(values)) {}

  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  // Typed getters: return `fallback` when absent, throw ConfigError when present but malformed.
  double get_double(const std::string& key, double fallback) const;
  long long get_int(const std::string& key, long long fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// A policy selection: registered name plus parameters.
struct PolicySpec {
  std::string name;
  PolicyParams params;
};

}  // namespace servelab
