#include "engine/server/model_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include "engine/store/digest.h"
#include "engine/store/shared_files.h"
#include "engine/store/source_digests.h"

namespace servelab::server {
using store::Sha256;
namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// Owns a POSIX file descriptor.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw std::runtime_error("model store: write to '" + path + "': " + errno_text());
    p += w;
    n -= size_t(w);
  }
}

std::atomic<uint64_t> g_temp_counter{0};

// Opens a server-side model file for reading; O_NONBLOCK so that a FIFO named by a client
// cannot hang the open (it is then refused as not a regular file).
Fd open_source(const std::string& path) {
  Fd in;
  in.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (in.fd < 0 && errno != ENOENT && errno != ENOTDIR)
    throw StoreError("cannot open model file '" + path + "': " + errno_text());
  struct stat st {};
  if (in.fd < 0 || ::fstat(in.fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw StoreError("model file '" + path + "' does not exist or is not a regular file");
  return in;
}

store::FileIdentity identity_of(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw StoreError("cannot read model file '" + path + "'");
  return store::FileIdentity::of(st);
}

// Reads `in` from its start to its end, hashing what it copies to `out`.
Written hash_and_copy(int in, int out, const std::string& path, const std::string& tmp) {
  Sha256 sha;
  std::vector<char> buf(1 << 16);
  uint64_t bytes = 0;
  for (;;) {
    const ssize_t n = ::pread(in, buf.data(), buf.size(), off_t(bytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw StoreError("error reading model file '" + path + "': " + errno_text());
    if (n == 0) break;
    sha.update(buf.data(), size_t(n));
    write_all(out, buf.data(), size_t(n), tmp);
    bytes += uint64_t(n);
  }
  return Written{sha.hex_digest(), bytes};
}

// Copies `in` from its start to its end without a pass through this process (the kernel
// copies between the page caches, or shares the blocks where the file system can); falls
// back to reading and writing where the kernel cannot. Returns the bytes copied.
uint64_t copy_in_kernel(int in, int out, const std::string& path, const std::string& tmp) {
  loff_t from = 0, to = 0;
  for (;;) {
    const ssize_t n = ::copy_file_range(in, &from, out, &to, size_t{1} << 30, 0);
    if (n > 0) continue;
    if (n == 0) return uint64_t(to);
    if (errno == EINTR) continue;
    if (to == 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                    errno == EOPNOTSUPP)) {
      return hash_and_copy(in, out, path, tmp).bytes;  // the digest is the record's
    }
    throw std::runtime_error("model store: copy of '" + path + "' to '" + tmp + "': " +
                             errno_text());
  }
}

}  // namespace

ModelStore::ModelStore(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("model store: cannot create '" + dir + "': " + ec.message());
  dir_ = fs::absolute(dir).lexically_normal().string();
}

std::string ModelStore::db_path() const { return (fs::path(dir_) / "registry.sqlite").string(); }

std::string ModelStore::path_of(const std::string& name) const {
  // The file name is derived from the model name: only a valid name may ever reach the
  // file system ("a.pt\0" would otherwise name the file of model "a").
  if (std::string why = model_name_problem(name); !why.empty()) {
    throw StoreError("invalid model name: " + why);
  }
  return (fs::path(dir_) / (name + ".pt")).string();
}

std::string ModelStore::temp_path(const std::string& name) const {
  return (fs::path(dir_) / (".tmp-" + name + "-" + std::to_string(::getpid()) + "-" +
                            std::to_string(g_temp_counter++)))
      .string();
}

// Renames a finished temp file to `final_path`; on failure removes it and throws.
void ModelStore::publish(const std::string& tmp, const std::string& final_path) {
  if (::rename(tmp.c_str(), final_path.c_str()) == 0) return;
  const std::string why = errno_text();
  ::unlink(tmp.c_str());
  throw std::runtime_error("model store: rename to '" + final_path + "': " + why);
}

std::optional<StoredFile> ModelStore::link_shared(const std::string& name,
                                                  const std::string& sha256, uint64_t bytes,
                                                  const store::SharedFiles& shared) {
  std::string final_path = path_of(name);
  const std::string tmp = temp_path(name);
  if (!shared.link_copy(sha256, bytes, tmp)) return std::nullopt;
  publish(tmp, final_path);
  return StoredFile{std::move(final_path), sha256, bytes};
}

template <class Write>
StoredFile ModelStore::write_atomically(const std::string& name, Write&& write) {
  std::string final_path = path_of(name);
  std::string tmp = temp_path(name);
  Fd out;
  out.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out.fd < 0) throw std::runtime_error("model store: create '" + tmp + "': " + errno_text());
  StoredFile file;
  try {
    Written w = write(out.fd, tmp);
    ::close(out.fd);  // not yet on disk: make_durable
    out.fd = -1;
    file = StoredFile{final_path, std::move(w.sha256), w.bytes};
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  publish(tmp, final_path);
  return file;
}

void ModelStore::make_durable(const StoredFile& file) {
  Fd f;
  f.fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0 || ::fsync(f.fd) != 0)
    throw std::runtime_error("model store: fsync of '" + file.path + "': " + errno_text());
  Fd d;
  d.fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.fd >= 0) ::fsync(d.fd);  // makes the rename durable; best effort
}

