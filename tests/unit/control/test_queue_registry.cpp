// RingQueue / ModelQueue behaviour and the policy registry's contract.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>

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

// ReadySet against std::set as the reference order, through both of its representations:
// a random walk of inserts and erases that grows past kFlatMax (tree) and shrinks back
// below kFlatMax / 4 (sorted vector), checking the first key meeting a predicate each step.
TEST_CASE("ReadySet keeps std::set's order across its flat and tree forms", "[queue]") {
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
  size_t peak = 0;
  for (int phase = 0; phase < 4; ++phase) {
    const bool grow = phase % 2 == 0;
    for (int step = 0; step < 3000; ++step) {
      uint32_t m = uint32_t(rng() % 300);
      bool insert = grow ? rng() % 4 != 0 : rng() % 32 == 0;
      if (insert && !reference.count(key_of(m))) {
        ready.insert(key_of(m));
        reference.insert(key_of(m));
      } else if (!insert && reference.count(key_of(m))) {
        ready.erase(key_of(m));
        reference.erase(key_of(m));
      }
      REQUIRE(ready.size() == reference.size());
      peak = std::max(peak, ready.size());
      check(1 + step % 7);
    }
  }
  REQUIRE(peak > ReadySet::kFlatMax);       // the tree form was exercised
  REQUIRE(ready.size() < ReadySet::kFlatMax / 4);  // and the flat one again after it
}
