// Which models use which weight blobs, and what each model's weights cost: its logical bytes
// (every tensor it has), unique bytes (blobs no other model uses: what removing or evicting
// it alone frees) and shared bytes (the rest). A blob used twice by one model (tied weights)
// counts once for it. The engine keeps one per weight store.
// Thread-safety: none; the owner serializes calls.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/store/blob_store.h"
#include "engine/store/weight_bytes.h"

namespace servelab::store {

class BlobUsage {
 public:
  // Records the blobs of `owner`, replacing what it had.
  void set(const std::string& owner, const std::vector<BlobRef>& refs);
  // Forgets `owner`; returns the ids that no owner uses any more.
  std::vector<std::string> remove(const std::string& owner);
  WeightBytes bytes_of(const std::string& owner) const;
  // The distinct blobs of `owner` (id and bytes).
  std::vector<BlobRef> blobs_of(const std::string& owner) const;
  // Every id some owner uses.
  std::set<std::string> ids() const;
  // Bytes of all distinct blobs in use (what the store holds for its models).
  uint64_t total_bytes() const;

 private:
  struct Blob {
    uint64_t bytes = 0;
    uint32_t users = 0;
  };
  std::map<std::string, std::set<std::string>> owners_;  // owner -> its distinct blob ids
  std::map<std::string, Blob> blobs_;
};

}  // namespace servelab::store
