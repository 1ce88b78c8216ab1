#include "engine/server/http_message.h"

#include <nlohmann/json.hpp>

namespace servelab::server {

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

std::string echo_value(std::string_view value, size_t max) {
  if (value.size() <= max) return std::string(value);
  return std::string(value.substr(0, max)) + "... (" + std::to_string(value.size()) + " bytes)";
}

HttpResponse error_response(int status, std::string_view message) {
  const std::string text = message.size() <= kMaxErrorBytes
                               ? std::string(message)
                               : echo_value(message, kMaxErrorBytes) + " (message cut)";
  nlohmann::json j = {{"error", text}};
  return json_response(status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

HttpResponse json_response(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.body += '\n';
  return r;
}

bool percent_decode(std::string_view s, std::string* out) {
  out->clear();
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      *out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return false;
    int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return false;
    *out += char(hi * 16 + lo);
    i += 2;
  }
  return true;
}

void split_target(std::string_view target, std::string* path,
                  std::map<std::string, std::string>* query) {
  size_t q = target.find('?');
  *path = std::string(target.substr(0, q));
  query->clear();
  if (q == std::string_view::npos) return;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view kv = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    std::string key, value;
    if (!percent_decode(kv.substr(0, eq), &key)) continue;
    if (eq != std::string_view::npos && !percent_decode(kv.substr(eq + 1), &value)) continue;
    (*query)[key] = value;
  }
}

}  // namespace servelab::server
