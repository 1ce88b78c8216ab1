// Route table: (method, path pattern) -> handler. Patterns are literal segments and `{param}`
// segments that match one non-empty path segment. Parameters are percent-decoded here, once,
// and only here; a malformed escape or a decoded NUL/control byte answers 400 before any
// handler runs, so handlers never see a name that a C API would truncate.
// An unknown path answers 404, a known path with another method 405 (with an Allow header).
// Built once before the server starts; dispatch() is then thread-safe (read-only).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/server/http_message.h"

namespace servelab::server {

using PathParams = std::map<std::string, std::string>;
using RouteHandler = std::function<void(HttpRequest&, const PathParams&, Reply)>;

class RouteTable {
 public:
  // Adds a route; `pattern` like "/models/{name}". Later routes never shadow earlier ones.
  void add(const std::string& method, const std::string& pattern, RouteHandler handler);

  // Finds the route of `req` and calls its handler, or replies 404/405/400 (a malformed
  // percent escape or a control byte in a parameter). HEAD runs the GET route; the transport
  // leaves out the body. `route` receives the matched pattern (or "unmatched") for metrics,
  // as a pointer valid while the table lives (no copy per request); set before the handler
  // runs.
  void dispatch(HttpRequest req, Reply reply, const std::string** route = nullptr) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    RouteHandler handler;
  };
  static std::vector<std::string> split(const std::string& path);
  static bool match(const Route& r, const std::vector<std::string>& segs, PathParams* params,
                    bool* bad_escape);
  std::vector<Route> routes_;
};

}  // namespace servelab::server
