#include "engine/server/admin_auth.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "engine/store/digest.h"

namespace servelab::server {
using store::Sha256;

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Hex digests have a fixed length, so the loop below always runs 64 steps.
  std::string da = Sha256::hex(a), db = Sha256::hex(b);
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < da.size(); ++i) diff = diff | (da[i] ^ db[i]);
  return diff == 0;
}

bool has_bearer_token(const HttpRequest& req, const std::string& token) {
  const std::string* auth = req.header("authorization");
  if (!auth || auth->size() < 7) return false;
  std::string scheme = auth->substr(0, 7);
  for (auto& c : scheme) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer ") return false;
  std::string_view given(*auth);
  given.remove_prefix(7);
  while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
  while (!given.empty() && given.back() == ' ') given.remove_suffix(1);
  return constant_time_equal(given, token);
}

HttpResponse unauthorized_response() {
  HttpResponse r = error_response(
      401, "this endpoint needs the admin token: send 'Authorization: Bearer <token>'");
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

std::string read_admin_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the admin token file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!token.empty() && blank(token.back())) token.pop_back();
  size_t start = 0;
  while (start < token.size() && blank(token[start])) ++start;
  token.erase(0, start);
  if (token.empty()) throw std::runtime_error("the admin token file '" + path + "' is empty");
  for (char c : token) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      throw std::runtime_error("the admin token in '" + path +
                               "' has a space or a control byte (one line of printable text)");
    }
  }
  return token;
}

}  // namespace servelab::server
