// The response forms of the KServe v2 protocol (v2_protocol.h): infer responses with an FP32
// or a BYTES output, in JSON or the binary-tensor form, the classification of output rows,
// and model metadata.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string_view>

#include "engine/server/v2_protocol.h"

namespace servelab::server {
using nlohmann::json;

namespace {

// The response with its one output `out`; `binary`: the JSON then `tensor_bytes`, with
// Inference-Header-Content-Length.
HttpResponse infer_response(const std::string& model, const std::string& id, json out,
                            bool binary, std::string_view tensor_bytes) {
  json j = {{"model_name", model}, {"model_version", "1"}, {"outputs", json::array({out})}};
  if (!id.empty()) j["id"] = id;
  HttpResponse r;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (binary) {
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(r.body.size()));
    r.body += tensor_bytes;
  }
  return r;
}

json output_head(const TensorSpec& output) {
  return {{"name", output.name}, {"datatype", output.datatype}, {"shape", output.shape}};
}

// The shortest decimal form of `v` that reads back as the same float.
std::string float_text(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// JSON text appended piece by piece, for the infer response of every request: the same
// bytes as json::dump of the equivalent document (keys in its sorted order, its number
// forms), without building that document (a few dozen allocations per response).
void append_string(std::string* out, const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {  // escapes, UTF-8 checks: json's
      *out += json(s).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
  }
  *out += '"';
  *out += s;
  *out += '"';
}

void append_int(std::string* out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, end);
}

// As json::dump writes a float value (a double): the same digits, "null" when not finite.
void append_number(std::string* out, float v) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char buf[64];
  char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, static_cast<double>(v));
  out->append(buf, end);
}

void append_shape(std::string* out, const std::vector<int64_t>& shape) {
  *out += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) *out += ',';
    append_int(out, shape[i]);
  }
  *out += ']';
}

void append_le32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

HttpResponse v2_infer_response(const std::string& model, const std::string& id,
                               const TensorSpec& output, const std::vector<float>& values,
                               bool binary) {
  HttpResponse r;
  std::string& body = r.body;
  body.reserve(160 + model.size() + id.size() + values.size() * (binary ? 4 : 24));
  body += '{';
  if (!id.empty()) {
    body += "\"id\":";
    append_string(&body, id);
    body += ',';
  }
  body += "\"model_name\":";
  append_string(&body, model);
  body += ",\"model_version\":\"1\",\"outputs\":[{";
  if (!binary) {
    body += "\"data\":[";
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) body += ',';
      append_number(&body, values[i]);
    }
    body += "],";
  }
  body += "\"datatype\":";
  append_string(&body, output.datatype);
  body += ",\"name\":";
  append_string(&body, output.name);
  if (binary) {
    body += ",\"parameters\":{\"binary_data_size\":";
    append_int(&body, static_cast<int64_t>(values.size() * sizeof(float)));
    body += '}';
  }
  body += ",\"shape\":";
  append_shape(&body, output.shape);
  body += "}]}";
  if (binary) {
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(body.size()));
    body.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  }
  return r;
}

HttpResponse v2_bytes_response(const std::string& model, const std::string& id,
                               const TensorSpec& output, const std::vector<std::string>& strings,
                               bool binary) {
  json out = output_head(output);
  std::string bytes;
  if (binary) {
    size_t total = 0;
    for (const std::string& s : strings) total += 4 + s.size();
    bytes.reserve(total);
    for (const std::string& s : strings) {
      append_le32(&bytes, static_cast<uint32_t>(s.size()));
      bytes += s;
    }
    out["parameters"] = {{"binary_data_size", bytes.size()}};
  } else {
    out["data"] = strings;
  }
  return infer_response(model, id, std::move(out), binary, bytes);
}

std::vector<std::string> v2_top_classes(const std::vector<float>& row, uint32_t k,
                                        const std::vector<std::string>& labels) {
  std::vector<uint32_t> order(row.size());
  std::iota(order.begin(), order.end(), 0u);
  // Higher score first, NaN last, ties by lower index: a strict weak order even with NaN.
  auto before = [&](uint32_t a, uint32_t b) {
    const float x = row[a], y = row[b];
    if (std::isnan(x) != std::isnan(y)) return std::isnan(y);
    if (!std::isnan(x) && x != y) return x > y;
    return a < b;
  };
  const size_t n = std::min<size_t>(k, row.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    before);
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = order[i];
    std::string s = float_text(row[c]) + ":" + std::to_string(c);
    if (c < labels.size()) s += ":" + labels[c];
    out.push_back(std::move(s));
  }
  return out;
}

HttpResponse v2_metadata_response(const std::string& model, const TensorSpec& input,
                                  const TensorSpec& output) {
  auto tensor = [](const TensorSpec& t) {
    return json{{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}};
  };
  json j = {{"name", model},
            {"versions", {"1"}},
            {"platform", "pytorch_libtorch"},
            {"inputs", json::array({tensor(input)})},
            {"outputs", json::array({tensor(output)})}};
  return json_response(200, j.dump(-1, ' ', false, json::error_handler_t::replace));
}

HttpResponse v2_config_response(const std::string& model, const TensorSpec& input,
                                const TensorSpec& output, uint32_t max_batch_size) {
  auto tensor = [](const TensorSpec& t) {  // Triton's config lists dims without the batch
    std::vector<int64_t> dims(t.shape.begin() + (t.shape.empty() ? 0 : 1), t.shape.end());
    return json{{"name", t.name}, {"data_type", "TYPE_" + t.datatype}, {"dims", dims}};
  };
  json j = {{"name", model},
            {"platform", "pytorch_libtorch"},
            {"backend", "pytorch"},
            {"max_batch_size", max_batch_size},
            {"input", json::array({tensor(input)})},
            {"output", json::array({tensor(output)})}};
  return json_response(200, j.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace servelab::server
