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
