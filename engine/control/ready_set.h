// The controller's ready models, ordered by the scheduling policy's key (policy.h), with
// insert, erase and an in-order search for the first model a worker can take.
// Keys live in sorted blocks of up to kBlockKeys (a B-tree of two levels: the blocks' last
// keys, then the blocks). An insert or erase is a binary search over the blocks' last keys,
// one inside the block and a move of at most half a block; a full block splits, and small
// neighbours merge. So a thousand ready models cost O(log n) comparisons per change and touch
// a few contiguous cache lines, where a red-black tree chased a dozen scattered nodes. Few
// ready models (the common case: one per busy model) are one block: a sorted array.
// Taking the least key, as a worker does, moves nothing (the block's front advances); the
// last key taken leaves its block in place, empty (the only block that may be).
// Value type, owned by the controller; not thread-safe.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/control/policy.h"

namespace servelab {

class ReadySet {
 public:
  using Key = SchedulingPolicy::Key;
  static constexpr uint32_t kBlockKeys = 32;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  size_t blocks() const { return blocks_.size(); }

  // `k` must not be in the set (keys are distinct: they end with the model id).
  void insert(const Key& k) {
    if (size_ == 0 && !blocks_.empty()) {  // the sole block, emptied: nothing to search
      Block& b = *blocks_[0];
      b.head = 0;
      b.keys[0] = k;
      b.end = 1;
      lasts_[0] = k;
      size_ = 1;
      return;
    }
    ++size_;
    if (blocks_.empty()) {
      blocks_.push_back(new_block());
      lasts_.push_back(k);
    }
    size_t i = block_for(k);
    if (blocks_[i]->size() == kBlockKeys) i = split(i, k);
    Block& b = *blocks_[i];
    place(b, k);
    lasts_[i] = b.back();
  }

  // `k` must be in the set.
  void erase(const Key& k) {
    if (size_ == 1) {  // the one key of the sole block: it stays, emptied
      assert(blocks_.size() == 1 && blocks_[0]->size() == 1 && blocks_[0]->back() == k);
      blocks_[0]->head = blocks_[0]->end = 0;
      size_ = 0;
      return;
    }
    --size_;
    const size_t i = block_for(k);
    Block& b = *blocks_[i];
    Key* first = b.keys + b.head;
    Key* last = b.keys + b.end;
    // The common case first: the least key, the one a worker just took.
    Key* pos = *first == k ? first : std::lower_bound(first, last, k);
    assert(pos != last && *pos == k && "a ready model's key is in the set");
    if (pos - first < last - pos) {  // move the shorter side
      std::move_backward(first, pos, pos + 1);
      ++b.head;
    } else {
      std::move(pos + 1, last, pos);
      --b.end;
    }
    if (b.size() == 0) {
      if (blocks_.size() > 1) return remove_block(i);
      b.head = b.end = 0;  // the one block stays, emptied, for the next insert: a model
      return;              // that goes ready and is taken at once allocates nothing
    }
    lasts_[i] = b.back();
    merge_small(i);
  }

  // The least key for which `ok(key)` holds, in key order; nullptr if none does.
  template <class Pred>
  const Key* first_where(Pred ok) const {
    for (const auto& b : blocks_)
      for (uint32_t j = b->head; j < b->end; ++j)
        if (ok(b->keys[j])) return &b->keys[j];
    return nullptr;
  }

 private:
  struct Block {
    uint32_t head = 0, end = 0;  // keys[head, end), sorted
    Key keys[kBlockKeys];
    uint32_t size() const { return end - head; }
    const Key& back() const { return keys[end - 1]; }
  };

  // The block holding `k`, or where it goes: the first whose last key is not below it (the
  // last block for a key above every other).
  size_t block_for(const Key& k) const {
    const size_t i = size_t(std::lower_bound(lasts_.begin(), lasts_.end(), k) - lasts_.begin());
    return std::min(i, blocks_.size() - 1);
  }

  // Into a block with room: moves the shorter side (the front only where it has room).
  static void place(Block& b, const Key& k) {
    Key* first = b.keys + b.head;
    Key* last = b.keys + b.end;
    Key* pos = std::lower_bound(first, last, k);  // usually `last`: the newest key
    if (b.end < kBlockKeys && (b.head == 0 || last - pos <= pos - first)) {
      std::move_backward(pos, last, last + 1);
      *pos = k;
      ++b.end;
    } else {
      std::move(first, pos, first - 1);
      *(pos - 1) = k;
      --b.head;
    }
  }

  // Block i is full: its upper half moves to a new block after it. Returns the block `k` goes to.
  size_t split(size_t i, const Key& k) {
    Block& b = *blocks_[i];
    std::unique_ptr<Block> upper = new_block();
    const uint32_t mid = b.head + kBlockKeys / 2;
    std::copy(b.keys + mid, b.keys + b.end, upper->keys);
    upper->end = b.end - mid;
    b.end = mid;
    const bool to_upper = !(k < upper->keys[0]);
    lasts_[i] = b.back();
    lasts_.insert(lasts_.begin() + std::ptrdiff_t(i) + 1, upper->back());
    blocks_.insert(blocks_.begin() + std::ptrdiff_t(i) + 1, std::move(upper));
    return to_upper ? i + 1 : i;
  }

  // Block i shrank below a quarter: it joins a neighbour when both together fill at most half
  // a block, so that the number of blocks stays O(n / kBlockKeys).
  void merge_small(size_t i) {
    if (blocks_[i]->size() >= kBlockKeys / 4) return;
    if (i + 1 < blocks_.size() && blocks_[i]->size() + blocks_[i + 1]->size() <= kBlockKeys / 2)
      merge_next(i);
    else if (i > 0 && blocks_[i - 1]->size() + blocks_[i]->size() <= kBlockKeys / 2)
      merge_next(i - 1);
  }

  void merge_next(size_t i) {
    Block& b = *blocks_[i];
    const Block& next = *blocks_[i + 1];
    std::copy(b.keys + b.head, b.keys + b.end, b.keys);
    b.end -= b.head;
    b.head = 0;
    std::copy(next.keys + next.head, next.keys + next.end, b.keys + b.end);
    b.end += next.size();
    lasts_[i] = b.back();
    remove_block(i + 1);
  }

  void remove_block(size_t i) {
    spare_.push_back(std::move(blocks_[i]));
    blocks_.erase(blocks_.begin() + std::ptrdiff_t(i));
    lasts_.erase(lasts_.begin() + std::ptrdiff_t(i));
  }

  std::unique_ptr<Block> new_block() {
    if (spare_.empty()) return std::make_unique<Block>();
    std::unique_ptr<Block> b = std::move(spare_.back());
    spare_.pop_back();
    b->head = b->end = 0;
    return b;
  }

  std::vector<std::unique_ptr<Block>> blocks_;  // in key order; none empty but a sole one
  std::vector<Key> lasts_;                      // blocks_[i]'s last key
  std::vector<std::unique_ptr<Block>> spare_;   // emptied blocks, reused
  size_t size_ = 0;
};

}  // namespace servelab
