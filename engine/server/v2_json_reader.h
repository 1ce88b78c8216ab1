// Reads the JSON of a KServe v2 infer request in one streaming (SAX) pass: the numbers of the
// input's "data" go straight into a float buffer, and only the rest of the document (names,
// shape, parameters: a few dozen values) becomes a JSON tree. A tree of every number would
// cost ~30 bytes of memory per byte of body. Internal to v2_protocol.cpp.
// Thread-safety: a reader is used by one thread; the tree lives in that thread's ParseArena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/server/parse_arena.h"

namespace servelab::server {

struct V2JsonDocument {
  ArenaJson tree;             // the request without inputs[0]["data"] when that is an array
  bool has_data = false;      // inputs[0]["data"] was an array; its numbers are in `values`
  std::vector<float> values;  // those numbers, flattened in order
};

// Parses `text` (the whole body, or the JSON header of a binary-tensor body). Refuses with
// HttpError(400) invalid JSON, a document that is not an object, more than one input, data
// holding anything but FP32 numbers or nested deeper than `max_nesting` arrays, more values
// than a "shape" seen before the data holds (or than `max_values`), and more than
// kMaxTreeValues JSON values outside the data. `input_name` names the input in messages.
// Call inside a ParseArena::Scope that outlives the returned tree.
V2JsonDocument read_v2_json(std::string_view text, const std::string& input_name,
                            int max_nesting, size_t max_values);

// Values a request may hold outside its input data (names, shape, parameters, outputs).
inline constexpr size_t kMaxTreeValues = 4096;

}  // namespace servelab::server
