// FIFO containers of the control plane: a growable ring buffer with O(1) push, pop, size and
// front, and ModelQueue, the per-model request FIFO (one per model, reached in O(1) through
// the controller's dense ModelId-indexed table: Rafiqi's "hashy linked list").
// Value types; not thread-safe (owned by the Controller).
#pragma once

#include <cassert>
#include <cstddef>
#include <utility>
#include <vector>

#include "engine/control/types.h"

namespace servelab {

// Ring buffer of T with amortized O(1) push_back and O(1) pop_front. Capacity doubles when
// full and is never given back, so a steady state allocates nothing.
template <class T>
class RingQueue {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  const T& front() const {
    assert(size_ > 0);
    return buf_[head_];
  }
  const T& back() const {
    assert(size_ > 0);
    return buf_[(head_ + size_ - 1) & mask()];
  }
  // i-th element from the front (0 = front).
  const T& operator[](size_t i) const {
    assert(i < size_);
    return buf_[(head_ + i) & mask()];
  }

  void push_back(const T& v) {
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) & mask()] = v;
    ++size_;
  }
  void pop_front() {
    assert(size_ > 0);
    head_ = (head_ + 1) & mask();
    --size_;
  }
  // Moves the first n elements, in order, to the end of `out`.
  void take_front(size_t n, std::vector<T>& out) {
    assert(n <= size_);
    for (size_t i = 0; i < n; ++i) {
      out.push_back(std::move(buf_[head_]));
      head_ = (head_ + 1) & mask();
    }
    size_ -= n;
  }
  // Removes the i-th element from the front, keeping the others in order. O(size - i).
  void erase(size_t i) {
    assert(i < size_);
    for (size_t k = i; k + 1 < size_; ++k)
      buf_[(head_ + k) & mask()] = std::move(buf_[(head_ + k + 1) & mask()]);
    --size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  size_t mask() const { return buf_.size() - 1; }
  void grow() {
    std::vector<T> bigger(buf_.empty() ? 8 : buf_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(buf_[(head_ + i) & mask()]);
    buf_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> buf_;  // size is zero or a power of two
  size_t head_ = 0;
  size_t size_ = 0;
};

// Requests of one model waiting for a batch, in arrival (push) order.
using ModelQueue = RingQueue<Request>;

}  // namespace servelab