StoredFile ModelStore::put(const std::string& name, std::string_view data) {
  return write_atomically(name, [&](int out, const std::string& tmp) {
    Sha256 sha;
    sha.update(data.data(), data.size());
    write_all(out, data.data(), data.size(), tmp);
    return Written{sha.hex_digest(), data.size()};
  });
}

StoredFile ModelStore::copy_from(const std::string& name, const std::string& source_path,
                                 const store::SourceDigests* digests,
                                 const store::SharedFiles* shared) {
  Fd in = open_source(source_path);
  const store::FileIdentity before = identity_of(in.fd, source_path);
  if (digests) {
    if (const std::optional<std::string> known = digests->find(before)) {
      if (shared)
        if (std::optional<StoredFile> f = link_shared(name, *known, before.size, *shared))
          return *f;
      StoredFile f = write_atomically(name, [&](int out, const std::string& tmp) {
        return Written{*known, copy_in_kernel(in.fd, out, source_path, tmp)};
      });
      // Changed while it was copied: hashed below, as a file without a record.
      if (f.bytes == before.size && identity_of(in.fd, source_path) == before) return f;
    }
  }
  const int64_t hashed_from = store::SourceDigests::now_ns();
  StoredFile f = write_atomically(name, [&](int out, const std::string& tmp) {
    return hash_and_copy(in.fd, out, source_path, tmp);
  });
  if (digests && f.bytes == before.size && identity_of(in.fd, source_path) == before)
    digests->remember(before, f.sha256, hashed_from);
  return f;
}

std::vector<std::string> ModelStore::stray_files(const std::set<std::string>& names) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    std::string file = entry.path().filename().string();
    bool temp = file.rfind(".tmp-", 0) == 0;
    bool model = entry.path().extension() == ".pt";
    if (temp || (model && !names.count(entry.path().stem().string()))) {
      out.push_back(entry.path().string());
    }
  }
  return out;
}

std::string ModelStore::make_quarantine_dir() const {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  const fs::path parent = fs::path(dir_) / "quarantine";
  std::error_code ec;
  fs::create_directories(parent, ec);
  for (int n = 0; !ec && n < 1000; ++n) {
    fs::path dir = parent / (n == 0 ? std::string(stamp) : stamp + ("-" + std::to_string(n)));
    if (fs::create_directory(dir, ec)) return dir.string();  // false: it exists, try the next
  }
  throw std::runtime_error("model store: cannot create a quarantine folder in '" +
                           parent.string() + "'" + (ec ? ": " + ec.message() : std::string()));
}

void ModelStore::remove(const std::string& name) {
  if (!model_name_problem(name).empty()) return;  // no file can have that name
  std::error_code ec;
  fs::remove(path_of(name), ec);
}

}  // namespace servelab::server
