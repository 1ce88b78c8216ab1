#include "engine/server/route_table.h"

#include <algorithm>

namespace servelab::server {

std::vector<std::string> RouteTable::split(const std::string& path) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(std::count(path.begin(), path.end(), '/')));  // one allocation
  size_t pos = 0;
  while (pos < path.size()) {
    if (path[pos] == '/') {
      ++pos;
      continue;
    }
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    out.push_back(path.substr(pos, next - pos));
    pos = next;
  }
  return out;
}

void RouteTable::add(const std::string& method, const std::string& pattern, RouteHandler handler) {
  routes_.push_back(Route{method, pattern, split(pattern), std::move(handler)});
}

namespace {

// A decoded parameter must be printable: NUL would truncate it at every C boundary (SQLite,
// file names) and control bytes have no business in a name.
bool has_control_byte(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

// A segment that holds an encoded slash (%2F): no name may contain '/', and matched by its
// segment count it would reach a route it was not meant for (a 405 instead of a 400).
bool has_encoded_slash(std::string_view seg) {
  for (size_t i = 0; i + 2 < seg.size(); ++i)
    if (seg[i] == '%' && seg[i + 1] == '2' && (seg[i + 2] == 'f' || seg[i + 2] == 'F')) return true;
  return false;
}

}  // namespace

bool RouteTable::match(const Route& r, const std::vector<std::string>& segs, PathParams* params,
                   bool* bad_escape) {
  if (r.segments.size() != segs.size()) return false;
  auto is_param = [](const std::string& want) {
    return want.size() >= 2 && want.front() == '{' && want.back() == '}';
  };
  // Literal segments first: most routes are ruled out before any parameter is decoded.
  for (size_t i = 0; i < segs.size(); ++i)
    if (!is_param(r.segments[i]) && r.segments[i] != segs[i]) return false;
  params->clear();
  for (size_t i = 0; i < segs.size(); ++i) {
    const std::string& want = r.segments[i];
    if (!is_param(want)) continue;
    std::string decoded;
    if (!percent_decode(segs[i], &decoded) || has_control_byte(decoded)) *bad_escape = true;
    (*params)[want.substr(1, want.size() - 2)] = std::move(decoded);
  }
  return true;
}

void RouteTable::dispatch(HttpRequest req, Reply reply, const std::string** route) const {
  std::vector<std::string> segs = split(req.path);
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  for (const std::string& seg : segs) {
    if (!has_encoded_slash(seg)) continue;
    static const std::string kUnmatched = "unmatched";
    if (route) *route = &kUnmatched;
    reply(error_response(400, "path segment '" + seg.substr(0, 80) +
                                  "' holds an encoded slash (%2F): names cannot contain '/'"));
    return;
  }
  std::string allow;
  PathParams params;
  for (const auto& r : routes_) {
    bool bad_escape = false;
    if (!match(r, segs, &params, &bad_escape)) continue;
    if (r.method != method) {
      if (allow.find(r.method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + r.method;
      if (r.method == "GET" && allow.find("HEAD") == std::string::npos) allow += ", HEAD";
      continue;
    }
    if (route) *route = &r.pattern;
    if (bad_escape) {
      reply(error_response(400, "malformed percent-encoding or control byte in path '" +
                                    req.path + "'"));
      return;
    }
    r.handler(req, params, std::move(reply));
    return;
  }
  static const std::string kUnmatched = "unmatched";
  if (route) *route = &kUnmatched;
  if (!allow.empty()) {
    HttpResponse res = error_response(
        405, "method " + req.method + " is not allowed on " + req.path + " (allowed: " + allow + ")");
    res.headers.emplace_back("Allow", allow);
    reply(std::move(res));
    return;
  }
  reply(error_response(404, "no route for " + req.method + " " + req.path));
}

}  // namespace servelab::server
