// RingQueue / ModelQueue behaviour and the policy registry's contract.
#include <catch2/catch.hpp>

#include "engine/control/model_queue.h"
#include "engine/control/policy_registry.h"

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
