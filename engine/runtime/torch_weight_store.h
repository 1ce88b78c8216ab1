// The LibTorch executor's weight store: a model's host copy comes from its skeleton and the
// shared blobs (shared_weights.h) instead of a whole TorchScript file. A skeleton is keyed by
// the SHA-256 of the model file, so a file registered again, by this process or another, or
// after a restart, loads without deserializing its weights. Every process that uses the
// store marks the skeletons its models hold (engine/store/holders.h); a model's removal
// deletes the skeletons and blobs that no model of any process holds any more.
// Includes LibTorch (torch_executor.cpp).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "engine/control/types.h"
#include "engine/runtime/shared_weights.h"
#include "engine/runtime/weight_store_imports.h"
#include "engine/store/blob_usage.h"
#include "engine/store/holders.h"

namespace servelab::runtime {

class TorchWeightStore {
 public:
  // `dir` holds blobs/, skeletons/ and holders/ (created if needed); `holder` names this
  // process's models in it (stable across restarts: a server's store).
  TorchWeightStore(const std::string& dir, const std::string& holder);

  // Model `id` (`name`)'s host copy: through the skeleton of `file` (whose SHA-256 is
  // `digest`; empty: hashed here) when the store has an intact one, else `file` loaded whole
  // and shared, which writes its blobs and skeleton. Marks the skeleton as held, and notes
  // `input` as its architecture's warm-up input where the skeleton has none yet.
  ModulePtr add(ModelId id, const std::string& name, const std::string& file,
                std::string digest, const WarmInput& input = {});
  // Model `id`'s host copy again (Disk -> Host), from its skeleton. Throws store::BlobError
  // for a blob missing or damaged on disk.
  // Adds where the time went to `parts` when given.
  ModulePtr reload(ModelId id, LoadParts* parts = nullptr);
  // Model `id`'s file's check at `input`, where a registration recorded one with this
  // LibTorch; none for a missing or malformed record.
  std::optional<CheckRecord> recorded_check(ModelId id, const WarmInput& input) const;
  // Records model `id`'s check (once per file; the first record stays).
  void record_check(ModelId id, const CheckRecord& check);
  // Forgets model `id` and deletes what no model of any process holds any more.
  void remove(ModelId id);
  store::WeightBytes bytes_of(ModelId id) const;
  // Its blobs as host parts of the controller's accounting (key: the id's first 64 bits).
  std::vector<WeightPart> parts_of(ModelId id) const;
  uint64_t mapped_bytes() const { return blobs_.mapped_bytes(); }
  // Once the models of a restart are added again: releases this holder's marks of models it
  // does not have now and deletes skeletons, blobs and half-written files that no model of
  // any process holds (what a crash left).
  store::Tidied tidy();

 private:
  struct Held {
    std::string name, digest, skeleton;
  };
  std::string skeleton_path(const std::string& digest) const;
  std::optional<std::string> skeleton_of(ModelId id) const;  // none once removed

  std::string dir_;
  store::BlobStore blobs_;
  ArchitectureCache architectures_;  // modules by code: variants load as copies of one
  store::Holders holders_;  // its Lock serializes file changes across processes and threads
  mutable std::mutex mu_;   // guards usage_ and held_; taken after a holders_ Lock
  store::BlobUsage usage_;
  std::map<ModelId, Held> held_;
};

}  // namespace servelab::runtime
