// RingQueue / ModelQueue behaviour and the policy registry's contract.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <random>
#include <set>
#include <vector>

#include "engine/control/model_queue.h"
#include "engine/control/policy_registry.h"
#include "engine/control/ready_set.h"

using namespace servelab;

TEST_CASE("ModelQueue is FIFO across wrap-around and growth") {
  ModelQueue q;
  RequestId next_in = 0, next_out = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < round % 7 + 1; ++i) q.push_back(Request{next_in++, 0, 0.0});
    for (int i = 0; i < round % 5 && !q.empty(); ++i) {
      CHECK(q.front().id == next_out++);
      q.pop_front();
    }
    REQUIRE(q.size() == next_in - next_out);
  }
  std::vector<Request> out;
  q.take_front(3, out);
  REQUIRE(out.size() == 3);
  for (const auto& r : out) CHECK(r.id == next_out++);
  CHECK(q.size() == next_in - next_out);
  if (!q.empty()) CHECK(q.back().id == next_in - 1);
}

// Every operation against std::deque, through the inline slots, the move to the heap, wrap-
// around on both, erase in the middle, and copies and moves of a queue (a vector of model
// slots moves its queues when it grows).
template <class Queue>
void check_against_deque(uint32_t seed) {
  std::mt19937 rng(seed);
  Queue q;
  std::deque<RequestId> ref;
  RequestId next = 0;
  auto same = [&](const Queue& a) {
    REQUIRE(a.size() == ref.size());
    for (size_t i = 0; i < ref.size(); ++i) REQUIRE(a[i].id == ref[i]);
    if (!ref.empty()) REQUIRE((a.front().id == ref.front() && a.back().id == ref.back()));
  };
  for (int step = 0; step < 4000; ++step) {
    const int op = int(rng() % 10);
    if (op < 4 || ref.empty()) {
      q.push_back(Request{next, 0, 0.0});
      ref.push_back(next++);
    } else if (op < 7) {
      q.pop_front();
      ref.pop_front();
    } else if (op == 7) {
      const size_t i = rng() % ref.size();
      q.erase(i);
      ref.erase(ref.begin() + std::ptrdiff_t(i));
    } else if (op == 8) {
      std::vector<Request> out;
      const size_t n = rng() % (ref.size() + 1);
      q.take_front(n, out);
      for (const auto& r : out) {
        REQUIRE(r.id == ref.front());
        ref.pop_front();
      }
    } else {
      Queue copy = q;
      same(copy);
      Queue moved = std::move(copy);
      q = moved;
    }
    same(q);
  }
}

TEST_CASE("RingQueue matches a deque with and without inline slots") {
  for (uint32_t seed : {1u, 2u, 3u}) {
    check_against_deque<RingQueue<Request>>(seed);
    check_against_deque<RingQueue<Request, 1>>(seed);
    check_against_deque<RingQueue<Request, 2>>(seed);
    check_against_deque<RingQueue<Request, 8>>(seed);
  }
}

TEST_CASE("registry lists the built-in policies, sorted") {
  auto b = PolicyRegistry::batching_names();
  auto e = PolicyRegistry::eviction_names();
  auto s = PolicyRegistry::scheduling_names();
  CHECK(std::is_sorted(b.begin(), b.end()));
  for (const char* n : {"fixed", "max-delay", "none", "rafiqi-aimd", "rafiqi-ewma"})
    CHECK(std::find(b.begin(), b.end(), n) != b.end());
  for (const char* n : {"fifo", "lfu", "lru"}) CHECK(std::find(e.begin(), e.end(), n) != e.end());
  for (const char* n : {"edf", "lru-order", "oldest-first"})
    CHECK(std::find(s.begin(), s.end(), n) != s.end());
}

TEST_CASE("every registered policy builds with empty params and has help") {
  for (const auto& n : PolicyRegistry::batching_names()) {
    CHECK(PolicyRegistry::batching({n, {}}, ModelInfo{}) != nullptr);
    CHECK_FALSE(PolicyRegistry::help(n).empty());
  }
  for (const auto& n : PolicyRegistry::eviction_names()) {
    CHECK(PolicyRegistry::eviction({n, {}}) != nullptr);
    CHECK_FALSE(PolicyRegistry::help(n).empty());
  }
  for (const auto& n : PolicyRegistry::scheduling_names()) {
    CHECK(PolicyRegistry::scheduling({n, {}}) != nullptr);
    CHECK_FALSE(PolicyRegistry::help(n).empty());
  }
}

