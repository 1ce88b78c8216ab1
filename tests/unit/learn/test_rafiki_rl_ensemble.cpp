// rafiki-rl as an ensemble dispatcher (learn/rafiki_rl_ensemble.h), checked by hand: the
// action space (|B| x (2^|M| - 1)), the state, the decision (min(b, queue) to the subset, only
// while some member is idle), equation 7's reward with the subset's accuracy, and the
// registry entry's refusal of a network of the wrong shape.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "learn/mlp.h"
#include "learn/rafiki_rl_ensemble.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::learn;
using Catch::Matchers::Contains;

namespace {

// Acts as told and records what it is told.
struct ScriptedAgent final : RlAgent {
  size_t action = 0;
  std::vector<float> seen;
  std::vector<std::pair<RequestId, size_t>> commits;
  std::vector<std::pair<RequestId, double>> rewards;
  size_t act(std::span<const float> state) override {
    seen.assign(state.begin(), state.end());
    return action;
  }
  void commit(std::span<const float>, size_t a, RequestId batch) override {
    commits.push_back({batch, a});
  }
  void reward(RequestId batch, double r) override { rewards.push_back({batch, r}); }
};

PolicySpec spec(std::vector<std::pair<std::string, std::string>> kv) {
  PolicySpec p{"rafiki-rl", {}};
  for (const auto& [k, v] : kv) p.params.set(k, v);
  return p;
}

// B = {16, 32}, K = 4 waiting times, tau = 100 ms, beta = 0.5, three members.
EnsembleRlSettings small() {
  return ensemble_rl_settings(
      spec({{"batch_sizes", "16,32"}, {"queue_features", "4"}, {"slo_ms", "100"}, {"beta", "0.5"}}),
      3);
}

}  // namespace

TEST_CASE("ensemble rafiki-rl: actions are a batch size and a non-empty subset", "[learn]") {
  const EnsembleRlSettings s = small();
  CHECK(ensemble_state_size(s) == 4 + 1 + 3 * (1 + 2));
  REQUIRE(ensemble_actions(s) == 2 * 7);
  CHECK(ensemble_action(s, 0) == std::pair<uint32_t, MemberMask>{16, 0b001});
  CHECK(ensemble_action(s, 1) == std::pair<uint32_t, MemberMask>{32, 0b001});
  CHECK(ensemble_action(s, 4) == std::pair<uint32_t, MemberMask>{16, 0b011});
  CHECK(ensemble_action(s, 13) == std::pair<uint32_t, MemberMask>{32, 0b111});
  CHECK_THROWS_WITH(ensemble_rl_settings(spec({{"batch", "16"}}), 3), Contains("batch"));
  CHECK_THROWS_WITH(ensemble_rl_settings(spec({}), 9), Contains("1..8 members"));
}

TEST_CASE("ensemble rafiki-rl decides from the queue and the members, and earns equation 7",
          "[learn]") {
  auto agent = std::make_shared<ScriptedAgent>();
  agent->action = 9;  // b = 32 (9 mod 2 = 1), members 9 div 2 + 1 = 5 = {m0, m2}
  std::unique_ptr<EnsembleDispatcher> d = make_ensemble_rl(small(), agent);
  // Three queued at 0, 10 and 40 ms; at 50 ms they have waited 0.5, 0.4 and 0.1 tau.
  const std::vector<Request> queue = {{7, 3, 0.000, 0.100}, {8, 3, 0.010, 0.110},
                                      {9, 3, 0.040, 0.140}};
  const std::vector<BatchSeconds> c0 = {{16, 0.010}, {32, 0.020}};
  const std::vector<BatchSeconds> c1 = {{16, 0.050}, {32, 0.100}};
  std::vector<GroupMemberView> members = {{0, true, &c0}, {1, false, &c1}, {2, true, nullptr}};
  EnsembleAccuracy acc;
  acc.by_mask = {NAN, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99};

  GroupDecision g = d->decide({queue, members, &acc}, 0.050);
  CHECK(g.size == 3);  // min(32, 3)
  CHECK(g.members == 0b101);
  const std::vector<float> want = {0.5f, 0.4f, 0.1f, 0.0f,  // waiting times / tau, padded
                                   3.0f / 32,               // queue / max(B)
                                   0.0f, 0.1f, 0.2f,        // m0: idle, c(16), c(32) over tau
                                   1.0f, 0.5f, 1.0f,        // m1: busy
                                   0.0f, 0.0f, 0.0f};       // m2: idle, no costs known
  REQUIRE(agent->seen.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(agent->seen[i] == Approx(want[i]));
  REQUIRE(agent->commits.size() == 1);
  CHECK(agent->commits[0] == std::pair<RequestId, size_t>{7, 9});

  // All three answered, one past its deadline: a({m0, m2}) x (3 - 0.5 x 1) = 0.9 x 2.5.
  d->on_batch_answered(7, 3, 0b101, 1, 0.2);
  REQUIRE(agent->rewards.size() == 1);
  CHECK(agent->rewards[0].first == 7);
  CHECK(agent->rewards[0].second == Approx(2.25));

  // No member idle: no decision, nothing asked of the network.
  for (auto& m : members) m.idle = false;
  agent->seen.clear();
  CHECK(d->decide({queue, members, &acc}, 0.060).size == 0);
  CHECK(agent->seen.empty());
}

TEST_CASE("ensemble rafiki-rl refuses a missing or mismatched network", "[learn]") {
  const std::vector<std::string> members = {"a", "b", "c"};
  CHECK_THROWS_WITH(ensemble_rl_from_file(spec({}), members), Contains("'weights' is required"));
  testutil::TempDir dir("servelab-rl-ensemble");
  const std::string path = (dir / "w.json").string();
  DenseLayer layer{5, 3, std::vector<float>(15, 0.1f), std::vector<float>(3, 0.0f)};
  save_mlp(Mlp({layer}), path);  // 5 inputs, 3 actions
  CHECK_THROWS_WITH(ensemble_rl_from_file(spec({{"weights", path}}), members),
                    Contains("maps 5 inputs to 3 actions") && Contains("28 actions"));
}
