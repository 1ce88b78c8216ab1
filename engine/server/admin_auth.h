// Bearer-token check of the administrative endpoints (POST /register, DELETE /models/{name})
// when the server was started with `--admin-token-file`. Reads (GET) and classification stay
// open. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "engine/server/http_message.h"

namespace servelab::server {

// Equality whose running time does not depend on where `a` and `b` differ, nor on their
// lengths: both are hashed (SHA-256) and the digests compared without early exit.
bool constant_time_equal(std::string_view a, std::string_view b);

// True when `req` carries `Authorization: Bearer <token>` (scheme case-insensitive).
bool has_bearer_token(const HttpRequest& req, const std::string& token);

// The 401 answer, with `WWW-Authenticate: Bearer`.
HttpResponse unauthorized_response();

// Reads the token from `path` (surrounding whitespace and the trailing newline removed).
// Throws std::runtime_error when the file cannot be read or holds no token, or one with
// control bytes or spaces (it could not be sent in a header).
std::string read_admin_token_file(const std::string& path);

}  // namespace servelab::server
