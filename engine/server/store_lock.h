// Exclusive use of a model store by one server process: an flock(2) on a lock file in the
// store directory, held while the StoreLock lives. The kernel drops it when the process ends,
// kill -9 included, so a crash never leaves a stale lock. Two servers on one store would
// otherwise quarantine each other's new files and lose each other's groups.
// This is the one place that decides who may use a store; a design where several processes
// share one store replaces it.
// Thread-safety: construct and destroy from one thread; nothing else to call.
#pragma once

#include <string>

namespace servelab::server {

class StoreLock {
 public:
  // Takes the lock of store directory `dir` (which must exist) without waiting. Throws
  // std::runtime_error naming the store when another holder has it (the same process
  // included) or when the lock file cannot be opened.
  explicit StoreLock(const std::string& dir);
  ~StoreLock();  // releases the lock; the file stays (removing it would race a new holder)
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

  static constexpr const char* kFileName = "serve.lock";

 private:
  int fd_ = -1;
};

}  // namespace servelab::server
