// Eviction policies and the offline optimum against ground truth from outside the code: the
// textbook reference string of Silberschatz, Galvin and Gagne (Operating System Concepts,
// ch. 9: 3 frames give OPT 9, LRU 12, FIFO 15 faults), hand-computed unequal sizes, and
// King's (1971) closed-form LRU hit ratio under independent Zipf requests.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "engine/control/policy_registry.h"
#include "results/offline_cache.h"

using namespace servelab;

namespace {

const std::vector<uint32_t> kTextbook = {7, 0, 1, 2, 0, 3, 0, 4, 2, 3,
                                         0, 3, 2, 1, 2, 0, 1, 7, 0, 1};

// Misses of eviction policy `name` as a demand cache of `slots` equal-size models over
// `sequence`: a miss loads the model (evicting the policy's pick when full), then a batch uses it.
uint64_t policy_misses(const std::string& name, const std::vector<uint32_t>& sequence,
                       size_t slots) {
  auto policy = PolicyRegistry::eviction({name, {}});
  std::vector<ModelId> resident;  // kept in ModelId order, as the controller passes them
  uint64_t misses = 0;
  double now = 0;
  for (uint32_t m : sequence) {
    now += 1;
    if (!std::binary_search(resident.begin(), resident.end(), m)) {
      ++misses;
      if (resident.size() == slots) {
        std::vector<EvictionCandidate> c;
        for (ModelId r : resident) c.push_back({r, 1, 1, 0, 0, 0});
        ModelId victim = resident[policy->pick_victim(c, now)];
        policy->on_unload(victim, now);
        resident.erase(std::find(resident.begin(), resident.end(), victim));
      }
      resident.insert(std::upper_bound(resident.begin(), resident.end(), m), m);
      policy->on_load(m, now);
    }
    policy->on_access(m, now);
  }
  return misses;
}

// King's stationary LRU distribution: the cache is the ordered list of the `slots` most recent
// distinct models; state (i1..ic) has probability prod_j p_ij / (1 - sum_{k<j} p_ik). The hit
// ratio sums p over the models of each state.
double king_lru_hit_ratio(const std::vector<double>& p, size_t slots) {
  double hit = 0;
  std::vector<size_t> state;
  std::vector<bool> used(p.size(), false);
  auto walk = [&](auto&& self, double prob, double taken) -> void {
    if (state.size() == slots) {
      hit += prob * taken;
      return;
    }
    for (size_t i = 0; i < p.size(); ++i) {
      if (used[i]) continue;
      used[i] = true;
      state.push_back(i);
      self(self, prob * p[i] / (1 - taken), taken + p[i]);
      state.pop_back();
      used[i] = false;
    }
  };
  walk(walk, 1.0, 0.0);
  return hit;
}

}  // namespace

TEST_CASE("the textbook reference string: OPT 9, LRU 12 and FIFO 15 faults with 3 frames",
          "[cache][optimum]") {
  CHECK(belady_misses(kTextbook, 3) == 9);
  CHECK(policy_misses("lru", kTextbook, 3) == 12);
  CHECK(policy_misses("fifo", kTextbook, 3) == 15);
  std::vector<uint64_t> equal(8, 100);
  OptimumBounds b = offline_optimum(kTextbook, equal, 300);
  CHECK(b.exact());
  CHECK(b.lower == 9);
}

TEST_CASE("unequal sizes bound the optimum from both sides, by hand", "[cache][optimum]") {
  // A (model 0) takes the whole 2-byte cache, B and C one byte each; sequence A B C A.
  // Any schedule misses all four (B's arrival must evict A). The lower bound treats the
  // cache as 2 slots (B and C fit together): A, B, C miss, C evicts B, A hits: 3. The
  // feasible schedule misses 4.
  const std::vector<uint32_t> seq = {0, 1, 2, 0};
  OptimumBounds b = offline_optimum(seq, {2, 1, 1}, 2);
  CHECK(b.lower == 3);
  CHECK(b.upper == 4);
  CHECK_FALSE(b.exact());
  CHECK_THROWS_AS(offline_optimum(seq, {3, 1, 1}, 2), std::invalid_argument);
}

TEST_CASE("a cache that starts full: the optimum starts from what it holds, by hand",
          "[cache][optimum]") {
  // Two slots holding 0 and 1; sequence 2 0 1 0. 2 misses and evicts 1 (next used at 2,
  // after 0's at 1); 0 hits; 1 misses and evicts 2 (never used again); 0 hits: 2 misses.
  // From empty the same sequence misses 3 (2, 0, 1).
  const std::vector<uint32_t> seq = {2, 0, 1, 0}, held = {0, 1};
  const std::vector<uint64_t> unit(3, 1);
  CHECK(offline_optimum(seq, unit, CacheRoom{2, UINT32_MAX}, held).lower == 2);
  CHECK(offline_optimum(seq, unit, CacheRoom{2, UINT32_MAX}).lower == 3);
  // A held model that is never used again goes first.
  const std::vector<uint32_t> idle = {2, 0};
  CHECK(offline_optimum(idle, unit, CacheRoom{2, UINT32_MAX}, held).lower == 1);
  CHECK_THROWS_AS(offline_optimum(seq, unit, CacheRoom{1, UINT32_MAX}, held),
                  std::invalid_argument);
}

