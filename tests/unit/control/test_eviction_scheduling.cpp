// Eviction and scheduling policies called directly on hand-made sequences.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/control/policy_registry.h"

using namespace servelab;

namespace {

ModelId victim(EvictionPolicy& p, std::vector<ModelId> ids) {
  std::vector<EvictionCandidate> c;
  for (ModelId id : ids) c.push_back({id, 1, 0, 0, 0, 0});
  return ids[p.pick_victim(c, 0)];
}

// Loads 0, 1, 2 in order, then accesses 0, 0, 1, 0, 2.
std::unique_ptr<EvictionPolicy> scenario(const std::string& name) {
  auto p = PolicyRegistry::eviction({name, {}});
  for (ModelId m : {0, 1, 2}) p->on_load(m, m);
  Time t = 10;
  for (ModelId m : {0, 0, 1, 0, 2}) p->on_access(m, t++);
  return p;
}

ModelView mv(ModelId id, Time last_dispatch, Time oldest, Time deadline = kNever) {
  ModelView v;
  v.model = id;
  v.queued = 1;
  v.last_dispatch = last_dispatch;
  v.oldest_arrival = oldest;
  v.oldest_deadline = deadline;
  return v;
}

size_t pick(const std::string& name, const std::vector<ModelView>& c) {
  return PolicyRegistry::scheduling({name, {}})->pick(c, 100);
}

}  // namespace

TEST_CASE("lru evicts the least recently used") {
  auto p = scenario("lru");  // recency: 1 < 0 < 2
  CHECK(victim(*p, {0, 1, 2}) == 1);
  CHECK(victim(*p, {0, 2}) == 0);
  p->on_access(0, 20);
  CHECK(victim(*p, {0, 2}) == 2);
}

TEST_CASE("lfu evicts the least frequently used, ties by recency") {
  auto p = scenario("lfu");  // counts: 0:3, 1:1, 2:1; 1 older than 2
  CHECK(victim(*p, {0, 1, 2}) == 1);
  CHECK(victim(*p, {0, 2}) == 2);
  // Counts restart after an unload (default), so a reloaded model is cold again.
  p->on_unload(0, 30);
  p->on_load(0, 31);
  CHECK(victim(*p, {0, 2}) == 0);
}

TEST_CASE("lfu keep_counts remembers counts across evictions") {
  PolicyParams keep;
  keep.set("keep_counts", "true");
  auto p = PolicyRegistry::eviction({"lfu", keep});
  for (ModelId m : {0, 1}) p->on_load(m, 0);
  for (int i = 0; i < 3; ++i) p->on_access(0, 1);
  p->on_access(1, 2);
  p->on_unload(0, 3);
  p->on_load(0, 4);
  CHECK(victim(*p, {0, 1}) == 1);
}

TEST_CASE("fifo evicts the model loaded first, whatever its use") {
  auto p = scenario("fifo");
  CHECK(victim(*p, {0, 1, 2}) == 0);
  CHECK(victim(*p, {1, 2}) == 1);
  p->on_unload(0, 40);
  p->on_load(0, 41);
  CHECK(victim(*p, {0, 1, 2}) == 1);
}

TEST_CASE("eviction ties go to the first (lowest id) candidate") {
  for (const auto& n : PolicyRegistry::eviction_names()) {
    auto p = PolicyRegistry::eviction({n, {}});
    CHECK(victim(*p, {3, 5, 9}) == 3);  // never seen: all equal
  }
}

TEST_CASE("lru-order picks the least recently dispatched model") {
  std::vector<ModelView> c{mv(0, 5, 1), mv(1, -kNever, 3), mv(2, 2, 0)};
  CHECK(pick("lru-order", c) == 1);
  c[1].last_dispatch = 7;
  CHECK(pick("lru-order", c) == 2);
}

TEST_CASE("oldest-first picks the oldest queue head, ties by model id") {
  std::vector<ModelView> c{mv(4, 0, 2.0), mv(1, 0, 1.0), mv(2, 0, 1.0)};
  CHECK(pick("oldest-first", c) == 1);
}

TEST_CASE("edf picks the earliest deadline, ties by oldest arrival") {
  std::vector<ModelView> c{mv(0, 0, 1.0, 9.0), mv(1, 0, 3.0, 5.0), mv(2, 0, 2.0, 5.0)};
  CHECK(pick("edf", c) == 2);
  c[0].oldest_deadline = 4.0;
  CHECK(pick("edf", c) == 0);
  std::vector<ModelView> none{mv(0, 0, 3.0), mv(1, 0, 2.0)};
  CHECK(pick("edf", none) == 1);  // no deadlines: oldest first
}

TEST_CASE("gds evicts the least reload cost per byte, aged by the last victim", "[policy][eviction]") {
  // A: 100 bytes, 1 s to reload (0.01 s/byte); B: 100 bytes, 10 s (0.1); C: 200 bytes, 1 s
  // (0.005). With A and B loaded at L = 0, A goes (H 0.01 < 0.1) and L becomes 0.01. C is then
  // loaded and B used, both at L = 0.01: H(B) = 0.11, H(C) = 0.015, so C goes, L = 0.015.
  // B, unused since, ages: a model loaded now with cost/size 0.1 has H = 0.115 > H(B) = 0.11.
  auto p = PolicyRegistry::eviction({"gds", {}});
  const EvictionCandidate a{0, 100, 1, 0, 0, 0}, b{1, 100, 10, 0, 0, 0}, c{2, 200, 1, 0, 0, 0};
  p->on_load(0, 0);
  p->on_load(1, 0);
  std::vector<EvictionCandidate> ab{a, b};
  CHECK(p->pick_victim(ab, 1) == 0);
  p->on_unload(0, 1);
  p->on_load(2, 2);
  p->on_access(1, 3);
  std::vector<EvictionCandidate> bc{b, c};
  CHECK(p->pick_victim(bc, 4) == 1);
  p->on_unload(2, 4);
  p->on_load(3, 5);
  const EvictionCandidate d{3, 100, 10, 0, 0, 0};
  std::vector<EvictionCandidate> bd{b, d};
  CHECK(p->pick_victim(bd, 6) == 0);
  // Unknown reload cost counts as 1 s: size alone decides, the larger goes.
  auto q = PolicyRegistry::eviction({"gds", {}});
  for (ModelId m : {0, 1}) q->on_load(m, 0);
  std::vector<EvictionCandidate> sizes{{0, 100, 0, 0, 0, 0}, {1, 400, 0, 0, 0, 0}};
  CHECK(q->pick_victim(sizes, 1) == 1);
}
