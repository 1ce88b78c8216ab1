// The controller's ready models, ordered by the scheduling policy's key (policy.h), with
// insert, erase and an in-order search for the first model a worker can take.
// Few ready models (the common case: one per busy model) live in a sorted vector, where an
// insert or erase is a binary search and a short move, without the red-black tree's
// allocation and rebalancing; past kFlatMax it switches to a std::set, so a thousand ready
// models still cost O(log n) per change (and back below kFlatMax / 4). Same order either way.
// Value type, owned by the controller; not thread-safe.
#pragma once

#include <algorithm>
#include <cassert>
#include <set>
#include <vector>

#include "engine/control/policy.h"

namespace servelab {

class ReadySet {
 public:
  using Key = SchedulingPolicy::Key;
  static constexpr size_t kFlatMax = 64;

  bool empty() const { return size() == 0; }
  size_t size() const { return tree_mode_ ? tree_.size() : flat_.size(); }

  void insert(const Key& k) {
    if (!tree_mode_ && flat_.size() < kFlatMax) {
      if (flat_.empty() || flat_.back() < k) flat_.push_back(k);  // the common case: last
      else flat_.insert(std::lower_bound(flat_.begin(), flat_.end(), k), k);
      return;
    }
    if (!tree_mode_) to_tree();
    if (spare_.empty()) {
      tree_.insert(k);
      return;
    }
    spare_.back().value() = k;  // a node an erase left: no allocation
    tree_.insert(std::move(spare_.back()));
    spare_.pop_back();
  }

  // `k` must be in the set.
  void erase(const Key& k) {
    if (!tree_mode_) {
      // The common case: the least key, the one a worker just took.
      auto it = flat_.front() == k ? flat_.begin() : std::lower_bound(flat_.begin(), flat_.end(), k);
      assert(it != flat_.end() && *it == k && "a ready model's key is in the set");
      flat_.erase(it);
      return;
    }
    auto node = tree_.extract(k);
    assert(!node.empty() && "a ready model's key is in the set");
    spare_.push_back(std::move(node));
    if (tree_.size() < kFlatMax / 4) to_flat();
  }

  // The least key for which `ok(key)` holds, in key order; nullptr if none does.
  template <class Pred>
  const Key* first_where(Pred ok) const {
    if (!tree_mode_) {
      for (const Key& k : flat_)
        if (ok(k)) return &k;
      return nullptr;
    }
    for (const Key& k : tree_)
      if (ok(k)) return &k;
    return nullptr;
  }

 private:
  void to_tree() {
    for (const Key& k : flat_) tree_.insert(tree_.end(), k);
    flat_.clear();
    tree_mode_ = true;
  }
  void to_flat() {
    flat_.assign(tree_.begin(), tree_.end());
    while (!tree_.empty()) spare_.push_back(tree_.extract(tree_.begin()));
    tree_mode_ = false;
  }

  bool tree_mode_ = false;
  std::vector<Key> flat_;  // sorted; in use while !tree_mode_
  std::set<Key> tree_;     // in use while tree_mode_
  std::vector<std::set<Key>::node_type> spare_;  // erased nodes, reused by insert
};

}  // namespace servelab
