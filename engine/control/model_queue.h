// FIFO containers of the control plane: a growable ring buffer with O(1) push, pop, size and
// front, and ModelQueue, the per-model request FIFO (one per model, reached in O(1) through
// the controller's dense ModelId-indexed table: Rafiqi's "hashy linked list").
// Value types; not thread-safe (owned by the Controller).
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/control/types.h"

namespace servelab {

// Ring buffer of T with amortized O(1) push_back and O(1) pop_front. The first kInline
// elements (zero or a power of two) live inside the queue itself, so that a short queue is
// on the cache lines of its owner; beyond them capacity doubles on the heap and is never
// given back, so a steady state allocates nothing.
template <class T, size_t kInline = 0>
class RingQueue {
  static_assert((kInline & (kInline - 1)) == 0, "kInline: zero or a power of two");

 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  const T& front() const {
    assert(size_ > 0);
    return data()[head_];
  }
  const T& back() const {
    assert(size_ > 0);
    return data()[(head_ + size_ - 1) & mask()];
  }
  // i-th element from the front (0 = front).
  const T& operator[](size_t i) const {
    assert(i < size_);
    return data()[(head_ + i) & mask()];
  }

  void push_back(const T& v) {
    if (size_ == capacity()) grow();
    data()[(head_ + size_) & mask()] = v;
    ++size_;
  }
  void pop_front() {
    assert(size_ > 0);
    head_ = uint32_t((head_ + 1) & mask());
    --size_;
  }
  // Moves the first n elements, in order, to the end of `out`.
  void take_front(size_t n, std::vector<T>& out) {
    assert(n <= size_);
    T* d = data();
    for (size_t i = 0; i < n; ++i) {
      out.push_back(std::move(d[head_]));
      head_ = uint32_t((head_ + 1) & mask());
    }
    size_ -= uint32_t(n);
  }
  // Removes the i-th element from the front, keeping the others in order. O(size - i).
  void erase(size_t i) {
    assert(i < size_);
    T* d = data();
    for (size_t k = i; k + 1 < size_; ++k)
      d[(head_ + k) & mask()] = std::move(d[(head_ + k + 1) & mask()]);
    --size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  bool on_heap() const { return !heap_.empty(); }
  T* data() { return on_heap() ? heap_.data() : inline_.data(); }
  const T* data() const { return on_heap() ? heap_.data() : inline_.data(); }
  size_t capacity() const { return on_heap() ? heap_.size() : kInline; }
  size_t mask() const { return capacity() - 1; }
  void grow() {
    std::vector<T> bigger(std::max<size_t>(capacity() * 2, 8));
    const T* d = data();
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(d[(head_ + i) & mask()]);
    heap_.swap(bigger);
    head_ = 0;
  }

  std::array<T, kInline> inline_{};  // first: an owner can align them to a cache line
  uint32_t head_ = 0;
  uint32_t size_ = 0;
  std::vector<T> heap_;  // size is zero or a power of two above kInline
};

// Requests of one model waiting for a batch, in arrival (push) order. Two inline: most
// queues of a many-model server hold at most that, and need no line of their own.
using ModelQueue = RingQueue<Request, 2>;

}  // namespace servelab
