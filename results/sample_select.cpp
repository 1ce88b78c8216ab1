// sample_select (order_select.h): exact order statistics from a sorted sample's brackets,
// in the manner of Floyd and Rivest's SELECT: the sample says where each wanted rank's value
// lies, give or take a few standard deviations; one pass over the values counts what falls
// below and at each bracket's ends and copies what lies strictly inside; the ranks are then
// found among the copies, and the counts prove that they are there. The least and greatest
// values (ranks 0 and n-1) need no bracket: the pass keeps them.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <random>

#include "results/order_select.h"

namespace servelab::results::detail {

namespace {

constexpr size_t kSample = 16384;
// A bracket reaches this many standard deviations of its rank's position in the sample
// either side, plus a few places (a bracket that misses costs a bucket select; one that is
// too wide, a larger copy).
constexpr double kDeviations = 4.0;
constexpr double kSlack = 4.0;
constexpr size_t kMaxBrackets = 15;  // their ends, padded, fill the 32-key search table
constexpr uint64_t kAboveAll = ~uint64_t(0);  // a key no value has (a NaN's)

// Keys [lo, hi] around some wanted ranks (their indices into the ranks asked for): the
// values at lo and at hi are counted, the ones strictly between copied.
struct Bracket {
  uint64_t lo = 0, hi = 0;
  std::vector<size_t> wanted;
};

// What the pass found: counts by cell, the copies, the least and greatest key.
struct Pass {
  std::array<size_t, 66> cells{};
  std::unique_ptr<double[]> copies;
  size_t copied = 0;
  uint64_t least = kAboveAll, greatest = 0;
};

// The sample's keys, sorted: at random positions (a fixed seed), read directly when the
// values lie together in memory, else picked up in one pass in position order.
std::vector<uint64_t> sorted_sample(const ValueChunks& values) {
  std::vector<uint64_t> at(kSample);
  std::mt19937_64 rng(0x5eed5e1ec7ULL);
  for (uint64_t& i : at) i = rng() % values.size();
  std::vector<uint64_t> keys;
  keys.reserve(kSample);
  if (const std::span<const double> all = values.contiguous(); !all.empty()) {
    for (uint64_t i : at) keys.push_back(order_key(all[i]));
  } else {
    std::sort(at.begin(), at.end());
    size_t next = 0;
    uint64_t start = 0;  // of the chunk
    values.for_each([&](std::span<const double> chunk) {
      for (; next < at.size() && at[next] < start + chunk.size(); ++next)
        keys.push_back(order_key(chunk[at[next] - start]));
      start += chunk.size();
    });
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// One bracket per rank but the first and last, overlapping ones merged, so that the
// brackets' keys ascend strictly.
std::vector<Bracket> brackets_of(const std::vector<uint64_t>& sample,
                                 const std::vector<size_t>& ranks, size_t n) {
  std::vector<Bracket> out;
  const double last = double(sample.size() - 1);
  for (size_t w = 0; w < ranks.size(); ++w) {
    if (ranks[w] == 0 || ranks[w] == n - 1) continue;
    const double q = double(ranks[w]) / double(n - 1);
    const double half = kDeviations * std::sqrt(double(sample.size()) * q * (1 - q)) + kSlack;
    const uint64_t lo = sample[size_t(std::clamp(std::floor(q * last - half), 0.0, last))];
    const uint64_t hi = sample[size_t(std::clamp(std::ceil(q * last + half), 0.0, last))];
    if (!out.empty() && lo <= out.back().hi) {
      out.back().hi = std::max(out.back().hi, hi);
    } else {
      out.emplace_back().lo = lo;
      out.back().hi = hi;
    }
    out.back().wanted.push_back(w);
  }
  return out;
}

// Cells: for bracket j, 4j below it (after bracket j-1), 4j+1 at its lo, 4j+2 inside (the
// values copied), 4j+3 at its hi; 4m above the last. False when the copies pass a limit.
bool count_and_copy(const ValueChunks& values, const std::vector<Bracket>& brackets,
                    Pass& pass) {
  std::array<uint64_t, 33> ends;  // padded with kAboveAll, which no value reaches
  ends.fill(kAboveAll);
  for (size_t j = 0; j < brackets.size(); ++j) {
    ends[2 * j] = brackets[j].lo;
    ends[2 * j + 1] = brackets[j].hi;
  }
  const size_t limit = values.size() / 8;
  // Uninitialized: only the pages written count towards memory.
  pass.copies = std::make_unique_for_overwrite<double[]>(limit + 1);
  double* const copy = pass.copies.get();
  size_t copied = 0;
  uint64_t least = kAboveAll, greatest = 0;
  bool full = false;
  values.for_each([&](std::span<const double> chunk) {
    if (full) return;
    for (double v : chunk) {
      const uint64_t k = order_key(v);
      least = std::min(least, k);
      greatest = std::max(greatest, k);
      // How many ends lie below k: a branchless binary search, unrolled.
      size_t i = ends[15] < k ? 16 : 0;
      i += ends[i + 7] < k ? 8 : 0;
      i += ends[i + 3] < k ? 4 : 0;
      i += ends[i + 1] < k ? 2 : 0;
      i += ends[i] < k ? 1 : 0;
      const bool at_end = ends[i] == k;
      ++pass.cells[2 * i + at_end];
      // Written always, kept when inside: a branch here, taken at random, tripled the pass.
      copy[copied] = v;
      copied += (i & 1) & !at_end;
      if (copied == limit) [[unlikely]] {
        full = true;
        return;
      }
    }
  });
  if (full) return false;
  pass.copied = copied;
  pass.least = least;
  pass.greatest = greatest;
  return true;
}

}  // namespace

std::optional<std::vector<double>> sample_select(const ValueChunks& values,
                                                 const std::vector<size_t>& ranks) {
  const size_t n = values.size();
  if (n < 2 * kSample) return std::nullopt;
  const std::vector<Bracket> brackets = brackets_of(sorted_sample(values), ranks, n);
  if (brackets.size() > kMaxBrackets) return std::nullopt;
  Pass pass;
  if (!count_and_copy(values, brackets, pass)) return std::nullopt;
  std::vector<double> out(ranks.size());
  for (size_t w = 0; w < ranks.size(); ++w) {
    if (ranks[w] == 0) out[w] = value_of_key(pass.least);
    if (ranks[w] == n - 1) out[w] = value_of_key(pass.greatest);
  }
  // A bracket's ranks: its lo's copies, its inside values (found among the copies, where its
  // own follow the earlier brackets'), its hi's copies, from rank `below` on.
  size_t below = 0, inside_before = 0;
  double* const copies = pass.copies.get();
  double* const copies_end = copies + pass.copied;
  double* searched = copies;  // the copies before it are at their sorted places
  for (size_t j = 0; j < brackets.size(); ++j) {
    below += pass.cells[4 * j];
    const size_t at_lo = pass.cells[4 * j + 1], in = pass.cells[4 * j + 2];
    const size_t at_hi = pass.cells[4 * j + 3];
    for (size_t w : brackets[j].wanted) {
      const size_t r = ranks[w];
      if (r < below || r >= below + at_lo + in + at_hi) return std::nullopt;  // missed
      const size_t k = r - below;
      if (k < at_lo) {
        out[w] = value_of_key(brackets[j].lo);
      } else if (k < at_lo + in) {
        double* const kth = copies + (inside_before + k - at_lo);
        std::nth_element(searched, kth, copies_end);
        out[w] = *kth;
        searched = kth;
      } else {
        out[w] = value_of_key(brackets[j].hi);
      }
    }
    below += at_lo + in + at_hi;
    inside_before += in;
  }
  return out;
}

}  // namespace servelab::results::detail
