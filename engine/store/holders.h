// Which models hold which skeletons of a weight store, across every process that uses it, so
// that a blob is deleted only when no model of any process uses it. On disk, beside the
// skeletons: `holders/<digest>/<holder>-<name hash>` marks that model `name` of holder
// `holder` (one server's store, stable across its restarts) uses skeleton `<digest>`, and
// `skeletons/<digest>.blobs` lists the blobs that skeleton uses. Changes happen under an
// exclusive flock of `store.lock` (plus a mutex for the threads of one process); a crash
// leaves marks behind, which keeps blobs rather than losing them.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/store/blob_store.h"

namespace servelab::store {

class Holders {
 public:
  // `dir`: the weight store (created if needed); `holder`: this process's name in it (letters,
  // digits, '-', '_'; at most 64).
  Holders(std::string dir, std::string holder);
  ~Holders();
  Holders(const Holders&) = delete;
  Holders& operator=(const Holders&) = delete;

  // The whole store to this thread, against every other process and thread, while it lives.
  class Lock {
   public:
    explicit Lock(Holders& h);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    Holders& h_;
    std::unique_lock<std::mutex> in_process_;
  };

  // Under a Lock: marks that model `name` uses skeleton `digest`, whose blobs are `ids`.
  void hold(const std::string& digest, const std::string& name, const std::vector<BlobRef>& ids);
  // Under a Lock: removes that mark.
  void release(const std::string& digest, const std::string& name);
  // Under a Lock: removes this holder's marks except those of `kept` (digest, name) pairs:
  // marks a crash left between a model's removal and its mark's. Returns how many went.
  size_t release_others(const std::set<std::pair<std::string, std::string>>& kept);
  // Under a Lock: deletes skeletons that no model of any process holds and files a crash
  // left half written, then the blobs that no remaining skeleton uses. Returns how many
  // blobs went.
  size_t collect(BlobStore& blobs);

 private:
  std::string mark_path(const std::string& digest, const std::string& name) const;
  std::string dir_, holder_;
  int lock_fd_ = -1;
  std::mutex mu_;
};

}  // namespace servelab::store
