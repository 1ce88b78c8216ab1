// The control plane's ensemble parts: every registered subset policy keeps its contract, the
// built-in ones pick what their definitions say, and Rafiki's vote breaks ties by accuracy.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <string>

#include "engine/control/ensemble.h"

using namespace servelab;

namespace {

const std::array<std::string, 4> kMembers = {"a", "b", "c", "d"};

PolicySpec spec(const std::string& name, const std::string& key = "", const std::string& v = "") {
  PolicySpec s{name, {}};
  if (!key.empty()) s.params.set(key, v);
  return s;
}

}  // namespace

TEST_CASE("every subset policy picks a non-empty subset of the members", "[control][ensemble]") {
  const std::array<MemberView, 4> views = {{{0, 5}, {1, 0}, {2, 3}, {3, 0}}};
  for (const std::string& name : subset_policy_names()) {
    CAPTURE(name);
    PolicySpec s = name == "fixed" ? spec(name, "members", "b") : spec(name);
    auto p = make_subset_policy(s, kMembers);
    const MemberMask m = p->select(views);
    CHECK(m != 0);
    CHECK(m < 16);
  }
}

TEST_CASE("subset policies pick what their definitions say", "[control][ensemble]") {
  const std::array<MemberView, 4> views = {{{0, 5}, {1, 0}, {2, 3}, {3, 0}}};
  CHECK(make_subset_policy(spec("all"), kMembers)->select(views) == 0b1111);
  CHECK(make_subset_policy(spec("fixed", "members", "d,a"), kMembers)->select(views) == 0b1001);
  // Queues 5, 0, 3, 0: the two shortest are b and d; the third is c.
  CHECK(make_subset_policy(spec("least-loaded", "k", "2"), kMembers)->select(views) == 0b1010);
  CHECK(make_subset_policy(spec("least-loaded", "k", "3"), kMembers)->select(views) == 0b1110);
  CHECK(make_subset_policy(spec("least-loaded"), kMembers)->select(views) == 0b0010);
  CHECK_THROWS_WITH(make_subset_policy(spec("fixed"), kMembers), Catch::Contains("needs 'members'"));
  CHECK_THROWS_WITH(make_subset_policy(spec("all", "k", "1"), kMembers),
                    Catch::Contains("unknown parameter 'k'"));
}

TEST_CASE("majority vote with ties to the more accurate model", "[control][ensemble]") {
  const std::array<double, 4> acc = {0.90, 0.95, 0.97, 0.80};
  CHECK(majority_vote(std::array{3, 3, 5, 7}, acc, 0b1111) == 3);  // two votes beat one
  CHECK(majority_vote(std::array{3, 3, 5, 5}, acc, 0b1111) == 5);  // tie: c (0.97) said 5
  CHECK(majority_vote(std::array{3, 4, 5, 6}, acc, 0b1111) == 5);  // all differ: c
  CHECK(majority_vote(std::array{3, 4, 5, 6}, acc, 0b1011) == 4);  // c did not vote: b
  CHECK(majority_vote(std::array{3, 4, 5, 6}, acc, 0) == -1);
  EnsembleAccuracy t{{0, 0.5, 0.6, 0.7}};
  CHECK(t.of(0b10) == 0.6);
  CHECK(std::isnan(t.of(0)));
  CHECK(std::isnan(t.of(4)));
}
