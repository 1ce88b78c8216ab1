// Parsing of POST /register bodies into a registration request, and the JSON form of a
// model's preprocessing spec. Two body forms:
//   multipart/form-data: fields name, model (file), labels (file or text, one per line),
//                        preprocess (JSON), contexts (optional integer);
//   application/json:    {"name", "path" (server-side file), "labels": [..] or text,
//                         "preprocess": {..}, "contexts"}.
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/engine.h"
#include "engine/server/http_message.h"

namespace servelab::server {

struct RegisterRequest {
  std::string name;
  std::optional<std::string> model_bytes;  // uploaded file contents (multipart form)
  std::string source_path;                 // server-side file (JSON form)
  std::vector<std::string> labels;
  runtime::Preprocess preprocess;
  uint32_t contexts = 0;                   // 0: the engine default
  std::optional<double> slo_ms;            // latency objective of the model's requests
};

// Parses `req` (its body is moved out). Throws HttpError(400) for a malformed body, a missing
// field or a bad preprocessing spec; the name is checked later (model_name_problem).
RegisterRequest parse_register_request(HttpRequest& req);

// {"input_width", "input_height", "resize", "mean": [3], "std": [3]}; "input_size" (an integer
// or [width, height]) sets both input dimensions. Missing keys keep their defaults. Throws
// HttpError(400) for unknown keys or out-of-range values: input sides 1..1024, resize
// -1..1024, std in [1e-6, 1e6], mean in [-1e6, 1e6].
runtime::Preprocess preprocess_from_json(const nlohmann::json& j);
nlohmann::json preprocess_to_json(const runtime::Preprocess& p);

// One label per line; trailing '\r' and surrounding blanks removed, empty lines skipped.
std::vector<std::string> labels_from_text(std::string_view text);

}  // namespace servelab::server
