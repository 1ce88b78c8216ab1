// A JSON answer's text: invalid UTF-8 in a string (a label, a client's name) is replaced
// (U+FFFD) instead of failing the answer. Stateless; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace servelab::server {

inline std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace servelab::server
