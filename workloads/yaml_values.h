// Strict readers of single YAML values for the `workload:` section (private to
// servelab_workloads). Each throws std::invalid_argument prefixed with the value's path, e.g.
// `workload.arrival.rate: expected a number, got 'fast'`.
#pragma once

#include <cstdint>
#include <string>

namespace YAML { class Node; }

namespace servelab::workloads::detail {

// Throws std::invalid_argument("<path>: <what>").
[[noreturn]] void fail_at(const std::string& path, const std::string& what);

// The text of a scalar node.
std::string yaml_text(const YAML::Node& n, const std::string& path);

// A finite number written in full (no trailing text).
double yaml_number(const YAML::Node& n, const std::string& path);

// A non-negative integer; 1e6 is accepted when it is a whole number.
uint64_t yaml_count(const YAML::Node& n, const std::string& path);

}  // namespace servelab::workloads::detail
