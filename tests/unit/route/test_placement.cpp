// Placement policies: hand-computed placements for small cases, the errors of a static
// placement, and a contract pass over every registered policy.
#include <catch2/catch.hpp>

#include "engine/route/placement.h"

using namespace servelab;
using namespace servelab::route;
using Hosts = std::vector<std::vector<uint32_t>>;

namespace {

PolicySpec spec(const std::string& name, std::map<std::string, std::string> params = {}) {
  return {name, PolicyParams(std::move(params))};
}

}  // namespace

TEST_CASE("everywhere puts every model on every server", "[route][placement]") {
  const std::vector<PlacedModel> m = {{"a"}, {"b"}, {"c"}};
  const Placement p = make_placement(spec("everywhere"), m, 2);
  CHECK(p.hosts == Hosts{{0, 1}, {0, 1}, {0, 1}});
  CHECK(p.everywhere());
}

TEST_CASE("memory-balanced places the largest first on the servers holding fewest bytes",
          "[route][placement]") {
  const std::vector<PlacedModel> m = {{"a", 100}, {"b", 300}, {"c", 200}, {"d", 50}};
  // One replica: b -> 0, c -> 1, a -> 2, d -> 2 (server 2 holds 100, the least).
  CHECK(make_placement(spec("memory-balanced"), m, 3).hosts == Hosts{{2}, {0}, {1}, {2}});
  // Two: b -> 0,1 (300,300,0); c -> 2 then 0 on the tie (500,300,200); a -> 2,1
  // (500,400,300); d -> 2,1.
  const Placement two = make_placement(spec("memory-balanced", {{"replicas", "2"}}), m, 3);
  CHECK(two.hosts == Hosts{{1, 2}, {0, 1}, {0, 2}, {1, 2}});
  CHECK_FALSE(two.everywhere());
  CHECK(two.hosts_model(2, 0));
  CHECK_FALSE(two.hosts_model(2, 1));
}

TEST_CASE("replicas-by-load gives the busy model more replicas on the least loaded servers",
          "[route][placement]") {
  const std::vector<PlacedModel> m = {{"a", 0, 6}, {"b", 0, 1}, {"c", 0, 1}};
  // 2 replicas a model on average: 6 in all. a wants 6 * 6/8 = 4.5 -> 5, capped at 4 servers,
  // each carrying 1.5; b and c want 0.75 -> 1: b on server 0 (all tied), c on server 1.
  const Placement p = make_placement(spec("replicas-by-load"), m, 4);
  CHECK(p.hosts == Hosts{{0, 1, 2, 3}, {0}, {1}});
  // It alone reads the loads, so only its callers must count the requests.
  for (const std::string& name : placement_names())
    CHECK(placement_reads_load(name) == (name == "replicas-by-load"));
  CHECK_FALSE(placement_reads_load("no-such-placement"));
}

TEST_CASE("a static placement names each model's servers and refuses unknown ones",
          "[route][placement]") {
  const std::vector<PlacedModel> m = {{"m0"}, {"m1"}};
  CHECK(make_placement(spec("static", {{"m0", "2,0"}, {"m1", "1"}}), m, 3).hosts ==
        Hosts{{0, 2}, {1}});
  CHECK_THROWS_WITH(make_placement(spec("static", {{"m0", "0"}, {"m1", "1"}, {"zz", "0"}}), m, 3),
                    Catch::Contains("unknown model 'zz'"));
  CHECK_THROWS_WITH(make_placement(spec("static", {{"m0", "0"}, {"m1", "3"}}), m, 3),
                    Catch::Contains("server '3' is not one of 0..2"));
  CHECK_THROWS_WITH(make_placement(spec("static", {{"m0", "0"}, {"m1", "x"}}), m, 3),
                    Catch::Contains("server 'x'"));
  CHECK_THROWS_WITH(make_placement(spec("static", {{"m0", "0,"}, {"m1", "1"}}), m, 3),
                    Catch::Contains("server ''"));
  CHECK_THROWS_WITH(make_placement(spec("static", {{"m0", "0"}}), m, 3),
                    Catch::Contains("model 'm1' has no server"));
}

TEST_CASE("unknown placements and bad parameters are clear errors", "[route][placement]") {
  const std::vector<PlacedModel> m = {{"a"}};
  CHECK_THROWS_WITH(make_placement(spec("nearest"), m, 2),
                    Catch::Contains("unknown placement 'nearest'") &&
                        Catch::Contains("memory-balanced"));
  CHECK_THROWS_WITH(make_placement(spec("memory-balanced", {{"replicas", "0"}}), m, 2),
                    Catch::Contains("replicas must be in 1..1024"));
  CHECK_THROWS_WITH(make_placement(spec("everywhere", {{"replicas", "2"}}), m, 2),
                    Catch::Contains("unknown parameter 'replicas'"));
}

TEST_CASE("every placement gives each model sorted hosts among the servers",
          "[route][placement][contract]") {
  std::vector<PlacedModel> m;
  for (int i = 0; i < 23; ++i)
    m.push_back({"m" + std::to_string(i), uint64_t(1000 + 37 * (i % 7)), double(1 + i % 5)});
  for (const std::string& name : placement_names()) {
    DYNAMIC_SECTION(name) {
      for (uint32_t servers : {1u, 2u, 5u}) {
        std::map<std::string, std::string> params;
        if (name == "static")
          for (uint32_t i = 0; i < 23; ++i)
            params["m" + std::to_string(i)] = std::to_string(i % servers);
        const Placement p = make_placement(spec(name, params), m, servers);
        REQUIRE(p.hosts.size() == m.size());
        for (const auto& h : p.hosts) {
          REQUIRE_FALSE(h.empty());
          REQUIRE(std::is_sorted(h.begin(), h.end()));
          REQUIRE(std::adjacent_find(h.begin(), h.end()) == h.end());
          REQUIRE(h.back() < servers);
        }
      }
    }
  }
}
