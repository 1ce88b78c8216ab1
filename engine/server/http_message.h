// Plain HTTP request/response values passed between the transport (Boost.Beast, kept inside
// http_transport.cpp) and the handlers. Value types; safe to move between threads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/server/client_gone.h"

namespace servelab::server {

struct HttpResponse;

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent
  std::string target;  // raw request target, query included
  std::string path;    // target without the query (still percent-encoded)
  std::map<std::string, std::string> query;  // decoded query parameters (last value wins)
  std::vector<std::pair<std::string, std::string>> headers;  // names in lowercase
  std::string body;
  // The KServe v2 binary-tensor extension (request_body.h): for POST .../infer with
  // Inference-Header-Content-Length N and a Content-Length body whose bytes after N are whole
  // FP32 values, the transport receives those values straight into `tensor` and `body` holds
  // only the N bytes of the JSON header; `tensor_split` says so. Otherwise `tensor` is empty.
  std::vector<float> tensor;
  bool tensor_split = false;
  // Set by the transport: fired when the connection closes before the answer is written.
  // Null for requests made in-process.
  std::shared_ptr<ClientGone> client;
  // Set by the transport: sends an informational (1xx, not 101) response's status and headers
  // ahead of the answer, at most once; ignored once the answer is on its way, after the client
  // went and for any other status. Any thread. Null for requests made in-process.
  std::function<void(const HttpResponse&)> interim;

  // Value of header `name` (lowercase), or nullptr.
  const std::string* header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// Completes a request. Call exactly once, from any thread; the transport posts the response
// to the connection's executor. Calls after the server stopped are ignored.
using Reply = std::function<void(HttpResponse)>;
// Handles one request. Called on an IO thread; must not block for long (hand slow work to
// another thread and call `reply` from there).
using Handler = std::function<void(HttpRequest, Reply)>;

// An error a handler reports to the client: `status` and a user-facing message.
struct HttpError : std::runtime_error {
  HttpError(int status, const std::string& msg) : std::runtime_error(msg), status(status) {}
  int status;
};

// {"error": message} with `status`.
// Messages longer than kMaxErrorBytes are cut there (a request's bad value is never echoed
// whole).
HttpResponse error_response(int status, std::string_view message);
inline constexpr size_t kMaxErrorBytes = 2048;

// A value of the request as a message quotes it: at most `max` bytes, then "... (N bytes)".
std::string echo_value(std::string_view value, size_t max = 80);
// A JSON document (already serialized) with `status`.
HttpResponse json_response(int status, std::string body);

// Percent-decodes `s` ('+' stays '+'); returns false on a malformed escape.
bool percent_decode(std::string_view s, std::string* out);
// Splits a request target into path and decoded query parameters.
void split_target(std::string_view target, std::string* path,
                  std::map<std::string, std::string>* query);

}  // namespace servelab::server
