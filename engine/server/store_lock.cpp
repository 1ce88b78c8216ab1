#include "engine/server/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace servelab::server {

namespace {

// The holder's process id as it wrote it, for the message; "" when unreadable.
std::string holder_pid(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string pid(buf, size_t(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.find_first_not_of("0123456789") == std::string::npos ? pid : "";
}

// Replaces the file's contents with this process's id (best effort: only for messages).
void write_pid(int fd) {
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
}

}  // namespace

StoreLock::StoreLock(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kFileName).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("model store '" + dir + "': cannot open its lock file '" + path +
                             "': " + std::strerror(errno));
  }
  int rc;
  do {
    rc = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) {
    write_pid(fd_);
    return;
  }
  const int err = errno;
  const std::string pid = holder_pid(fd_);
  ::close(fd_);
  fd_ = -1;
  if (err == EWOULDBLOCK) {
    throw std::runtime_error(
        "model store '" + dir + "' is in use by another server" +
        (pid.empty() ? std::string() : " (process " + pid + ")") + ", which holds its lock '" +
        path + "': stop that server or use another store directory");
  }
  throw std::runtime_error("model store '" + dir + "': cannot lock '" + path +
                           "': " + std::strerror(err));
}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

}  // namespace servelab::server
