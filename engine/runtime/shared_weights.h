// A TorchScript module as a skeleton file and weight blobs (engine/store): registration puts
// each tensor into the blob store (large ones a blob each, the small ones of a module packed
// into one) and writes the module with its tensors emptied (the skeleton: code and structure,
// plus a manifest naming the blobs and a key of its code); a load attaches read-only mappings
// of the blobs, so a tensor that several models or processes share lives in memory once.
// Modules whose skeletons have the same code (variants of one architecture) share more in a
// process: the second and later are structural copies of one already loaded (no code to
// import, one set of compiled functions and execution plans), with their own tensors.
// Includes LibTorch: only torch_executor.cpp, torch_weight_store.cpp and shared_weights.cpp
// include this header.
#pragma once

#include <torch/script.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/runtime/load_parts.h"
#include "engine/runtime/torch_tiers.h"
#include "engine/store/blob_store.h"

namespace servelab::runtime {

// Tensors smaller than this share one blob per module (biases, normalization statistics): a
// blob each would cost a file, a mapping and a page for a few bytes.
constexpr size_t kMinBlobBytes = 4096;

struct SharedModule {
  ModulePtr module;                   // its tensors are views of mapped blobs
  std::vector<store::BlobRef> blobs;  // the blobs it uses (tied tensors repeat an id)
  std::string code_key;               // SHA-256 of its code; empty: never shared
};

// The modules of this process by the code of their skeletons: where a loaded one has the
// same code, a new one is its structural copy. Holds every one weakly, so that any that is
// still alive serves (the last one loaded may be the first evicted): an architecture whose
// modules are all gone is imported again. Thread-safe.
class ArchitectureCache {
 public:
  ModulePtr find(const std::string& code_key);
  void put(const std::string& code_key, const ModulePtr& module);
  // Holds `module` for the cache's life (an architecture imported ahead of any model that
  // uses it): find() serves it while every model of its code is gone.
  void keep(const std::string& code_key, const ModulePtr& module);

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<std::weak_ptr<torch::jit::Module>>> by_code_;
  std::vector<ModulePtr> kept_;
};

// The code key a skeleton written by share_weights carries (its manifest's), read without
// importing its code; empty when its module cannot be shared. Throws std::runtime_error for
// a file that is not such a skeleton.
std::string skeleton_code_key(const std::string& skeleton);

// Puts every tensor of `m` into `blobs`, writes `skeleton` atomically, and returns `m` with
// its tensors replaced by views of the mapped blobs (its own copies are freed). Throws
// std::runtime_error when a file cannot be written.
SharedModule share_weights(torch::jit::Module m, store::BlobStore& blobs,
                           const std::string& skeleton);

// Loads a skeleton written by share_weights and attaches its blobs; with `cache`, as a copy
// of a module of the same code when the cache has one (and adds it there). Throws
// store::BlobError for a blob that is missing or damaged, std::runtime_error for a skeleton
// that cannot be read or whose manifest does not fit its module. With `parts`, adds the
// time spent on the skeleton (read_s, deserialize_s) and on the blobs (share_s).
SharedModule load_shared(const std::string& skeleton, store::BlobStore& blobs,
                         ArchitectureCache* cache = nullptr, LoadParts* parts = nullptr);

}  // namespace servelab::runtime
