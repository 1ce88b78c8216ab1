// The backends of a front end, as `--backends host:port,...` names them. Value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace servelab::route {

struct BackendAddress {
  std::string host;  // a name or an address; IPv6 written without its brackets
  uint16_t port = 0;
  std::string text() const;  // host:port ([host]:port for IPv6), as the user wrote it
};

// The most backends one front end takes.
inline constexpr size_t kMaxBackends = 1024;

// Parses "host:port,host:port,..." (an IPv6 host in brackets: "[::1]:8080"). Throws
// std::invalid_argument with a message naming the bad entry: an empty list or entry, a missing
// or malformed port (1..65535), a host over 253 bytes, a duplicate, more than kMaxBackends.
std::vector<BackendAddress> parse_backends(std::string_view list);

}  // namespace servelab::route
