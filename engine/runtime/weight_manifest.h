// The manifest a skeleton carries (shared_weights.h): which blob holds each of its tensors,
// and the key of its code. Text, one tensor per line; parsed as hostile input (the skeleton
// is a file on disk). Includes LibTorch's scalar types.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/store/blob_store.h"

namespace servelab::runtime {

// One tensor of a module: where it hangs and which bytes of which blob hold it.
struct WeightEntry {
  std::string path;  // submodule path ("" for the module itself)
  std::string name;  // attribute name
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;
  store::BlobRef ref;
  uint64_t offset = 0;  // where its bytes start in the blob (a pack of small tensors)
  uint64_t bytes = 0;
  // Its type and shape, as a blob id covers them.
  std::string header() const;
};

struct WeightManifest {
  std::string code_key;  // empty: the module is never shared by code
  std::vector<WeightEntry> entries;

  std::string text() const;
  // Throws std::runtime_error naming what is wrong: a bad field, a blob id that is not one,
  // a shape whose size disagrees with its bytes, bytes past the end of their blob.
  static WeightManifest parse(const std::string& text);
  // The blobs the entries use, each once, in first-use order.
  std::vector<store::BlobRef> blob_refs() const;
};

}  // namespace servelab::runtime
