// bucket_select (order_select.h): exact order statistics through buckets of the values' keys.
#include <algorithm>
#include <bit>
#include <cstdint>

#include "results/order_select.h"

namespace servelab::results::detail {

namespace {

constexpr int kBucketBits = 16;
constexpr size_t kBuckets = size_t(1) << kBucketBits;

// The values at the given ranks (ascending, distinct) among the values whose keys lie in
// [lo, hi], selected through buckets of their keys' range: only the buckets holding a wanted
// rank are looked at. A small one is gathered and searched; a large one (a narrow spread of
// many values, as a queue's sojourn times near the service time) is searched the same way
// over its own key range, one level down, so that no large copy is made. The top level reads
// the values once for their range; each level once to count and once to gather.
class BucketSelect {
 public:
  BucketSelect(const ValueChunks& values, uint64_t lo, uint64_t hi)
      : values_(values), lo_(lo), hi_(hi) {}

  std::vector<double> at_ranks(const std::vector<size_t>& ranks) {
    set_range();
    count();
    if (least_ == most_) return std::vector<double>(ranks.size(), least_value_);
    locate(ranks);
    gather();
    std::vector<double> out(ranks.size());
    for (Held& h : held_) {
      if (h.refine) refine(h, out);
      else
        for (const auto& [i, within] : h.wanted) out[i] = h.at(within);
    }
    return out;
  }

 private:
  // A bucket holding a wanted rank. Ties are common (a deterministic service time, an idle
  // server), so the least value's copies are counted rather than copied (the least bucket's
  // first value); the others are kept when the bucket is small.
  struct Held {
    size_t bucket = 0;
    bool refine = false;  // too many to copy: searched over its own key range
    bool seen = false;
    double first = 0;
    size_t first_copies = 0;
    bool counted = false;  // first_copies known before the gathering
    std::vector<double> others;
    std::vector<std::pair<size_t, size_t>> wanted;  // (index into the answer, rank within)

    // The least bucket's first value is the least value, whose copies are counted already.
    void set_first(double v, size_t copies) {
      seen = true, first = v, first_copies = copies, counted = true;
    }
    void add(double v) {
      if (!seen) seen = true, first = v;
      if (order_key(v) != order_key(first)) others.push_back(v);  // bits: -0.0 is not +0.0
      else if (!counted) ++first_copies;
    }
    // The bucket's k-th least value: below `first`, one of its copies, or above.
    double at(size_t k) {
      const auto above = std::partition(others.begin(), others.end(),
                                        [&](double v) { return v < first; });
      const size_t below = size_t(above - others.begin());
      if (k < below) {
        std::nth_element(others.begin(), others.begin() + std::ptrdiff_t(k), above);
        return others[k];
      }
      if (k < below + first_copies) return first;
      const auto kth = others.begin() + std::ptrdiff_t(k - first_copies);
      std::nth_element(above, kth, others.end());
      return *kth;
    }
  };

  bool in_range(uint64_t k) const { return k >= lo_ && k <= hi_; }

  // The buckets split the keys' range: the values' own at the top level (one pass), the
  // bucket's one level down (known already).
  void set_range() {
    if (lo_ == 0 && hi_ == ~uint64_t(0)) {
      lo_ = ~uint64_t(0);
      hi_ = 0;
      values_.for_each([&](std::span<const double> chunk) {
        for (double v : chunk) {
          const uint64_t k = order_key(v);
          lo_ = std::min(lo_, k);
          hi_ = std::max(hi_, k);
        }
      });
    }
    const int width = std::bit_width(hi_ - lo_);
    shift_ = width > kBucketBits ? width - kBucketBits : 0;
  }
  size_t bucket_of_key(uint64_t k) const { return size_t((k - lo_) >> shift_); }

  // Also finds the least and greatest value in range and counts the least one's copies: a
  // simulation's latencies often tie there (every request that found its server idle waits
  // exactly the service time).
  void count() {
    counts_.assign(kBuckets, 0);
    values_.for_each([&](std::span<const double> chunk) {
      for (double v : chunk) {
        const uint64_t k = order_key(v);
        if (!in_range(k)) continue;
        ++counts_[bucket_of_key(k)];
        if (k < least_) least_ = k, least_value_ = v, least_copies_ = 1;
        else if (k == least_) ++least_copies_;
        most_ = std::max(most_, k);
      }
    });
    least_bucket_ = bucket_of_key(least_);
  }

  // Walks the cumulative counts once: each rank's bucket, and its rank within it.
  void locate(const std::vector<size_t>& ranks) {
    slot_of_.assign(kBuckets, kNone);
    size_t below = 0, b = 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
      while (below + counts_[b] <= ranks[i]) below += counts_[b++];
      if (slot_of_[b] == kNone) {
        slot_of_[b] = uint16_t(held_.size());
        Held& h = held_.emplace_back();
        h.bucket = b;
        if (b == least_bucket_) h.set_first(least_value_, least_copies_);
        // Beyond the least value's copies, past the copy limit.
        const size_t copied = counts_[b] - (b == least_bucket_ ? least_copies_ : 0);
        h.refine = copied > kGatherAtMost;
      }
      held_[slot_of_[b]].wanted.push_back({i, ranks[i] - below});
    }
  }

  void gather() {
    bool any = false;
    for (Held& h : held_) {
      if (h.refine) slot_of_[h.bucket] = kNone;
      else any = true, h.others.reserve(counts_[h.bucket]);
    }
    if (!any) return;
    values_.for_each([&](std::span<const double> chunk) {
      for (double v : chunk) {
        const uint64_t k = order_key(v);
        if (!in_range(k)) continue;
        const uint16_t s = slot_of_[bucket_of_key(k)];
        if (s != kNone) held_[s].add(v);
      }
    });
  }

  // A large bucket's ranks, one level down over its key range. In the least bucket the
  // ranks among the least value's copies need no search.
  void refine(const Held& h, std::vector<double>& out) {
    const uint64_t lo = lo_ + (uint64_t(h.bucket) << shift_);
    const uint64_t width = shift_ == 0 ? 0 : (uint64_t(1) << shift_) - 1;
    const uint64_t hi = hi_ - lo < width ? hi_ : lo + width;  // no overflow past hi_
    std::vector<size_t> ranks;
    std::vector<size_t> at;
    for (const auto& [i, within] : h.wanted) {
      if (h.bucket == least_bucket_ && within < least_copies_) out[i] = least_value_;
      else ranks.push_back(within), at.push_back(i);
    }
    if (ranks.empty()) return;
    const std::vector<double> sub = BucketSelect(values_, lo, hi).at_ranks(ranks);
    for (size_t j = 0; j < at.size(); ++j) out[at[j]] = sub[j];
  }

  static constexpr uint16_t kNone = 0xffff;
  static constexpr size_t kGatherAtMost = size_t(1) << 16;  // values copied from one bucket
  const ValueChunks& values_;
  uint64_t lo_, hi_;  // the keys' range, split into the buckets
  int shift_ = 0;
  uint64_t least_ = ~uint64_t(0), most_ = 0;  // the least and greatest key in range
  double least_value_ = 0;
  size_t least_copies_ = 0;
  size_t least_bucket_ = 0;
  std::vector<uint32_t> counts_;
  std::vector<uint16_t> slot_of_;
  std::vector<Held> held_;
};

}  // namespace

std::vector<double> bucket_select(const ValueChunks& values, const std::vector<size_t>& ranks) {
  return BucketSelect(values, 0, ~uint64_t(0)).at_ranks(ranks);
}

}  // namespace servelab::results::detail
