// The KServe v2 / Triton inference protocol over HTTP/REST: parsing of infer request bodies
// (JSON tensors and the binary-tensor extension) and the JSON of infer responses and model
// metadata. No engine code: pure functions, thread-safe, fuzzed (fuzz/targets.h).
// Parsing is in v2_protocol.cpp, the response forms in v2_response.cpp.
//
// Binary-tensor extension: the header `Inference-Header-Content-Length: N` says the body is
// N bytes of JSON followed by raw tensor bytes; an input with `"parameters":
// {"binary_data_size": B}` takes its next B bytes (little-endian) instead of "data". An output
// requested with `"parameters": {"binary_data": true}` (or the request parameter
// `binary_data_output`) is answered the same way; a BYTES output's bytes are, per element, a
// 4-byte little-endian length and then the element's bytes.
//
// Batches: the first dimension of the input is the batch size N (1..a server limit); the
// answer's first dimension is N too.
//
// Classification extension: an output requested with `"parameters": {"classification": K}`
// is answered as a BYTES tensor [N, K] of "<score>:<index>[:<label>]" strings, the K highest
// scores of each row in descending order (ties: lower index first).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/server/http_message.h"

namespace servelab::server {

// A model tensor as the protocol describes it (metadata and request checks).
struct TensorSpec {
  std::string name;
  std::string datatype = "FP32";
  std::vector<int64_t> shape;  // -1: any size (metadata only)
};

// The one input and one output of a ServeLab model: INPUT__0 [-1, 3, height, width] and
// OUTPUT__0 [-1, classes] (the names of Triton's PyTorch backend); -1 is the batch dimension,
// as Triton shows it for a model that batches. classes 0: unknown (-1).
TensorSpec v2_input_spec(int height, int width);
TensorSpec v2_output_spec(uint32_t classes);

struct V2InferRequest {
  std::string id;              // echoed in the response; may be empty; at most 4096 bytes
  // The batch: one row-major item (the input shape without its first dimension) per element,
  // in request order; at least one.
  std::vector<std::vector<float>> items;
  bool binary_output = false;  // answer the output in the binary-tensor form
  std::optional<double> slo_ms;  // request parameter "slo_ms": its latency objective
  uint32_t classification = 0;   // output parameter "classification" (K); 0: raw scores
};

// Parses an infer request body for a model whose input is `input` (shape [-1, fixed sizes])
// and whose output is `output` (shape [-1, classes]; classes -1 when unknown). The batch size
// must be 1..max_batch; classification K must be 1..classes (1..2^20 when unknown).
// `header_length` is the value of Inference-Header-Content-Length, or nullptr. Every size is
// checked before anything is allocated. Throws HttpError(413) for a batch over max_batch,
// HttpError(400) naming what else is wrong.
// `tensor`: the binary data already split off the body by the transport (HttpRequest::tensor;
// `body` is then the JSON header alone); a batch of one item takes its values (moved), a
// larger batch copies them. nullptr: the binary data, if any, follows the header in `body`.
V2InferRequest parse_v2_infer(std::string_view body, const std::string* header_length,
                              const TensorSpec& input, const TensorSpec& output,
                              uint32_t max_batch, std::vector<float>* tensor = nullptr);

// The infer response for output `output` (shape fixed, FP32) with `values`: JSON, or JSON
// header plus the values' bytes with Inference-Header-Content-Length when `binary`.
HttpResponse v2_infer_response(const std::string& model, const std::string& id,
                               const TensorSpec& output, const std::vector<float>& values,
                               bool binary);

// The same for a BYTES output (classification): `strings` row-major, as many as the shape.
// Binary: each element is a 4-byte little-endian length and then its bytes.
HttpResponse v2_bytes_response(const std::string& model, const std::string& id,
                               const TensorSpec& output, const std::vector<std::string>& strings,
                               bool binary);

// The classification of one output row: the k highest scores, descending (ties: lower index
// first; NaN last), each as "<score>:<index>" or "<score>:<index>:<label>" when `labels`
// names that index. The score is written in the shortest form that reads back as the same
// float. Requires 1 <= k <= row.size().
std::vector<std::string> v2_top_classes(const std::vector<float>& row, uint32_t k,
                                        const std::vector<std::string>& labels);

// GET /v2/models/{name}: {"name", "versions", "platform", "inputs", "outputs"}.
HttpResponse v2_metadata_response(const std::string& model, const TensorSpec& input,
                                  const TensorSpec& output);
// GET /v2/models/{name}/config: the model configuration in Triton's JSON form (what
// perf_analyzer and tritonclient read): max_batch_size, and the input and output tensors
// without their batch dimension, data types as TYPE_FP32.
HttpResponse v2_config_response(const std::string& model, const TensorSpec& input,
                                const TensorSpec& output, uint32_t max_batch_size);

// Number of elements of `shape`, or -1 when a dimension is negative or the product exceeds
// `limit`.
int64_t v2_element_count(const std::vector<int64_t>& shape, int64_t limit);

}  // namespace servelab::server