TEST_CASE("a limit on the models held counts as slots", "[cache][optimum]") {
  const std::vector<uint64_t> small(8, 1);
  const OptimumBounds b = offline_optimum(kTextbook, small, CacheRoom{1000, 3});
  CHECK(b.exact());
  CHECK(b.lower == 9);
}

namespace {

// The fewest misses over every schedule that loads on a miss and may then keep any subset of
// what it holds that leaves room: exhaustive, for small cases (models < 8).
uint64_t exhaustive_optimum(const std::vector<uint32_t>& seq, const std::vector<uint64_t>& sizes,
                            uint64_t capacity) {
  auto bytes = [&](uint32_t set) {
    uint64_t b = 0;
    for (uint32_t m = 0; m < sizes.size(); ++m)
      if (set >> m & 1) b += sizes[m];
    return b;
  };
  auto best = [&](auto&& self, size_t i, uint32_t held) -> uint64_t {
    if (i == seq.size()) return 0;
    const uint32_t m = seq[i];
    if (held >> m & 1) return self(self, i + 1, held);
    uint64_t fewest = UINT64_MAX;
    for (uint32_t keep = held;; keep = (keep - 1) & held) {  // every subset of held
      if (bytes(keep) + sizes[m] <= capacity)
        fewest = std::min(fewest, 1 + self(self, i + 1, keep | 1u << m));
      if (keep == 0) break;
    }
    return fewest;
  };
  return best(best, 0, 0);
}

}  // namespace

TEST_CASE("the bounds hold the exhaustive optimum of small random cases", "[cache][optimum]") {
  std::mt19937_64 rng(20261201);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t models = 3 + rng() % 3;
    std::vector<uint64_t> sizes(models);
    for (uint64_t& s : sizes) s = 1 + rng() % 3;
    const uint64_t capacity = *std::max_element(sizes.begin(), sizes.end()) + rng() % 4;
    std::vector<uint32_t> seq(8 + rng() % 6);
    for (uint32_t& m : seq) m = rng() % models;
    const uint64_t exact = exhaustive_optimum(seq, sizes, capacity);
    const OptimumBounds b = offline_optimum(seq, sizes, capacity);
    INFO("trial " << trial);
    CHECK(b.lower <= exact);
    CHECK(exact <= b.upper);
    const std::vector<uint64_t> equal(models, sizes[0]);
    CHECK(offline_optimum(seq, equal, capacity).lower == exhaustive_optimum(seq, equal, capacity));
  }
}

TEST_CASE("lru's miss ratio under Zipf requests matches King's closed form, MIN no worse",
          "[cache][optimum][king]") {
  const size_t n = 6, slots = 2;
  std::vector<double> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = 1.0 / std::pow(double(i + 1), 0.8);
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= total;
  const double king_miss = 1 - king_lru_hit_ratio(p, slots);

  std::mt19937_64 rng(20261128);
  std::discrete_distribution<uint32_t> zipf(p.begin(), p.end());
  std::vector<uint32_t> seq(200'000);
  for (uint32_t& m : seq) m = zipf(rng);
  const uint64_t lru = policy_misses("lru", seq, slots);
  const double lru_miss = double(lru) / double(seq.size());
  // Binomial standard error at 200,000 draws is about 0.001; the tolerance is 5 of them.
  CHECK(lru_miss == Approx(king_miss).margin(0.005));
  CHECK(belady_misses(seq, slots) <= lru);  // MIN is optimal on every sequence
}

TEST_CASE("gdsf weighs reload cost per byte by the uses since the load", "[policy][eviction]") {
  // Equal sizes and costs: the model used once goes before the one used three times. A model
  // four times larger with three uses has H = 3 * 1 / 400 = 0.0075 < 1 * 1 / 100 = 0.01: it goes.
  auto p = PolicyRegistry::eviction({"gdsf", {}});
  p->on_load(0, 0);
  p->on_load(1, 0);
  p->on_access(1, 1);
  p->on_access(1, 2);
  std::vector<EvictionCandidate> equal{{0, 100, 1, 0, 0, 0}, {1, 100, 1, 0, 0, 0}};
  CHECK(p->pick_victim(equal, 3) == 0);
  auto q = PolicyRegistry::eviction({"gdsf", {}});
  q->on_load(0, 0);
  q->on_load(1, 0);
  q->on_access(1, 1);
  q->on_access(1, 2);
  std::vector<EvictionCandidate> sized{{0, 100, 1, 0, 0, 0}, {1, 400, 1, 0, 0, 0}};
  CHECK(q->pick_victim(sized, 3) == 1);
  // gds ignores the uses: with equal sizes and costs the tie goes to the first candidate.
  auto g = PolicyRegistry::eviction({"gds", {}});
  g->on_load(0, 0);
  g->on_load(1, 0);
  for (int i = 0; i < 5; ++i) g->on_access(0, 1 + i);
  CHECK(g->pick_victim(equal, 9) == 0);
}
