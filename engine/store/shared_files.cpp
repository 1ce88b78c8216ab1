#include "engine/store/shared_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "engine/store/digest.h"

namespace servelab::store {

namespace fs = std::filesystem;

SharedFiles::SharedFiles(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    throw std::runtime_error("cannot create the shared model files '" + dir_ +
                             "': " + ec.message());
}

std::string SharedFiles::path_of(const std::string& sha256) const {
  return dir_ + "/" + sha256;
}

bool SharedFiles::link_copy(const std::string& sha256, uint64_t bytes,
                            const std::string& path) const {
  if (!is_sha256_hex(sha256) || ::link(path_of(sha256).c_str(), path.c_str()) != 0) return false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && uint64_t(st.st_size) == bytes)
    return true;
  ::unlink(path.c_str());  // not a copy of these bytes: the caller copies them
  return false;
}

void SharedFiles::offer(const std::string& sha256, const std::string& path) const {
  if (!is_sha256_hex(sha256)) return;
  ::chmod(path.c_str(), 0444);
  ::link(path.c_str(), path_of(sha256).c_str());  // EEXIST: another copy is shared already
}

bool SharedFiles::release(const std::string& sha256) const {
  if (!is_sha256_hex(sha256)) return false;
  // A store that links the copy between the check and the unlink keeps its own link.
  struct stat st {};
  const std::string path = path_of(sha256);
  return ::lstat(path.c_str(), &st) == 0 && st.st_nlink <= 1 && ::unlink(path.c_str()) == 0;
}

size_t SharedFiles::prune() const {
  size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (is_sha256_hex(name) && release(name)) ++removed;
  }
  return removed;
}

}  // namespace servelab::store
