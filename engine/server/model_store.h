// The model store: a directory holding one TorchScript file per registered model plus the
// registry database. Files enter it atomically (temp file, rename; then fsync of the file and
// of the directory by make_durable, before anything records them) and are checksummed with
// SHA-256 on the way in.
// Thread-safety: methods may be called from any thread; callers serialize writes to the same
// model name (the server holds its registration lock).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/model_name.h"

namespace servelab::store {
class SharedFiles;
class SourceDigests;
}

namespace servelab::server {

// A store operation that failed because of its input (unreadable source file, bad name);
// message is user-facing. I/O failures of the store itself are std::runtime_error.
struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Model names are also file names: servelab::model_name_problem (common/model_name.h) checks
// them.
using servelab::model_name_problem;

// What a write into the store produced: the file's digest and size.
struct Written {
  std::string sha256;
  uint64_t bytes = 0;
};

struct StoredFile {
  std::string path;    // absolute path of the file in the store
  std::string sha256;  // hex digest of its contents
  uint64_t bytes = 0;
};

class ModelStore {
 public:
  // Creates `dir` (and parents) if needed; throws std::runtime_error if it cannot.
  explicit ModelStore(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::string db_path() const;                         // the SQLite registry file
  // Where model `name` lives; throws StoreError for an invalid name (model_name_problem).
  std::string path_of(const std::string& name) const;

  // Writes `data` as model `name`, replacing any previous file atomically. The file is not
  // yet on disk: call make_durable (on any thread) before it is recorded anywhere (a crash
  // before that can leave it torn under its name, where it has no registry row: the next
  // start sets it aside as a stray file).
  StoredFile put(const std::string& name, std::string_view data);
  // Copies a server-side file into the store as model `name`, as put does. With `digests`,
  // a file whose digest they hold (store/source_digests.h) is copied by the kernel without
  // being hashed, or, with `shared` holding a copy of that digest (store/shared_files.h),
  // linked to that copy without being read; a file hashed here is recorded in `digests`.
  // Throws StoreError when the source cannot be opened or read, or is not a regular file.
  StoredFile copy_from(const std::string& name, const std::string& source_path,
                       const store::SourceDigests* digests = nullptr,
                       const store::SharedFiles* shared = nullptr);
  // Waits until `file` (from put or copy_from) and its name are on disk. Throws
  // std::runtime_error if they cannot be.
  void make_durable(const StoredFile& file);
  // Files of the store that no model in `names` owns: model files (*.pt) of other names and
  // temp files left by an interrupted write. Other files (the registry database, the lock)
  // and folders are never listed. Paths are absolute.
  std::vector<std::string> stray_files(const std::set<std::string>& names) const;
  // Creates and returns a new, empty folder `<dir>/quarantine/<UTC time>[-n]` for files the
  // server must set aside rather than delete. Throws std::runtime_error if it cannot.
  std::string make_quarantine_dir() const;
  // Removes model `name`'s file; missing files and invalid names are not an error (an invalid
  // name has no file).
  void remove(const std::string& name);

 private:
  // `write(fd, temp_path)` fills a temp file and returns its Written; the file is then
  // renamed into place.
  template <class Write>
  StoredFile write_atomically(const std::string& name, Write&& write);
  // Model `name` as a new link to the shared copy of `sha256`, if there is one of `bytes`.
  std::optional<StoredFile> link_shared(const std::string& name, const std::string& sha256,
                                        uint64_t bytes, const store::SharedFiles& shared);
  std::string temp_path(const std::string& name) const;
  static void publish(const std::string& tmp, const std::string& final_path);
  std::string dir_;
};

}  // namespace servelab::server
