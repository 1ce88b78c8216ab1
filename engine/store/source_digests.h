// SHA-256 digests of server-side model files, remembered by each file's identity (device,
// inode, size, modification and change times), so that a file the machine has hashed once is
// not read and hashed again when it is registered again: by another server on the same
// weight store, by a replica, or after a restart. As git's index does, a record is trusted
// only when the file had settled (its times at least kSettled older than the hashing's start):
// a write in the same clock tick as the hashing could leave its times unchanged. A file's
// change time moves with every write and cannot be set by its owner, so a file with the
// recorded identity still has the recorded bytes (unless the clock was set back).
// Records are small files in DIR, one per device and inode, replaced atomically; several
// processes may share DIR. A record that cannot be read or written is passed over: the file
// is hashed as it would be without one.
// Thread-safety: any thread; the only state is the directory.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

namespace servelab::store {

// What identifies a file's contents without reading them.
struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t modified_ns = 0, changed_ns = 0;
  static FileIdentity of(const struct stat& st);
  bool operator==(const FileIdentity&) const = default;
};

class SourceDigests {
 public:
  // How long a file must have been unchanged, before its hashing began, for its record to be
  // trusted (two seconds: the coarsest file times in use are a second, FAT's two).
  static constexpr int64_t kSettledNs = 2'000'000'000;

  // Creates `dir` (and parents) if needed; throws std::runtime_error if it cannot.
  // `settled_ns`: kSettledNs but in tests.
  explicit SourceDigests(std::string dir, int64_t settled_ns = kSettledNs);
  const std::string& dir() const { return dir_; }

  // The digest recorded for a file of identity `id`, if one is and may be trusted.
  std::optional<std::string> find(const FileIdentity& id) const;
  // Records `sha256` (64 hex digits) as the digest of the file of identity `id`, whose hashing
  // began at `hashed_from_ns` (CLOCK_REALTIME). A file that had not settled then is not
  // recorded. Failures are ignored.
  void remember(const FileIdentity& id, const std::string& sha256, int64_t hashed_from_ns) const;

  // CLOCK_REALTIME in nanoseconds (the clock of file times).
  static int64_t now_ns();

 private:
  std::string path_of(const FileIdentity& id) const;
  bool settled(const FileIdentity& id, int64_t hashed_from_ns) const;
  std::string dir_;
  int64_t settled_ns_;
};

}  // namespace servelab::store
