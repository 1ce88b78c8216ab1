#include "engine/store/source_digests.h"

#include "engine/store/digest.h"

#include <algorithm>
#include <atomic>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace servelab::store {

namespace fs = std::filesystem;

namespace {

std::atomic<uint64_t> g_temp_counter{0};

}  // namespace

FileIdentity FileIdentity::of(const struct stat& st) {
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.modified_ns = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  id.changed_ns = int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  return id;
}

SourceDigests::SourceDigests(std::string dir, int64_t settled_ns)
    : dir_(std::move(dir)), settled_ns_(settled_ns) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    throw std::runtime_error("cannot create the digest records '" + dir_ + "': " + ec.message());
}

int64_t SourceDigests::now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

bool SourceDigests::settled(const FileIdentity& id, int64_t hashed_from_ns) const {
  return std::max(id.modified_ns, id.changed_ns) + settled_ns_ <= hashed_from_ns;
}

std::string SourceDigests::path_of(const FileIdentity& id) const {
  return dir_ + "/" + std::to_string(id.device) + "-" + std::to_string(id.inode);
}

// A record: "size modified_ns changed_ns hashed_from_ns sha256\n".
std::optional<std::string> SourceDigests::find(const FileIdentity& id) const {
  std::ifstream in(path_of(id));
  FileIdentity seen{id.device, id.inode};
  int64_t hashed_from = 0;
  std::string sha;
  if (!(in >> seen.size >> seen.modified_ns >> seen.changed_ns >> hashed_from >> sha))
    return std::nullopt;
  if (seen != id || !settled(seen, hashed_from) || !is_sha256_hex(sha)) return std::nullopt;
  return sha;
}

void SourceDigests::remember(const FileIdentity& id, const std::string& sha256,
                             int64_t hashed_from_ns) const {
  if (!settled(id, hashed_from_ns) || !is_sha256_hex(sha256)) return;
  const std::string path = path_of(id);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                          std::to_string(g_temp_counter++);
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << id.size << ' ' << id.modified_ns << ' ' << id.changed_ns << ' ' << hashed_from_ns
        << ' ' << sha256 << '\n';
    if (!out.flush()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace servelab::store
