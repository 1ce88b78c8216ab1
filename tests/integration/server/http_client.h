// A small synchronous HTTP/1.1 client on Boost.Beast for the server tests: one keep-alive
// connection to 127.0.0.1:port, reconnected when the server closed it. Not thread-safe: one
// client per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace servelab::testing {

struct ClientResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lowercase names
  bool closed = false;                          // the server closed the connection after it
};

struct FormField {
  std::string name;
  std::string data;
  std::string filename;  // non-empty: a file field
};

class HttpClient {
 public:
  explicit HttpClient(uint16_t port);
  ~HttpClient();

  // Sends one request and reads the response. Throws std::runtime_error on a transport error.
  ClientResponse request(const std::string& method, const std::string& target,
                         const std::string& body = "", const std::string& content_type = "");
  ClientResponse get(const std::string& target) { return request("GET", target); }
  ClientResponse post_json(const std::string& target, const std::string& json) {
    return request("POST", target, json, "application/json");
  }
  ClientResponse post_form(const std::string& target, const std::vector<FormField>& fields);

  // Sends header `name: value` with every later request (e.g. Authorization).
  void set_header(const std::string& name, const std::string& value) { headers_[name] = value; }

  // How many TCP connections this client opened so far (keep-alive checks).
  int connections_opened() const { return connections_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int connections_ = 0;
  std::map<std::string, std::string> headers_;
};

// Builds a multipart/form-data body; returns it and sets *content_type.
std::string multipart_body(const std::vector<FormField>& fields, std::string* content_type);

// Writes `raw` bytes on a fresh connection and returns everything the server sends back
// until it closes (or 5 s pass). For malformed-request tests.
std::string send_raw(uint16_t port, const std::string& raw);

// Reads a whole file; throws std::runtime_error when it cannot.
std::string read_file(const std::string& path);

}  // namespace servelab::testing
