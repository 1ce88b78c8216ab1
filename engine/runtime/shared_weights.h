// A TorchScript module as a skeleton file and weight blobs (engine/store): registration puts
// each large tensor into the blob store and writes the module with those tensors emptied
// (the skeleton: code, structure and small tensors, plus a manifest naming the blobs); a
// load reads the small skeleton and attaches read-only mappings of the blobs, so a tensor
// that several models or processes share lives in memory once. Includes LibTorch: only
// torch_executor.cpp and shared_weights.cpp include this header.
// Thread-safety: free functions; the blob store is thread-safe; a module is the caller's.
#pragma once

#include <torch/script.h>

#include <cstddef>
#include <string>
#include <vector>

#include "engine/runtime/torch_tiers.h"
#include "engine/store/blob_store.h"

namespace servelab::runtime {

// Tensors smaller than this stay in the skeleton (biases, normalization statistics): a blob
// each would cost a file, a mapping and a page for a few bytes.
constexpr size_t kMinBlobBytes = 4096;

struct SharedModule {
  ModulePtr module;                  // its large tensors are views of mapped blobs
  std::vector<store::BlobRef> blobs; // one per large tensor (tied tensors repeat an id)
};

// Puts every tensor of `m` of at least kMinBlobBytes into `blobs`, writes `skeleton`
// atomically, and returns `m` with those tensors replaced by views of the mapped blobs (its
// own copies are freed). Throws std::runtime_error when a file cannot be written.
SharedModule share_weights(torch::jit::Module m, store::BlobStore& blobs,
                           const std::string& skeleton);

// Loads a skeleton written by share_weights and attaches its blobs. Throws store::BlobError
// for a blob that is missing or damaged, std::runtime_error for a skeleton that cannot be
// read or whose manifest does not fit its module.
SharedModule load_shared(const std::string& skeleton, store::BlobStore& blobs);

}  // namespace servelab::runtime
