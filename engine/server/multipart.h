// multipart/form-data (RFC 7578) parsing for POST /register uploads. The whole body is in
// memory (the server's body limit bounds it). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace servelab::server {

// Malformed multipart input; message is user-facing (the server answers 400).
struct MultipartError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct FormPart {
  std::string name;          // form field name (Content-Disposition name=)
  std::string filename;      // set for file fields; empty for plain fields
  std::string content_type;  // the part's Content-Type, if any
  std::string data;          // raw bytes of the part
};

// The `boundary` parameter of a multipart/form-data Content-Type, or nullopt when the type is
// not multipart/form-data or has no boundary.
std::optional<std::string> multipart_boundary(std::string_view content_type);

// Splits `body` into its parts. Throws MultipartError for a missing boundary, a missing
// closing delimiter, or a part without a Content-Disposition name.
std::vector<FormPart> parse_multipart(std::string_view content_type, std::string_view body);

// The first part named `name`, or nullptr.
const FormPart* find_part(const std::vector<FormPart>& parts, std::string_view name);

}  // namespace servelab::server
