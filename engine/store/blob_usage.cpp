#include "engine/store/blob_usage.h"

namespace servelab::store {

void BlobUsage::set(const std::string& owner, const std::vector<BlobRef>& refs) {
  remove(owner);
  std::set<std::string>& mine = owners_[owner];
  for (const BlobRef& r : refs) {
    if (!mine.insert(r.id).second) continue;  // tied weights: one use
    Blob& b = blobs_[r.id];
    b.bytes = r.bytes;
    ++b.users;
  }
}

std::vector<std::string> BlobUsage::remove(const std::string& owner) {
  std::vector<std::string> unused;
  auto it = owners_.find(owner);
  if (it == owners_.end()) return unused;
  for (const std::string& id : it->second) {
    auto b = blobs_.find(id);
    if (--b->second.users == 0) {
      unused.push_back(id);
      blobs_.erase(b);
    }
  }
  owners_.erase(it);
  return unused;
}

WeightBytes BlobUsage::bytes_of(const std::string& owner) const {
  WeightBytes w;
  auto it = owners_.find(owner);
  if (it == owners_.end()) return w;
  for (const std::string& id : it->second) {
    const Blob& b = blobs_.at(id);
    w.logical += b.bytes;
    if (b.users == 1) w.unique += b.bytes;
  }
  w.shared = w.logical - w.unique;
  return w;
}

std::vector<BlobRef> BlobUsage::blobs_of(const std::string& owner) const {
  std::vector<BlobRef> refs;
  auto it = owners_.find(owner);
  if (it == owners_.end()) return refs;
  for (const std::string& id : it->second) refs.push_back({id, blobs_.at(id).bytes, 0});
  return refs;
}

std::set<std::string> BlobUsage::ids() const {
  std::set<std::string> all;
  for (const auto& [id, b] : blobs_) all.insert(id);
  return all;
}

uint64_t BlobUsage::total_bytes() const {
  uint64_t total = 0;
  for (const auto& [id, b] : blobs_) total += b.bytes;
  return total;
}

}  // namespace servelab::store
