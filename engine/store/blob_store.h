// Content-addressed weight blobs: one file per distinct tensor, shared by every model that
// has that tensor and, through read-only mmap, by every process on the machine (TrIMS's model
// resource manager, done with files and the page cache). A blob is written once, atomically,
// and never changed; the owner of a store deletes blobs that no model uses any more, which
// leaves existing mappings valid (an unlinked file stays mapped).
// Thread-safety: every method may be called from any thread. Several processes may put and
// map blobs of one directory at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace servelab::store {

// One tensor's bytes as the store knows them.
struct BlobRef {
  std::string id;      // 64 hex digits: SHA-256 of the tensor's description and bytes
  uint64_t bytes = 0;  // its size
  uint64_t check = 0;  // XXH3-64 of its bytes, verified whenever a process maps it
};

// A blob that is missing, truncated or changed on disk, or an id that is not one.
struct BlobError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A read-only mapping of one blob. Tensors hold it through their deleters; it is unmapped
// when the last of them goes.
class MappedBlob {
 public:
  MappedBlob(std::string id, const void* data, size_t size) noexcept
      : id_(std::move(id)), data_(data), size_(size) {}
  ~MappedBlob();
  MappedBlob(const MappedBlob&) = delete;
  MappedBlob& operator=(const MappedBlob&) = delete;
  const std::string& id() const { return id_; }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::string id_;
  const void* data_;
  size_t size_;
};

class BlobStore {
 public:
  // Creates `dir` (and parents) if needed; throws std::runtime_error if it cannot.
  explicit BlobStore(std::string dir);

  const std::string& dir() const { return dir_; }
  // The id of a tensor: SHA-256 over its description (dtype and shape, in `header`) and bytes.
  static std::string content_id(std::string_view header, const void* data, size_t n);
  // Whether `id` has the form of a blob id (64 lowercase hex digits).
  static bool valid_id(std::string_view id);
  std::string path_of(const std::string& id) const;

  // Stores `data` as blob `id` unless an intact blob of that id is there already (a damaged
  // one is replaced). Throws std::runtime_error when it cannot write (a full disk: the
  // partial file is removed).
  BlobRef put(const std::string& id, const void* data, size_t n);
  // Maps blob `ref` read-only, reusing this process's live mapping of it; a new mapping is
  // checked against ref's size and XXH3 first. Throws BlobError.
  std::shared_ptr<const MappedBlob> map(const BlobRef& ref);
  // Deletes every blob whose id is not in `keep`; returns how many. Mapped blobs stay
  // readable by those who hold them.
  size_t remove_except(const std::set<std::string>& keep);
  // Bytes of the blobs this process has mapped now.
  uint64_t mapped_bytes() const;

 private:
  bool intact(const std::string& path, size_t n, uint64_t check) const;
  std::string dir_;
  mutable std::mutex mu_;  // guards live_
  std::unordered_map<std::string, std::weak_ptr<const MappedBlob>> live_;
};

}  // namespace servelab::store
