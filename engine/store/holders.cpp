#include "engine/store/holders.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "engine/store/digest.h"

namespace servelab::store {
namespace fs = std::filesystem;

namespace {

bool valid_holder(const std::string& h) {
  if (h.empty() || h.size() > 64) return false;
  for (char c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

// The ids listed in a skeleton's .blobs file (malformed lines are skipped).
void read_ids(const fs::path& list, std::set<std::string>& ids) {
  std::ifstream in(list);
  for (std::string id; std::getline(in, id);)
    if (BlobStore::valid_id(id)) ids.insert(id);
}

}  // namespace

Holders::Holders(std::string dir, std::string holder) : dir_(std::move(dir)), holder_(std::move(holder)) {
  if (!valid_holder(holder_)) throw std::runtime_error("bad weight store holder '" + holder_ + "'");
  std::error_code ec;
  fs::create_directories(dir_ + "/holders", ec);
  fs::create_directories(dir_ + "/skeletons", ec);
  lock_fd_ = ::open((dir_ + "/store.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw std::runtime_error("cannot open '" + dir_ + "/store.lock': " + std::strerror(errno));
}

Holders::~Holders() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Holders::Lock::Lock(Holders& h) : h_(h), in_process_(h.mu_) {
  while (flock(h_.lock_fd_, LOCK_EX) != 0)
    if (errno != EINTR) throw std::runtime_error("cannot lock the weight store: " + std::string(std::strerror(errno)));
}

Holders::Lock::~Lock() { flock(h_.lock_fd_, LOCK_UN); }

std::string Holders::mark_path(const std::string& digest, const std::string& name) const {
  if (!BlobStore::valid_id(digest)) throw std::runtime_error("bad skeleton digest");
  return dir_ + "/holders/" + digest + "/" + holder_ + "-" + Sha256::hex(name).substr(0, 16);
}

void Holders::hold(const std::string& digest, const std::string& name,
                   const std::vector<BlobRef>& ids) {
  const std::string list = dir_ + "/skeletons/" + digest + ".blobs";
  std::string text;
  for (const BlobRef& r : ids) text += r.id + "\n";
  std::ofstream out(list + ".tmp", std::ios::trunc);
  out << text;
  out.close();
  if (!out || std::rename((list + ".tmp").c_str(), list.c_str()) != 0)
    throw std::runtime_error("cannot write '" + list + "'");
  // The mark last: a mark always finds its skeleton's blob list.
  const std::string mark = mark_path(digest, name);
  fs::create_directories(fs::path(mark).parent_path());
  std::ofstream(mark) << name << "\n";
}

void Holders::release(const std::string& digest, const std::string& name) {
  std::error_code ec;
  fs::remove(mark_path(digest, name), ec);
}

size_t Holders::release_others(const std::set<std::pair<std::string, std::string>>& kept) {
  std::set<std::string> keep;
  for (const auto& [digest, name] : kept) keep.insert(mark_path(digest, name));
  const std::string mine = holder_ + "-";
  size_t released = 0;
  std::error_code ec;
  for (const auto& skeleton : fs::directory_iterator(dir_ + "/holders", ec)) {
    std::error_code inner;
    for (const auto& e : fs::directory_iterator(skeleton.path(), inner)) {
      const std::string file = e.path().filename().string();
      if (file.rfind(mine, 0) != 0 || keep.count(e.path().string())) continue;
      if (fs::remove(e.path(), inner)) ++released;
    }
  }
  return released;
}

size_t Holders::collect(BlobStore& blobs) {
  std::error_code ec;
  std::set<std::string> keep;
  for (const auto& e : fs::directory_iterator(dir_ + "/skeletons", ec)) {
    const fs::path p = e.path();
    // Writers hold the store's lock, so a temporary file seen under it is a crash's.
    if (p.filename().string().find(".tmp") != std::string::npos) {
      fs::remove(p, ec);
      continue;
    }
    if (p.extension() != ".pt") continue;
    const std::string digest = p.stem().string();
    const fs::path marks = fs::path(dir_) / "holders" / digest;
    if (fs::exists(marks, ec) && !fs::is_empty(marks, ec)) {
      read_ids(fs::path(dir_) / "skeletons" / (digest + ".blobs"), keep);
      continue;
    }
    fs::remove(p, ec);  // no model of any process holds it
    fs::remove(fs::path(dir_) / "skeletons" / (digest + ".blobs"), ec);
    fs::remove(fs::path(dir_) / "skeletons" / (digest + ".input"), ec);  // its warm-up input
    fs::remove(fs::path(dir_) / "skeletons" / (digest + ".check"), ec);  // its check's record
    fs::remove(marks, ec);
  }
  return blobs.remove_except(keep);
}

}  // namespace servelab::store
