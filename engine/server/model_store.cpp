#include "engine/server/model_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/store/digest.h"

namespace servelab::server {
using store::Sha256;
namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// Owns a POSIX file descriptor.
struct Fd {
  int fd = -1;
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

template <class Fill>
StoredFile ModelStore::write_atomically(const std::string& name, Fill&& fill) {
  std::string final_path = path_of(name);
  std::string tmp = (fs::path(dir_) / (".tmp-" + name + "-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(g_temp_counter++)))
                        .string();
  Fd out;
  out.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out.fd < 0) throw std::runtime_error("model store: create '" + tmp + "': " + errno_text());
  Sha256 sha;
  uint64_t bytes = 0;
  try {
    fill([&](const char* p, size_t n) {
      sha.update(p, n);
      write_all(out.fd, p, n, tmp);
      bytes += n;
    });
    ::close(out.fd);  // not yet on disk: make_durable
    out.fd = -1;
    if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
      throw std::runtime_error("model store: rename to '" + final_path + "': " + errno_text());
    }
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  return StoredFile{final_path, sha.hex_digest(), bytes};
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
  return write_atomically(name, [&](auto&& sink) { sink(data.data(), data.size()); });
}

StoredFile ModelStore::copy_from(const std::string& name, const std::string& source_path) {
  std::error_code ec;
  if (!fs::is_regular_file(source_path, ec)) {
    throw StoreError("model file '" + source_path + "' does not exist or is not a regular file");
  }
  std::ifstream in(source_path, std::ios::binary);
  if (!in) throw StoreError("cannot open model file '" + source_path + "'");
  return write_atomically(name, [&](auto&& sink) {
    std::vector<char> buf(1 << 16);
    while (in) {
      in.read(buf.data(), std::streamsize(buf.size()));
      if (in.gcount() > 0) sink(buf.data(), size_t(in.gcount()));
    }
    if (in.bad()) throw StoreError("error reading model file '" + source_path + "'");
  });
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
