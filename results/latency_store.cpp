#include "results/latency_store.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include "common/huge_pages.h"

namespace servelab::results {

namespace {

std::string temp_dir() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::temp_directory_path(ec);  // TMPDIR first
  return ec ? std::string("/tmp") : p.string();
}

}  // namespace

LatencySpill::LatencySpill(size_t budget, std::string dir)
    : budget_(budget), dir_(dir.empty() ? temp_dir() : std::move(dir)) {}

LatencySpill::~LatencySpill() {
  if (fd_ >= 0) ::close(fd_);
}

void LatencySpill::open() {
  std::string path = dir_ + "/servelab-latencies-XXXXXX";
  fd_ = ::mkstemp(path.data());
  if (fd_ < 0)
    throw std::runtime_error("cannot make a temporary file for latencies in " + dir_ + ": " +
                             std::strerror(errno));
  ::unlink(path.c_str());  // gone when closed, whatever happens
}

namespace {

// Moves `bytes` at `offset` with op (pread or pwrite) until done: 0, or the failing call's
// errno (`short_error` where it moved nothing).
template <class Op>
int transfer(char* p, size_t bytes, off_t offset, int short_error, Op op) {
  while (bytes > 0) {
    const ssize_t n = op(p, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : short_error;
    p += n, bytes -= size_t(n), offset += n;
  }
  return 0;
}

}  // namespace

uint64_t LatencySpill::write(std::span<const double> values) {
  if (fd_ < 0) open();
  const uint64_t at = end_;
  char* p = reinterpret_cast<char*>(const_cast<double*>(values.data()));
  const int err = transfer(p, values.size_bytes(), off_t(at * sizeof(double)), ENOSPC,
                           [&](char* q, size_t n, off_t o) { return ::pwrite(fd_, q, n, o); });
  if (err)
    throw std::runtime_error("cannot write latencies to a temporary file in " + dir_ + ": " +
                             std::strerror(err));
  end_ += values.size();
  return at;
}

void LatencySpill::read(uint64_t at, std::span<double> out) const {
  const int err = transfer(reinterpret_cast<char*>(out.data()), out.size_bytes(),
                           off_t(at * sizeof(double)), EIO,
                           [&](char* q, size_t n, off_t o) { return ::pread(fd_, q, n, o); });
  if (err)
    throw std::runtime_error("cannot read latencies back from their temporary file in " + dir_ +
                             ": " + std::strerror(err));
}

LatencyStore::~LatencyStore() {
  if (spill_) spill_->release(memory_.capacity());
}

LatencyStore::LatencyStore(LatencyStore&& o) noexcept
    : spill_(o.spill_), memory_(std::move(o.memory_)), chunks_(std::move(o.chunks_)),
      spilled_(o.spilled_) {
  o.memory_ = {};  // its capacity is this store's now
  o.spilled_ = 0;
}

LatencyStore& LatencyStore::operator=(LatencyStore&& o) noexcept {
  if (this == &o) return *this;
  if (spill_) spill_->release(memory_.capacity());
  spill_ = o.spill_;
  memory_ = std::move(o.memory_);
  chunks_ = std::move(o.chunks_);
  spilled_ = o.spilled_;
  o.memory_ = {};
  o.spilled_ = 0;
  return *this;
}

// Doubling while the budget allows; past it, what the store holds goes to the file and its
// buffer, from then on written out whenever full, keeps doubling up to a chunk (a store that
// only starts after the budget is spent does not write a few values at a time).
void LatencyStore::make_room() {
  const size_t cap = memory_.capacity();
  const size_t doubled = std::max<size_t>(1024, 2 * cap);
  if (!spill_ || (chunks_.empty() && spill_->fits(doubled - cap))) return set_capacity(doubled);
  write_out();
  if (cap != kChunk) set_capacity(std::min(doubled, kChunk));
}

void LatencyStore::reserve(size_t n) {
  const size_t cap = memory_.capacity();
  if (spill_) n = std::min(n, cap + spill_->room());
  if (n > cap) set_capacity(n);
}

void LatencyStore::set_capacity(size_t n) {
  std::vector<double> next;
  reserve_huge(next, n);
  next.insert(next.end(), memory_.begin(), memory_.end());
  if (spill_) {
    spill_->release(memory_.capacity());
    spill_->hold(next.capacity());
  }
  memory_.swap(next);
}

void LatencyStore::write_out() {
  if (memory_.empty()) return;
  chunks_.push_back({spill_->write(memory_), memory_.size()});
  spilled_ += memory_.size();
  memory_.clear();
}

void LatencyStore::for_each(const Visit& visit) const {
  if (!chunks_.empty()) {
    std::vector<double> buffer;
    for (const Chunk& c : chunks_) {
      for (size_t done = 0; done < c.count;) {
        buffer.resize(std::min(kChunk, c.count - done));
        spill_->read(c.at + done, buffer);
        visit(buffer);
        done += buffer.size();
      }
    }
  }
  if (!memory_.empty()) visit(memory_);
}

}  // namespace servelab::results
