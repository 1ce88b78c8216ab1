#include "engine/server/multipart.h"

#include <algorithm>
#include <cctype>

namespace servelab::server {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Value of parameter `key` in a header value like `form-data; name="x"; filename="y"`.
std::optional<std::string> header_param(std::string_view value, std::string_view key) {
  size_t pos = 0;
  while ((pos = value.find(';', pos)) != std::string_view::npos) {
    ++pos;
    std::string_view rest = trim(value.substr(pos));
    size_t eq = rest.find('=');
    if (eq == std::string_view::npos) continue;
    if (lower(trim(rest.substr(0, eq))) != lower(key)) continue;
    std::string_view v = trim(rest.substr(eq + 1));
    if (!v.empty() && v.front() == '"') {
      std::string out;
      for (size_t i = 1; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size()) {
          out += v[++i];
        } else if (v[i] == '"') {
          return out;
        } else {
          out += v[i];
        }
      }
      return std::nullopt;  // unterminated quote
    }
    size_t end = v.find(';');
    return std::string(trim(v.substr(0, end)));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> multipart_boundary(std::string_view content_type) {
  std::string_view type = trim(content_type.substr(0, content_type.find(';')));
  if (lower(type) != "multipart/form-data") return std::nullopt;
  auto b = header_param(content_type, "boundary");
  if (!b || b->empty() || b->size() > 200) return std::nullopt;
  return b;
}

std::vector<FormPart> parse_multipart(std::string_view content_type, std::string_view body) {
  auto boundary = multipart_boundary(content_type);
  if (!boundary) throw MultipartError("multipart/form-data request without a boundary");
  const std::string delim = "--" + *boundary;

  // The first delimiter may start the body or follow a preamble line.
  size_t pos = body.starts_with(delim) ? 0 : body.find("\r\n" + delim);
  if (pos == std::string_view::npos) throw MultipartError("multipart body has no boundary line");
  if (pos != 0) pos += 2;
  std::vector<FormPart> parts;
  while (true) {
    pos += delim.size();
    if (body.substr(pos, 2) == "--") return parts;  // closing delimiter
    // Skip transport padding and the CRLF after the delimiter.
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") throw MultipartError("malformed multipart boundary line");
    pos += 2;
    size_t headers_end = body.find("\r\n\r\n", pos);
    if (headers_end == std::string_view::npos) {
      throw MultipartError("multipart part without a blank line after its headers");
    }
    FormPart part;
    bool has_disposition = false;
    std::string_view headers = body.substr(pos, headers_end - pos);
    while (!headers.empty()) {
      size_t eol = headers.find("\r\n");
      std::string_view line = headers.substr(0, eol);
      headers = eol == std::string_view::npos ? std::string_view{} : headers.substr(eol + 2);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) throw MultipartError("malformed multipart header line");
      std::string key = lower(trim(line.substr(0, colon)));
      std::string_view value = trim(line.substr(colon + 1));
      if (key == "content-disposition") {
        has_disposition = true;
        part.name = header_param(value, "name").value_or("");
        part.filename = header_param(value, "filename").value_or("");
      } else if (key == "content-type") {
        part.content_type = std::string(value);
      }
    }
    if (!has_disposition || part.name.empty()) {
      throw MultipartError("multipart part without a Content-Disposition name");
    }
    size_t data_begin = headers_end + 4;
    size_t next = body.find("\r\n" + delim, data_begin);
    if (next == std::string_view::npos) {
      throw MultipartError("multipart body is truncated (no closing boundary)");
    }
    part.data = std::string(body.substr(data_begin, next - data_begin));
    parts.push_back(std::move(part));
    pos = next + 2;
  }
}

const FormPart* find_part(const std::vector<FormPart>& parts, std::string_view name) {
  for (const auto& p : parts) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace servelab::server
