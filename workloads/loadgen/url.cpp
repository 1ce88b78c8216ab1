// parse_url: http://host[:port][/prefix], host may be an IPv6 literal in brackets.
#include <stdexcept>

#include "workloads/loadgen/loadgen.h"

namespace servelab::loadgen {

Url parse_url(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("--url '" + url + "': " + why);
  };
  if (url.rfind("https://", 0) == 0) throw bad("https is not supported; use http://");
  const std::string scheme = "http://";
  const std::string rest = url.rfind(scheme, 0) == 0 ? url.substr(scheme.size()) : url;
  if (rest.find("://") != std::string::npos) throw bad("only http:// URLs are supported");
  Url u;
  const auto slash = rest.find('/');
  std::string host = rest.substr(0, slash);
  if (slash != std::string::npos) u.prefix = rest.substr(slash);
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string::npos) throw bad("unclosed '[' in the host");
    const std::string after = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!after.empty()) {
      if (after[0] != ':') throw bad("unexpected text after ']'");
      u.port = after.substr(1);
    }
  } else if (const auto colon = host.rfind(':'); colon != std::string::npos) {
    u.port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (u.port.empty() || u.port.find_first_not_of("0123456789") != std::string::npos ||
      u.port.size() > 5 || std::stoi(u.port) > 65535)
    throw bad("port must be a number in 0..65535");
  if (host.empty()) throw bad("no host (expected http://host:port)");
  u.host = host;
  return u;
}

}  // namespace servelab::loadgen
