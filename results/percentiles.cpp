#include "results/percentiles.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace servelab::results {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kBucketBits = 16;
constexpr size_t kBuckets = size_t(1) << kBucketBits;
// Below this many values a sort is as fast as the three passes.
constexpr size_t kSortBelow = 4096;

// A double's bits, mapped so that unsigned order is numeric order (-0.0 just below +0.0;
// they compare equal as doubles, and either one is the value at its rank).
uint64_t order_key(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits >> 63 ? ~bits : bits | (uint64_t(1) << 63);
}

struct Rank {
  size_t lo, hi;  // the two closest ranks (0-based)
  double frac;    // of the way from lo to hi
};

Rank rank_of(double p, size_t n) {
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * double(n - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  return {lo, std::min(lo + 1, n - 1), rank - double(lo)};
}

// The values at the given ranks (ascending, distinct), selected through buckets of their
// keys' range: only the buckets holding a wanted rank are gathered and searched.
class BucketSelect {
 public:
  BucketSelect(const std::vector<double>& values) : values_(values) { find_range(); }

  std::vector<double> at_ranks(const std::vector<size_t>& ranks) {
    if (min_ == max_) return std::vector<double>(ranks.size(), values_.front());
    count();
    locate(ranks);
    gather();
    std::vector<double> out;
    for (const Wanted& w : wanted_) out.push_back(held_[w.slot].at(w.within));
    return out;
  }

 private:
  // A bucket holding a wanted rank. Ties are common (a deterministic service time, an idle
  // server), so its first value (the least bucket's: the least value) is counted rather than
  // copied; the others are kept.
  struct Held {
    size_t bucket = 0;
    bool seen = false;
    double first = 0;
    size_t first_copies = 0;
    bool counted = false;  // first_copies known before the gathering
    std::vector<double> others;

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
  struct Wanted {
    size_t slot;    // into held_
    size_t within;  // the rank among its bucket's values
  };

  void find_range() {
    min_ = max_ = order_key(values_.front());
    for (double v : values_) {
      const uint64_t k = order_key(v);
      min_ = std::min(min_, k);
      max_ = std::max(max_, k);
    }
    const int width = std::bit_width(max_ - min_);
    shift_ = width > kBucketBits ? width - kBucketBits : 0;
  }
  size_t least_index() const {
    for (size_t i = 0;; ++i)
      if (order_key(values_[i]) == min_) return i;
  }
  size_t bucket(double v) const { return size_t((order_key(v) - min_) >> shift_); }

  // Also counts the copies of the least value: a simulation's latencies often tie there (every
  // request that found its server idle waits exactly the service time).
  void count() {
    counts_.assign(kBuckets, 0);
    for (double v : values_) {
      const uint64_t k = order_key(v);
      ++counts_[size_t((k - min_) >> shift_)];
      least_copies_ += k == min_;
    }
  }

  // Walks the cumulative counts once: each rank's bucket, and its rank within it.
  void locate(const std::vector<size_t>& ranks) {
    slot_of_.assign(kBuckets, kNone);
    size_t below = 0, b = 0;
    for (size_t r : ranks) {
      while (below + counts_[b] <= r) below += counts_[b++];
      if (slot_of_[b] == kNone) {
        slot_of_[b] = uint16_t(held_.size());
        Held& h = held_.emplace_back();
        h.bucket = b;
        if (b == 0) h.set_first(values_[least_index()], least_copies_);
      }
      wanted_.push_back({slot_of_[b], r - below});
    }
  }

  void gather() {
    for (double v : values_) {
      const uint16_t s = slot_of_[bucket(v)];
      if (s != kNone) held_[s].add(v);
    }
  }

  static constexpr uint16_t kNone = 0xffff;
  const std::vector<double>& values_;
  uint64_t min_ = 0, max_ = 0;
  int shift_ = 0;
  size_t least_copies_ = 0;
  std::vector<uint32_t> counts_;
  std::vector<uint16_t> slot_of_;
  std::vector<Held> held_;
  std::vector<Wanted> wanted_;
};

}  // namespace

double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return kNaN;
  const Rank r = rank_of(p, sorted.size());
  return sorted[r.lo] + (sorted[r.hi] - sorted[r.lo]) * r.frac;
}

std::vector<double> percentiles_of(std::vector<double>& values, std::span<const double> ps) {
  if (values.size() < kSortBelow) {
    std::sort(values.begin(), values.end());
    std::vector<double> out;
    for (double p : ps) out.push_back(percentile_sorted(values, p));
    return out;
  }
  std::vector<size_t> ranks;
  for (double p : ps) {
    const Rank r = rank_of(p, values.size());
    ranks.push_back(r.lo);
    ranks.push_back(r.hi);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  const std::vector<double> at = BucketSelect(values).at_ranks(ranks);
  auto value_at = [&](size_t rank) {
    return at[size_t(std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin())];
  };
  std::vector<double> out;
  for (double p : ps) {
    const Rank r = rank_of(p, values.size());
    const double a = value_at(r.lo), b = value_at(r.hi);
    out.push_back(a + (b - a) * r.frac);
  }
  return out;
}

}  // namespace servelab::results