TEST_CASE("unknown names and bad parameters are ConfigErrors with useful messages") {
  CHECK_THROWS_WITH(PolicyRegistry::batching({"nope", {}}, ModelInfo{}),
                    Catch::Contains("nope") && Catch::Contains("rafiqi-ewma"));
  CHECK_THROWS_AS(PolicyRegistry::eviction({"nope", {}}), ConfigError);
  CHECK_THROWS_AS(PolicyRegistry::scheduling({"nope", {}}), ConfigError);
  CHECK_THROWS_AS(PolicyRegistry::help("nope"), ConfigError);

  PolicyParams bad;
  bad.set("size", "eight");
  CHECK_THROWS_WITH(PolicyRegistry::batching({"fixed", bad}, ModelInfo{}),
                    Catch::Contains("fixed") && Catch::Contains("size"));
  PolicyParams zero;
  zero.set("size", "0");
  CHECK_THROWS_AS(PolicyRegistry::batching({"fixed", zero}, ModelInfo{}), ConfigError);
  PolicyParams alpha;
  alpha.set("alpha", "1.5");
  CHECK_THROWS_AS(PolicyRegistry::batching({"rafiqi-ewma", alpha}, ModelInfo{}), ConfigError);
  PolicyParams typo;
  typo.set("max_dealy", "0.1");
  CHECK_THROWS_WITH(PolicyRegistry::batching({"max-delay", typo}, ModelInfo{}),
                    Catch::Contains("max_dealy"));
}

namespace {
struct AlwaysOne final : BatchingPolicy {
  BatchDecision decide(const ModelView&, Time) override { return {1}; }
};
}  // namespace

TEST_CASE("custom policies can be registered") {
  PolicyRegistry::add_batching("test-always-one", "test only",
                               [](const PolicyParams&, const ModelInfo&) {
                                 return std::make_unique<AlwaysOne>();
                               });
  auto names = PolicyRegistry::batching_names();
  CHECK(std::find(names.begin(), names.end(), "test-always-one") != names.end());
  CHECK(PolicyRegistry::help("test-always-one") == "test only");
}

// ReadySet against std::set as the reference order: a random walk of inserts and erases that
// grows to hundreds of keys (many blocks, splits) and shrinks back (merges, emptied blocks),
// checking the first key meeting a predicate each step and the whole order now and then.
TEST_CASE("ReadySet keeps std::set's order as its blocks split and merge", "[queue]") {
  using Key = ReadySet::Key;
  ReadySet ready;
  std::set<Key> reference;
  std::mt19937_64 rng(7);
  auto key_of = [](uint32_t m) { return Key{double(m % 13), double(m % 5), m}; };
  auto check = [&](uint32_t divisor) {
    const Key* got = ready.first_where([&](const Key& k) { return k.model % divisor == 0; });
    auto want = std::find_if(reference.begin(), reference.end(),
                             [&](const Key& k) { return k.model % divisor == 0; });
    REQUIRE((got == nullptr) == (want == reference.end()));
    if (got) REQUIRE(*got == *want);
  };
  auto whole_order = [&] {
    std::vector<Key> keys;
    ready.first_where([&](const Key& k) {
      keys.push_back(k);
      return false;
    });
    return keys;
  };
  size_t peak_blocks = 0;
  for (int phase = 0; phase < 6; ++phase) {
    const bool grow = phase % 2 == 0;
    for (int step = 0; step < 4000; ++step) {
      uint32_t m = uint32_t(rng() % 1200);
      bool insert = grow ? rng() % 4 != 0 : rng() % 32 == 0;
      if (insert && !reference.count(key_of(m))) {
        ready.insert(key_of(m));
        reference.insert(key_of(m));
      } else if (!insert && reference.count(key_of(m))) {
        ready.erase(key_of(m));
        reference.erase(key_of(m));
      }
      REQUIRE(ready.size() == reference.size());
      REQUIRE(ready.blocks() <= 8 * ready.size() / ReadySet::kBlockKeys + 1);
      peak_blocks = std::max(peak_blocks, ready.blocks());
      check(1 + step % 7);
      if (step % 97 == 0) REQUIRE(whole_order() == std::vector<Key>(reference.begin(), reference.end()));
    }
  }
  REQUIRE(peak_blocks >= 8);  // splits were exercised
  REQUIRE(ready.blocks() < peak_blocks / 2);  // and merges as it shrank
  // Taking the least key over and over, as workers do, empties it in order.
  while (!reference.empty()) {
    REQUIRE(*ready.first_where([](const Key&) { return true; }) == *reference.begin());
    ready.erase(*reference.begin());
    reference.erase(reference.begin());
  }
  REQUIRE(ready.empty());
  REQUIRE(ready.blocks() == 1);  // the last block stays, empty, for the next insert
  REQUIRE(ready.first_where([](const Key&) { return true; }) == nullptr);
  // Refilled from empty, in descending order (every insert in front), it keeps the order.
  for (uint32_t m = 40; m-- > 0;) {
    ready.insert(key_of(m));
    reference.insert(key_of(m));
  }
  REQUIRE(whole_order() == std::vector<Key>(reference.begin(), reference.end()));
}
