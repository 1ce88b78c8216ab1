#include "engine/server/v2_protocol.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>

#include "engine/server/parse_arena.h"
#include "engine/server/v2_json_reader.h"

namespace servelab::server {
// Every document here lives inside parse_v2_infer's ParseArena::Scope.
using json = ArenaJson;

namespace {

constexpr int kMaxNesting = 8;  // nested "data" arrays deeper than this are refused
constexpr size_t kMaxIdBytes = 4096;  // the answer echoes the id: it stays short

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

// `obj["parameters"]`: nullptr when absent; anything but an object is refused (400), never
// ignored.
const json* parameters_of(const json& obj, const std::string& where) {
  const json* params = member(obj, "parameters");
  if (params && !params->is_object()) bad(where + ": \"parameters\" must be an object");
  return params;
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

// Reads the floats of raw little-endian bytes (memcpy: any alignment), so that
// vector::assign copies them into an item without zero-filling it first.
struct FloatReader {
  using iterator_category = std::random_access_iterator_tag;
  using value_type = float;
  using difference_type = std::ptrdiff_t;
  using pointer = const float*;
  using reference = float;
  const char* p;

  float operator*() const {
    float f;
    std::memcpy(&f, p, sizeof f);
    return f;
  }
  FloatReader& operator++() {
    p += sizeof(float);
    return *this;
  }
  FloatReader& operator--() {
    p -= sizeof(float);
    return *this;
  }
  FloatReader& operator+=(difference_type n) {
    p += n * static_cast<difference_type>(sizeof(float));
    return *this;
  }
  difference_type operator-(const FloatReader& o) const {
    return (p - o.p) / static_cast<difference_type>(sizeof(float));
  }
  bool operator==(const FloatReader& o) const { return p == o.p; }
  bool operator!=(const FloatReader& o) const { return p != o.p; }
};

// The items of a batch of `batch` items of `item_size` values from the flattened `values`;
// a batch of one takes them (moved).
std::vector<std::vector<float>> json_items(std::vector<float> values, size_t batch,
                                           size_t item_size) {
  std::vector<std::vector<float>> items;
  items.reserve(batch);
  if (batch == 1) {
    items.push_back(std::move(values));
    return items;
  }
  for (size_t i = 0; i < batch; ++i)
    items.emplace_back(values.begin() + i * item_size, values.begin() + (i + 1) * item_size);
  return items;
}

void check_input_head(const json& in, const TensorSpec& spec, uint32_t max_batch,
                      std::vector<int64_t>* shape) {
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
  shape->reserve(sh->size());
  for (const json& d : *sh) {
    if (!d.is_number_integer()) bad("input '" + spec.name + "': shape sizes must be integers");
    shape->push_back(d.get<int64_t>());
  }
  // The first dimension is the batch (spec: -1); the others must be the model's.
  const bool same_item = shape->size() == spec.shape.size() && !shape->empty() &&
                         std::equal(shape->begin() + 1, shape->end(), spec.shape.begin() + 1);
  if (!same_item)
    bad("input '" + spec.name + "' has shape " + shape_text(*shape) + "; the model takes " +
        shape_text(spec.shape) + " (-1: the batch size)");
  if ((*shape)[0] < 1)
    bad("input '" + spec.name + "' has shape " + shape_text(*shape) +
        ": the batch size (first dimension) must be at least 1");
  if ((*shape)[0] > max_batch)
    throw HttpError(413, "input '" + spec.name + "': batch size " + std::to_string((*shape)[0]) +
                             " is over this server's limit of " + std::to_string(max_batch) +
                             " (--v2-max-batch)");
}

// The output parameter "classification": K in 1..classes (classes < 1: unknown).
uint32_t classification_parameter(const json& params, const TensorSpec& output) {
  const json* v = member(params, "classification");
  if (!v) return 0;
  const int64_t classes = output.shape.size() == 2 ? output.shape[1] : -1;
  const int64_t most = classes > 0 ? classes : int64_t{1} << 20;
  const std::string range = "1.." + std::to_string(most) +
                            (classes > 0 ? " (the model's classes)" : "");
  if (!v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > most)
    bad("output '" + output.name + "': parameter \"classification\" must be an integer in " +
        range + ", got " + v->dump().substr(0, 32));
  return static_cast<uint32_t>(v->get<int64_t>());
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
  return {"INPUT__0", "FP32", {-1, 3, height, width}};
}

TensorSpec v2_output_spec(uint32_t classes) {
  return {"OUTPUT__0", "FP32", {-1, classes ? int64_t{classes} : -1}};
}

namespace {

// The items of a batch of `batch` items of `item_size` floats, from the tensor's bytes; a
// single item takes the values of `tensor` (when split off by the transport) instead.
std::vector<std::vector<float>> binary_items(std::string_view binary, size_t batch,
                                             size_t item_size, std::vector<float>* tensor) {
  if (tensor && batch == 1 && tensor->size() == item_size) {
    std::vector<std::vector<float>> items;
    items.push_back(std::move(*tensor));
    return items;
  }
  std::vector<std::vector<float>> items(batch);
  for (size_t i = 0; i < batch; ++i) {
    const char* first = binary.data() + i * item_size * sizeof(float);
    items[i].assign(FloatReader{first}, FloatReader{first + item_size * sizeof(float)});
  }
  return items;
}

bool same_spec(const TensorSpec& a, const TensorSpec& b) {
  return a.name == b.name && a.datatype == b.datatype && a.shape == b.shape;
}

// The last binary-tensor header this thread parsed successfully, with what it was parsed
// against. Clients (hey, perf_analyzer, tritonclient) send one header for every request of a
// shape; parsing is a pure function of the header's bytes, the tensor's byte count, the specs
// and max_batch, so an exact match gives what a fresh parse would, without the JSON parse.
struct HeaderCache {
  static constexpr size_t kMaxHeader = 1024;  // longer headers are not kept
  bool valid = false;
  std::string header;
  TensorSpec input, output;
  uint32_t max_batch = 0;
  V2InferRequest parsed;  // without items
  size_t batch = 0, item_size = 0;

  bool hit(std::string_view text, std::string_view binary, const TensorSpec& in,
           const TensorSpec& out, uint32_t mb) const {
    return valid && text == header && binary.size() == batch * item_size * sizeof(float) &&
           mb == max_batch && same_spec(in, input) && same_spec(out, output);
  }
};

thread_local HeaderCache t_header_cache;

// parse_v2_infer without the cache; `binary_input`: whether the input came as binary data.
V2InferRequest parse_fresh(std::string_view text, std::string_view binary,
                           std::vector<float>* tensor, const TensorSpec& input,
                           const TensorSpec& output, uint32_t max_batch, bool* binary_input) {
  ParseArena::Scope arena;  // first: outlives every json value below
  const std::string& output_name = output.name;
  V2JsonDocument doc = read_v2_json(text, input.name, kMaxNesting, size_t{1} << 28);
  const json& j = doc.tree;
  if (!j.is_object()) bad("the request must be a JSON object");
  V2InferRequest r;
  if (const json* id = member(j, "id")) {
    if (!id->is_string()) bad("\"id\" must be a string");
    if (id->get_ref<const std::string&>().size() > kMaxIdBytes)
      bad("\"id\" is longer than " + std::to_string(kMaxIdBytes) + " bytes");
    r.id = id->get<std::string>();
  }
  parameters_of(j, "request");
  r.binary_output = bool_parameter(j, "binary_data_output", "request");
  r.slo_ms = slo_parameter(j);
  const json* inputs = member(j, "inputs");
  if (!inputs || !inputs->is_array() || inputs->size() != 1)
    bad("\"inputs\" must be an array of one tensor ('" + input.name + "')");
  const json& in = (*inputs)[0];
  if (!in.is_object()) bad("an input must be a JSON object");
  std::vector<int64_t> shape;
  check_input_head(in, input, max_batch, &shape);
  const int64_t count = v2_element_count(shape, int64_t{1} << 28);
  if (count < 0) bad("input '" + input.name + "' is too large");
  const size_t batch = static_cast<size_t>(shape[0]);
  const size_t item_size = static_cast<size_t>(count) / batch;
  const json* params = parameters_of(in, "input '" + input.name + "'");
  const json* size = params ? member(*params, "binary_data_size") : nullptr;
  if (size) {
    if (!size->is_number_unsigned()) bad("\"binary_data_size\" must be a byte count");
    const uint64_t bytes = size->get<uint64_t>();
    if (bytes != static_cast<uint64_t>(count) * sizeof(float))
      bad("input '" + input.name + "': binary_data_size " + std::to_string(bytes) +
          " does not match its shape (" + std::to_string(count * sizeof(float)) + " bytes)");
    if (bytes != binary.size())
      bad("input '" + input.name + "': binary_data_size " + std::to_string(bytes) + " but " +
          std::to_string(binary.size()) + " bytes follow the JSON header");
    if (doc.has_data || member(in, "data"))
      bad("input '" + input.name + "' has both \"data\" and binary data");
    r.items = binary_items(binary, batch, item_size, tensor);
    *binary_input = true;
  } else {
    if (!binary.empty())
      bad(std::to_string(binary.size()) + " bytes after the JSON header belong to no input");
    if (!doc.has_data)
      bad("input '" + input.name + "' needs \"data\" (an array) or binary_data_size");
    if (doc.values.size() > static_cast<size_t>(count))
      bad("input '" + input.name + "' has more values (" + std::to_string(doc.values.size()) +
          ") than its shape " + shape_text(shape) + " holds (" + std::to_string(count) + ")");
    if (doc.values.size() != static_cast<size_t>(count))
      bad("input '" + input.name + "' has " + std::to_string(doc.values.size()) +
          " values; its shape " + shape_text(shape) + " holds " + std::to_string(count));
    r.items = json_items(std::move(doc.values), batch, item_size);
  }
  if (const json* outputs = member(j, "outputs")) {
    if (!outputs->is_array() || outputs->size() > 1)
      bad("\"outputs\" must be an array of at most one tensor ('" + output_name + "')");
    for (const json& o : *outputs) {
      if (!o.is_object()) bad("an output must be a JSON object");
      const json* name = member(o, "name");
      if (!name || !name->is_string() || name->get_ref<const std::string&>() != output_name)
        bad("unknown output requested (the model's output is '" + output_name + "')");
      const json* op = parameters_of(o, "output '" + output_name + "'");
      if (op) r.classification = classification_parameter(*op, output);
      if (op && member(*op, "binary_data"))
        r.binary_output = bool_parameter(o, "binary_data", "output '" + output_name + "'");
    }
  }
  return r;
}

}  // namespace

V2InferRequest parse_v2_infer(std::string_view body, const std::string* header_length,
                              const TensorSpec& input, const TensorSpec& output,
                              uint32_t max_batch, std::vector<float>* tensor) {
  const size_t head = header_size(body, header_length);
  const std::string_view text = body.substr(0, head);
  std::string_view binary = body.substr(head);
  if (tensor) {
    if (!binary.empty()) bad("the binary data was split off at another offset");
    binary = std::string_view(reinterpret_cast<const char*>(tensor->data()),
                              tensor->size() * sizeof(float));
  }
  HeaderCache& cache = t_header_cache;
  if (cache.hit(text, binary, input, output, max_batch)) {
    V2InferRequest r = cache.parsed;
    r.items = binary_items(binary, cache.batch, cache.item_size, tensor);
    return r;
  }
  bool binary_input = false;
  V2InferRequest r =
      parse_fresh(text, binary, tensor, input, output, max_batch, &binary_input);
  if (binary_input && text.size() <= HeaderCache::kMaxHeader) {
    cache.valid = false;  // until every field below is written
    cache.header.assign(text);
    cache.input = input;
    cache.output = output;
    cache.max_batch = max_batch;
    cache.batch = r.items.size();
    cache.item_size = r.items[0].size();
    cache.parsed.id = r.id;
    cache.parsed.binary_output = r.binary_output;
    cache.parsed.slo_ms = r.slo_ms;
    cache.parsed.classification = r.classification;
    cache.valid = true;
  }
  return r;
}

}  // namespace servelab::server
