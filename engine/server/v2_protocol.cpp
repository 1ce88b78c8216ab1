#include "engine/server/v2_protocol.h"

#include <cfloat>
#include <cstring>
#include <nlohmann/json.hpp>

namespace servelab::server {
using nlohmann::json;

namespace {

constexpr int kMaxNesting = 8;  // nested "data" arrays deeper than this are refused

[[noreturn]] void bad(const std::string& msg) { throw HttpError(400, msg); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// A boolean parameter in `obj["parameters"]`, false when absent.
bool bool_parameter(const json& obj, const char* key, const std::string& where) {
  const json* params = member(obj, "parameters");
  if (!params) return false;
  if (!params->is_object()) bad(where + ": \"parameters\" must be an object");
  const json* v = member(*params, key);
  if (!v) return false;
  if (!v->is_boolean()) bad(where + ": parameter \"" + key + "\" must be a boolean");
  return v->get<bool>();
}

// The request parameter "slo_ms": milliseconds in (0, one day], or nothing.
std::optional<double> slo_parameter(const json& obj) {
  const json* params = member(obj, "parameters");
  if (!params || !params->is_object()) return std::nullopt;
  const json* v = member(*params, "slo_ms");
  if (!v) return std::nullopt;
  if (!v->is_number() || !(v->get<double>() > 0) || !(v->get<double>() <= 86400000.0))
    bad("request: parameter \"slo_ms\" must be a number of milliseconds in (0, 86400000]");
  return v->get<double>();
}

size_t header_size(std::string_view body, const std::string* header_length) {
  if (!header_length) return body.size();
  const std::string& s = *header_length;
  size_t n = 0;
  if (s.empty() || s.size() > 19) bad("Inference-Header-Content-Length must be a byte count");
  for (char c : s) {
    if (c < '0' || c > '9') bad("Inference-Header-Content-Length must be a byte count");
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  if (n > body.size())
    bad("Inference-Header-Content-Length " + s + " is larger than the body (" +
        std::to_string(body.size()) + " bytes)");
  return n;
}

// Appends the numbers of a (possibly nested) "data" array to `out`, at most `limit` of them.
void flatten(const json& data, int depth, size_t limit, std::vector<float>* out) {
  if (depth > kMaxNesting) bad("input \"data\" is nested deeper than " +
                               std::to_string(kMaxNesting) + " arrays");
  for (const json& v : data) {
    if (v.is_array()) {
      flatten(v, depth + 1, limit, out);
    } else if (v.is_number()) {
      if (out->size() == limit) bad("input \"data\" has more values than its shape holds");
      const double d = v.get<double>();
      if (!(d >= -FLT_MAX && d <= FLT_MAX)) bad("input \"data\" holds a value outside FP32");
      out->push_back(static_cast<float>(d));
    } else {
      bad("input \"data\" must hold only numbers (FP32)");
    }
  }
}

void check_input_head(const json& in, const TensorSpec& spec, std::vector<int64_t>* shape) {
  const json* name = member(in, "name");
  if (!name || !name->is_string()) bad("an input needs a string \"name\"");
  if (name->get_ref<const std::string&>() != spec.name)
    bad("unknown input '" + name->get<std::string>() + "' (the model's input is '" +
        spec.name + "')");
  const json* dt = member(in, "datatype");
  if (!dt || !dt->is_string()) bad("input '" + spec.name + "' needs a string \"datatype\"");
  if (dt->get_ref<const std::string&>() != spec.datatype)
    bad("input '" + spec.name + "' has datatype " + dt->get<std::string>() +
        "; the model takes " + spec.datatype);
  const json* sh = member(in, "shape");
  if (!sh || !sh->is_array() || sh->size() > 16)
    bad("input '" + spec.name + "' needs a \"shape\" (an array of at most 16 sizes)");
  for (const json& d : *sh) {
    if (!d.is_number_integer()) bad("input '" + spec.name + "': shape sizes must be integers");
    shape->push_back(d.get<int64_t>());
  }
  if (*shape != spec.shape)
    bad("input '" + spec.name + "' has shape " + shape_text(*shape) + "; the model takes " +
        shape_text(spec.shape));
}

}  // namespace

int64_t v2_element_count(const std::vector<int64_t>& shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > limit / d) return -1;
    n *= d;
  }
  return n <= limit ? n : -1;
}

TensorSpec v2_input_spec(int height, int width) {
  return {"INPUT__0", "FP32", {1, 3, height, width}};
}

TensorSpec v2_output_spec(uint32_t classes) {
  return {"OUTPUT__0", "FP32", {1, classes ? int64_t{classes} : -1}};
}

V2InferRequest parse_v2_infer(std::string_view body, const std::string* header_length,
                              const TensorSpec& input, const std::string& output_name) {
  const size_t head = header_size(body, header_length);
  std::string_view binary = body.substr(head);
  json j = json::parse(body.substr(0, head), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad("the request body is not valid JSON");
  if (!j.is_object()) bad("the request must be a JSON object");
  V2InferRequest r;
  if (const json* id = member(j, "id")) {
    if (!id->is_string()) bad("\"id\" must be a string");
    r.id = id->get<std::string>();
  }
  r.binary_output = bool_parameter(j, "binary_data_output", "request");
  r.slo_ms = slo_parameter(j);
  const json* inputs = member(j, "inputs");
  if (!inputs || !inputs->is_array() || inputs->size() != 1)
    bad("\"inputs\" must be an array of one tensor ('" + input.name + "')");
  const json& in = (*inputs)[0];
  if (!in.is_object()) bad("an input must be a JSON object");
  std::vector<int64_t> shape;
  check_input_head(in, input, &shape);
  const int64_t count = v2_element_count(shape, int64_t{1} << 28);
  if (count < 0) bad("input '" + input.name + "' is too large");
  const json* params = member(in, "parameters");
  const json* size = params && params->is_object() ? member(*params, "binary_data_size") : nullptr;
  if (size) {
    if (!size->is_number_unsigned()) bad("\"binary_data_size\" must be a byte count");
    const uint64_t bytes = size->get<uint64_t>();
    if (bytes != static_cast<uint64_t>(count) * sizeof(float))
      bad("input '" + input.name + "': binary_data_size " + std::to_string(bytes) +
          " does not match its shape (" + std::to_string(count * sizeof(float)) + " bytes)");
    if (bytes != binary.size())
      bad("input '" + input.name + "': binary_data_size " + std::to_string(bytes) + " but " +
          std::to_string(binary.size()) + " bytes follow the JSON header");
    if (member(in, "data")) bad("input '" + input.name + "' has both \"data\" and binary data");
    r.input.resize(static_cast<size_t>(count));
    if (bytes) std::memcpy(r.input.data(), binary.data(), bytes);
  } else {
    if (!binary.empty())
      bad(std::to_string(binary.size()) + " bytes after the JSON header belong to no input");
    const json* data = member(in, "data");
    if (!data || !data->is_array())
      bad("input '" + input.name + "' needs \"data\" (an array) or binary_data_size");
    r.input.reserve(static_cast<size_t>(count));
    flatten(*data, 1, static_cast<size_t>(count), &r.input);
    if (r.input.size() != static_cast<size_t>(count))
      bad("input '" + input.name + "' has " + std::to_string(r.input.size()) +
          " values; its shape holds " + std::to_string(count));
  }
  if (const json* outputs = member(j, "outputs")) {
    if (!outputs->is_array() || outputs->size() > 1)
      bad("\"outputs\" must be an array of at most one tensor ('" + output_name + "')");
    for (const json& o : *outputs) {
      if (!o.is_object()) bad("an output must be a JSON object");
      const json* name = member(o, "name");
      if (!name || !name->is_string() || name->get_ref<const std::string&>() != output_name)
        bad("unknown output requested (the model's output is '" + output_name + "')");
      const json* op = member(o, "parameters");
      if (op && op->is_object() && member(*op, "classification"))
        bad("the classification extension is not supported; use POST /classify/{model}");
      if (op && op->is_object() && member(*op, "binary_data"))
        r.binary_output = bool_parameter(o, "binary_data", "output '" + output_name + "'");
    }
  }
  return r;
}

HttpResponse v2_infer_response(const std::string& model, const std::string& id,
                               const TensorSpec& output, const std::vector<float>& values,
                               bool binary) {
  json out = {{"name", output.name}, {"datatype", output.datatype}, {"shape", output.shape}};
  const size_t bytes = values.size() * sizeof(float);
  if (binary)
    out["parameters"] = {{"binary_data_size", bytes}};
  else
    out["data"] = values;
  json j = {{"model_name", model}, {"model_version", "1"}, {"outputs", json::array({out})}};
  if (!id.empty()) j["id"] = id;
  HttpResponse r;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (binary) {
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(r.body.size()));
    r.body.append(reinterpret_cast<const char*>(values.data()), bytes);
  }
  return r;
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

}  // namespace servelab::server
