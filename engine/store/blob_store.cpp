#include "engine/store/blob_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/store/digest.h"

namespace servelab::store {
namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// A whole file mapped read-only; nullptr (errno set) when it cannot be.
const void* map_file(int fd, size_t n) {
  void* p = mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// Writes all of [data, data + n) to fd; false (errno set) on failure.
bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string temp_name(const std::string& id) {
  static std::atomic<uint64_t> counter{0};
  return ".tmp-" + id + "-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
}

}  // namespace

MappedBlob::~MappedBlob() {
  if (data_ && size_) munmap(const_cast<void*>(data_), size_);
}

BlobStore::BlobStore(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    throw std::runtime_error("cannot create the weight store '" + dir_ + "': " + ec.message());
}

std::string BlobStore::content_id(std::string_view header, const void* data, size_t n) {
  Sha256 sha;
  sha.update(header);
  sha.update("\n", 1);
  sha.update(data, n);
  return sha.hex_digest();
}

bool BlobStore::valid_id(std::string_view id) { return is_sha256_hex(id); }

std::string BlobStore::path_of(const std::string& id) const {
  if (!valid_id(id)) throw BlobError("'" + id.substr(0, 80) + "' is not a blob id");
  return dir_ + "/" + id.substr(0, 2) + "/" + id;
}

bool BlobStore::intact(const std::string& path, size_t n, uint64_t check) const {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == n;
  if (ok) {
    const void* p = map_file(fd, n);
    ok = p && xxh3_64(p, n) == check;
    if (p) munmap(const_cast<void*>(p), n);
  }
  ::close(fd);
  return ok;
}

BlobRef BlobStore::put(const std::string& id, const void* data, size_t n) {
  if (n == 0) throw BlobError("an empty tensor is not stored as a blob");
  BlobRef ref{id, n, xxh3_64(data, n)};
  const std::string path = path_of(id);
  if (intact(path, n, ref.check)) return ref;
  const std::string sub = dir_ + "/" + id.substr(0, 2);
  std::error_code ec;
  fs::create_directories(sub, ec);
  const std::string tmp = sub + "/" + temp_name(id);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (fd < 0) throw std::runtime_error("cannot create blob file '" + tmp + "': " + errno_text());
  bool ok = write_all(fd, data, n) && fsync(fd) == 0;
  std::string why = ok ? "" : errno_text();
  ok = (::close(fd) == 0) && ok;
  // rename replaces atomically: a process that raced us to the same blob wrote the same bytes.
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (why.empty()) why = errno_text();
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write blob '" + path + "': " + why);
  }
  return ref;
}

std::shared_ptr<const MappedBlob> BlobStore::map(const BlobRef& ref) {
  const std::string path = path_of(ref.id);
  std::lock_guard lock(mu_);
  if (auto it = live_.find(ref.id); it != live_.end())
    if (auto alive = it->second.lock()) return alive;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw BlobError("blob " + ref.id + " is missing from '" + dir_ + "'");
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != ref.bytes || ref.bytes == 0) {
    ::close(fd);
    throw BlobError("blob " + ref.id + " is truncated or grown: " + std::to_string(st.st_size) +
                    " bytes on disk, " + std::to_string(ref.bytes) + " expected");
  }
  const void* p = map_file(fd, ref.bytes);
  ::close(fd);  // the mapping keeps the file
  if (!p) throw BlobError("cannot map blob " + ref.id + ": " + errno_text());
  auto blob = std::make_shared<const MappedBlob>(ref.id, p, ref.bytes);
  if (xxh3_64(p, ref.bytes) != ref.check)
    throw BlobError("blob " + ref.id + " does not match its checksum (changed on disk)");
  std::erase_if(live_, [](const auto& kv) { return kv.second.expired(); });
  live_[ref.id] = blob;
  return blob;
}

size_t BlobStore::remove_except(const std::set<std::string>& keep) {
  size_t removed = 0;
  std::error_code ec;
  for (const auto& sub : fs::directory_iterator(dir_, ec)) {
    if (!sub.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(sub.path(), ec)) {
      const std::string name = f.path().filename().string();
      bool blob = valid_id(name);
      if ((blob && !keep.count(name)) || name.rfind(".tmp-", 0) == 0) {
        if (fs::remove(f.path(), ec) && blob) ++removed;
      }
    }
  }
  return removed;
}

uint64_t BlobStore::mapped_bytes() const {
  std::lock_guard lock(mu_);
  uint64_t total = 0;
  for (const auto& [id, weak] : live_)
    if (auto alive = weak.lock()) total += alive->size();
  return total;
}

}  // namespace servelab::store
