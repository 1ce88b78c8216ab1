#include "engine/route/http/backend_list.h"

#include <charconv>
#include <set>
#include <stdexcept>

namespace servelab::route {

namespace {

std::string quoted(std::string_view s) {
  return "'" + std::string(s.substr(0, 64)) + (s.size() > 64 ? "...'" : "'");
}

uint16_t parse_port(std::string_view entry, std::string_view text) {
  unsigned value = 0;
  const char* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || stop != end || value < 1 || value > 65535)
    throw std::invalid_argument("backend " + quoted(entry) + ": the port must be a number in "
                                "1..65535");
  return uint16_t(value);
}

BackendAddress parse_entry(std::string_view entry) {
  if (entry.empty()) throw std::invalid_argument("empty entry in the backend list");
  BackendAddress a;
  size_t colon;
  if (entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == std::string_view::npos || close + 1 >= entry.size() || entry[close + 1] != ':')
      throw std::invalid_argument("backend " + quoted(entry) + ": expected [address]:port");
    a.host = std::string(entry.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = entry.rfind(':');
    if (colon == std::string_view::npos)
      throw std::invalid_argument("backend " + quoted(entry) + ": expected host:port");
    a.host = std::string(entry.substr(0, colon));
    if (a.host.find(':') != std::string::npos)
      throw std::invalid_argument("backend " + quoted(entry) +
                                  ": write an IPv6 address in brackets, [address]:port");
  }
  if (a.host.empty() || a.host.size() > 253)
    throw std::invalid_argument("backend " + quoted(entry) + ": the host must be 1..253 bytes");
  for (char c : a.host)
    if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '@')
      throw std::invalid_argument("backend " + quoted(entry) + ": bad character in the host");
  a.port = parse_port(entry, entry.substr(colon + 1));
  return a;
}

}  // namespace

std::string BackendAddress::text() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::vector<BackendAddress> parse_backends(std::string_view list) {
  if (list.empty()) throw std::invalid_argument("the backend list is empty");
  std::vector<BackendAddress> out;
  std::set<std::string> seen;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const size_t length = comma == std::string_view::npos ? std::string_view::npos : comma - start;
    const std::string_view entry = list.substr(start, length);
    BackendAddress a = parse_entry(entry);
    if (!seen.insert(a.text()).second)
      throw std::invalid_argument("backend " + a.text() + " is listed twice");
    out.push_back(std::move(a));
    if (out.size() > kMaxBackends)
      throw std::invalid_argument("more than " + std::to_string(kMaxBackends) + " backends");
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace servelab::route
