// The KServe v2 / Triton inference protocol over HTTP/REST: parsing of infer request bodies
// (JSON tensors and the binary-tensor extension) and the JSON of infer responses and model
// metadata. No engine code: pure functions, thread-safe, fuzzed (fuzz/targets.h).
//
// Binary-tensor extension: the header `Inference-Header-Content-Length: N` says the body is
// N bytes of JSON followed by raw tensor bytes; an input with `"parameters":
// {"binary_data_size": B}` takes its next B bytes (little-endian) instead of "data". An output
// requested with `"parameters": {"binary_data": true}` (or the request parameter
// `binary_data_output`) is answered the same way.
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

// The one input and one output of a ServeLab model: INPUT__0 [1, 3, height, width] and
// OUTPUT__0 [1, classes] (the names of Triton's PyTorch backend). classes 0: unknown (-1).
TensorSpec v2_input_spec(int height, int width);
TensorSpec v2_output_spec(uint32_t classes);

struct V2InferRequest {
  std::string id;              // echoed in the response; may be empty
  std::vector<float> input;    // the input tensor, row-major, as many values as its shape
  bool binary_output = false;  // answer the output in the binary-tensor form
  std::optional<double> slo_ms;  // request parameter "slo_ms": its latency objective
};

// Parses an infer request body for a model whose input is `input` (every dimension fixed)
// and whose output is named `output_name`. `header_length` is the value of
// Inference-Header-Content-Length, or nullptr. Every size is checked against `input` before
// anything is allocated. Throws HttpError(400) naming what is wrong.
V2InferRequest parse_v2_infer(std::string_view body, const std::string* header_length,
                              const TensorSpec& input, const std::string& output_name);

// The infer response for output `output` (shape fixed) with `values`: JSON, or JSON header
// plus the values' bytes with Inference-Header-Content-Length when `binary`.
HttpResponse v2_infer_response(const std::string& model, const std::string& id,
                               const TensorSpec& output, const std::vector<float>& values,
                               bool binary);

// GET /v2/models/{name}: {"name", "versions", "platform", "inputs", "outputs"}.
HttpResponse v2_metadata_response(const std::string& model, const TensorSpec& input,
                                  const TensorSpec& output);

// Number of elements of `shape`, or -1 when a dimension is negative or the product exceeds
// `limit`.
int64_t v2_element_count(const std::vector<int64_t>& shape, int64_t limit);

}  // namespace servelab::server
