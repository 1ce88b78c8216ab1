// Model files shared by hard links between the model stores that use one weight store: a
// registration whose file's digest is known (store/source_digests.h) links the copy another
// store already holds instead of copying the file's bytes again, so that N stores (servers,
// replicas, restarts on a new store) hold a model file once on disk and in the page cache.
// DIR holds one name per digest, `<sha256>`, a hard link to a durable copy in some model
// store. A model store never writes a stored file in place (temp file and rename), so a
// copy's bytes never change; the shared copies are made read-only (0444) as well. A copy no
// model store links any more (one link left: DIR's) is removed by release or prune.
// Links need one file system: where DIR and a model store are on two, nothing is shared and
// the file is copied as before. Failures are passed over: the caller copies instead.
// Thread-safety: any thread; several processes may share DIR (link and unlink are atomic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace servelab::store {

class SharedFiles {
 public:
  // Creates `dir` (and parents) if needed; throws std::runtime_error if it cannot.
  explicit SharedFiles(std::string dir);
  const std::string& dir() const { return dir_; }

  // Links the shared copy of digest `sha256` as `path` (a new name in the caller's store);
  // true when it did and the copy has `bytes` bytes, false (and no `path`) otherwise.
  bool link_copy(const std::string& sha256, uint64_t bytes, const std::string& path) const;
  // Offers `path`, a durable file of the caller's store whose digest is `sha256`, as the
  // shared copy of that digest when there is none. Makes it read-only.
  void offer(const std::string& sha256, const std::string& path) const;
  // Removes the shared copy of `sha256` if no model store links it any more; true if it did.
  bool release(const std::string& sha256) const;
  // release of every shared copy; returns how many were removed.
  size_t prune() const;

 private:
  std::string path_of(const std::string& sha256) const;
  std::string dir_;
};

}  // namespace servelab::store
