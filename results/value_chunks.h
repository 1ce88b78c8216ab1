// Values read in chunks: what the exact percentile selects (order_select.h) pass over, so
// that they work alike on a vector and on latencies spilled to a file (latency_store.h).
// Reading is const and single-threaded.
#pragma once

#include <functional>
#include <span>
#include <vector>

namespace servelab::results {

class ValueChunks {
 public:
  using Visit = std::function<void(std::span<const double>)>;
  virtual ~ValueChunks() = default;
  virtual size_t size() const = 0;
  // Calls `visit` on consecutive chunks holding every value once, always in the same order.
  virtual void for_each(const Visit& visit) const = 0;
  // Every value, when they lie together in memory (random access); else an empty span.
  virtual std::span<const double> contiguous() const { return {}; }
};

// A vector's values, one chunk.
class VectorChunks final : public ValueChunks {
 public:
  explicit VectorChunks(const std::vector<double>& values) : values_(values) {}
  size_t size() const override { return values_.size(); }
  void for_each(const Visit& visit) const override {
    if (!values_.empty()) visit(values_);
  }
  std::span<const double> contiguous() const override { return values_; }

 private:
  const std::vector<double>& values_;
};

// Several sources, one after the other (a run's latencies: each model's store). The parts
// must not grow while it is in use: their total is counted once, since the percentile
// selections ask for it per sample and a run may have thousands of parts.
class JoinedChunks final : public ValueChunks {
 public:
  explicit JoinedChunks(std::vector<const ValueChunks*> parts) : parts_(std::move(parts)) {
    for (const ValueChunks* p : parts_) size_ += p->size();
  }
  size_t size() const override { return size_; }
  void for_each(const Visit& visit) const override {
    for (const ValueChunks* p : parts_) p->for_each(visit);
  }

 private:
  std::vector<const ValueChunks*> parts_;
  size_t size_ = 0;
};

}  // namespace servelab::results
