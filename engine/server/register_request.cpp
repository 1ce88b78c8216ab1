#include "engine/server/register_request.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/server/json_error.h"
#include "engine/server/multipart.h"

namespace servelab::server {
using nlohmann::json;

namespace {

// Bounds of a model's preprocessing: the per-request tensor and the resize (which a thin
// image multiplies by its aspect ratio) stay within tens of megabytes.
constexpr int kMaxInputSide = 1024;
constexpr int kMaxResize = 1024;
constexpr double kMinStd = 1e-6;
constexpr double kMaxMeanStd = 1e6;

[[noreturn]] void bad(const std::string& msg) { throw HttpError(400, msg); }

int int_in(const json& v, const char* key, int lo, int hi) {
  if (!v.is_number_integer()) bad(std::string("preprocess.") + key + " must be an integer");
  long long x = v.get<long long>();
  if (x < lo || x > hi) {
    bad(std::string("preprocess.") + key + " must be between " + std::to_string(lo) + " and " +
        std::to_string(hi));
  }
  return int(x);
}

// Three numbers in [lo, hi]; a std below 1e-6 (or denormal) turns every score into NaN.
void triple(const json& v, const char* key, float out[3], double lo, double hi) {
  std::string what = std::string("preprocess.") + key + " must be 3 numbers between " +
                     json(lo).dump() + " and " + json(hi).dump();
  if (!v.is_array() || v.size() != 3) bad(what);
  for (int i = 0; i < 3; ++i) {
    if (!v[i].is_number()) bad(what);
    double x = v[i].get<double>();
    if (!(x >= lo && x <= hi)) bad(what);
    out[i] = float(x);
  }
}

std::vector<std::string> labels_from_json(const json& v) {
  if (v.is_null()) return {};
  if (v.is_string()) return labels_from_text(v.get<std::string>());
  if (!v.is_array()) bad("labels must be an array of strings or newline-separated text");
  std::vector<std::string> out;
  for (const auto& l : v) {
    if (!l.is_string()) bad("labels must be an array of strings");
    out.push_back(l.get<std::string>());
  }
  return out;
}

uint32_t contexts_from(const json& v) {
  if (v.is_null()) return 0;
  if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 64) {
    bad("contexts must be an integer between 0 and 64");
  }
  return uint32_t(v.get<long long>());
}

// An SLO in milliseconds: a positive number up to a day (none: null or absent).
std::optional<double> slo_ms_from(const json& v) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= 86400000.0))
    bad("slo_ms must be a number of milliseconds in (0, 86400000]");
  return v.get<double>();
}

json parse_json_text(std::string_view text, const char* what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) bad(std::string(what) + " is not valid JSON: " + json_error(text));
  return j;
}

RegisterRequest from_json_body(const std::string& body) {
  json j = parse_json_text(body, "request body");
  if (!j.is_object()) bad("request body must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const char* kKeys[] = {"name", "path", "labels", "preprocess", "contexts", "slo_ms"};
    if (std::find(std::begin(kKeys), std::end(kKeys), it.key()) == std::end(kKeys)) {
      bad("unknown field '" + echo_value(it.key()) +
          "' (expected name, path, labels, preprocess, contexts, slo_ms)");
    }
  }
  RegisterRequest r;
  if (!j.contains("name") || !j["name"].is_string()) bad("missing string field 'name'");
  if (!j.contains("path") || !j["path"].is_string() || j["path"].get<std::string>().empty()) {
    bad("missing string field 'path' (a model file on the server; upload with multipart/form-data)");
  }
  r.name = j["name"].get<std::string>();
  r.source_path = j["path"].get<std::string>();
  r.labels = labels_from_json(j.value("labels", json()));
  if (j.contains("preprocess")) r.preprocess = preprocess_from_json(j["preprocess"]);
  r.contexts = contexts_from(j.value("contexts", json()));
  r.slo_ms = slo_ms_from(j.value("slo_ms", json()));
  return r;
}

RegisterRequest from_multipart(const std::string& content_type, const std::string& body) {
  std::vector<FormPart> parts;
  try {
    parts = parse_multipart(content_type, body);
  } catch (const MultipartError& e) {
    bad(e.what());
  }
  RegisterRequest r;
  const FormPart* name = find_part(parts, "name");
  const FormPart* model = find_part(parts, "model");
  if (!name) bad("missing form field 'name'");
  if (!model) bad("missing form field 'model' (the TorchScript file)");
  r.name = name->data;
  r.model_bytes = model->data;
  if (const FormPart* labels = find_part(parts, "labels")) r.labels = labels_from_text(labels->data);
  if (const FormPart* pre = find_part(parts, "preprocess")) {
    r.preprocess = preprocess_from_json(parse_json_text(pre->data, "form field 'preprocess'"));
  }
  if (const FormPart* c = find_part(parts, "contexts")) {
    r.contexts = contexts_from(parse_json_text(c->data, "form field 'contexts'"));
  }
  if (const FormPart* slo = find_part(parts, "slo_ms")) {
    r.slo_ms = slo_ms_from(parse_json_text(slo->data, "form field 'slo_ms'"));
  }
  return r;
}

}  // namespace

RegisterRequest parse_register_request(HttpRequest& req) {
  const std::string* ct = req.header("content-type");
  std::string type = ct ? ct->substr(0, ct->find(';')) : "";
  for (auto& c : type) c = char(std::tolower(static_cast<unsigned char>(c)));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  std::string body = std::move(req.body);
  RegisterRequest r;
  if (type == "multipart/form-data") r = from_multipart(*ct, body);
  else if (type == "application/json" || type.empty()) r = from_json_body(body);
  else bad("unsupported Content-Type '" + *ct + "' (use multipart/form-data or application/json)");
  return r;
}

runtime::Preprocess preprocess_from_json(const json& j) {
  runtime::Preprocess p;
  if (j.is_null()) return p;
  if (!j.is_object()) bad("preprocess must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "input_size") {
      if (v.is_array() && v.size() == 2) {
        p.input_width = int_in(v[0], "input_size[0]", 1, kMaxInputSide);
        p.input_height = int_in(v[1], "input_size[1]", 1, kMaxInputSide);
      } else {
        p.input_width = p.input_height = int_in(v, "input_size", 1, kMaxInputSide);
      }
    } else if (k == "input_width") {
      p.input_width = int_in(v, "input_width", 1, kMaxInputSide);
    } else if (k == "input_height") {
      p.input_height = int_in(v, "input_height", 1, kMaxInputSide);
    } else if (k == "resize") {
      p.resize = int_in(v, "resize", -1, kMaxResize);
    } else if (k == "mean") {
      triple(v, "mean", p.mean, -kMaxMeanStd, kMaxMeanStd);
    } else if (k == "std") {
      triple(v, "std", p.std, kMinStd, kMaxMeanStd);
    } else {
      bad("unknown preprocess key '" + k +
          "' (expected input_size, input_width, input_height, resize, mean, std)");
    }
  }
  return p;
}

json preprocess_to_json(const runtime::Preprocess& p) {
  return json{{"input_width", p.input_width},
              {"input_height", p.input_height},
              {"resize", p.resize},
              {"mean", {p.mean[0], p.mean[1], p.mean[2]}},
              {"std", {p.std[0], p.std[1], p.std[2]}}};
}

std::vector<std::string> labels_from_text(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (!line.empty()) out.emplace_back(line);
  }
  return out;
}

}  // namespace servelab::server
