// Cache accounting of weights shared across models (the weight store's blobs): a part is
// held once in the Host tier, a model frees only its unique bytes, and several models that
// share a part free it together. Expected bytes are computed by hand.
#include <catch2/catch.hpp>

#include "engine/control/controller.h"
#include "engine/control/shared_parts.h"
#include "mini_sim.h"

using namespace servelab;
using servelab::test::MiniSim;

namespace {

// A variant of a backbone: `head` bytes of its own plus the shared part `backbone`.
ModelInfo variant(uint64_t head, uint64_t backbone, uint64_t key = 7) {
  return ModelInfo{.name = "v", .size_bytes = head + backbone, .host_parts = {{key, backbone}}};
}

ModelInfo plain(uint64_t size) { return ModelInfo{.name = "p", .size_bytes = size}; }

ControllerConfig config(uint64_t host_bytes) {
  ControllerConfig c;
  c.workers = 1;
  c.budgets[int(Tier::Host)] = {host_bytes, UINT32_MAX};
  c.eviction = {"lru", {}};
  return c;
}

uint64_t host_bytes(const Controller& c) { return c.stats().resident_bytes[int(Tier::Host)]; }

}  // namespace

TEST_CASE("shared parts are charged once and freed by their last holder") {
  SharedParts p;
  const ModelInfo a = variant(40, 60), b = variant(30, 60), c = plain(50);
  CHECK(SharedParts::own_bytes(a) == 40);
  CHECK(p.hold(a) == 100);
  CHECK(p.charge_of(b) == 30);  // the backbone is there already
  CHECK(p.hold(b) == 30);
  CHECK(p.freed_by(a) == 40);   // b still uses the backbone
  CHECK(p.freed_by(b) == 30);
  const ModelInfo* both[] = {&a, &b};
  CHECK(p.freed_by_all(both) == 130);
  const ModelInfo* just_a[] = {&a};
  CHECK(p.charge_after(variant(10, 60), just_a) == 10);
  CHECK(p.charge_after(variant(10, 60), both) == 70);
  CHECK(p.charge_of(c) == 50);
  CHECK(p.drop(a) == 40);
  CHECK(p.freed_by(b) == 90);   // now its own
  CHECK(p.drop(b) == 90);
  CHECK_FALSE(p.any());
}

TEST_CASE("variants that share a backbone fit a host budget their logical sizes exceed") {
  Controller shared(config(150));
  CHECK(shared.add_model_where_it_fits(0, variant(40, 60), Tier::Host) == Tier::Host);
  CHECK(shared.add_model_where_it_fits(1, variant(40, 60), Tier::Host) == Tier::Host);
  CHECK(host_bytes(shared) == 140);

  Controller unshared(config(150));
  CHECK(unshared.add_model_where_it_fits(0, plain(100), Tier::Host) == Tier::Host);
  CHECK(unshared.add_model_where_it_fits(1, plain(100), Tier::Host) == Tier::Disk);
}

TEST_CASE("evicting one variant frees only its head, and the load needs no second victim") {
  Controller c(config(150));
  c.add_model(0, variant(40, 60), Tier::Host);
  c.add_model(1, variant(40, 60), Tier::Host);
  c.add_model(2, plain(50));
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 1);  // model 1 used: model 0 is the LRU victim
  s.arrive(2.0, 2, 2);  // 50 bytes; 10 free, evicting model 0 frees its 40 head
  s.run();
  REQUIRE(s.evicts.size() == 1);
  CHECK(s.evicts[0].evict.model == 0);
  CHECK(host_bytes(c) == 150);  // backbone 60 + head 40 + 50
  CHECK(c.model_state(1).resident[int(Tier::Host)]);
}

TEST_CASE("a model larger than every head loads once the variants sharing a part are all evicted") {
  Controller c(config(150));
  c.add_model(0, variant(40, 60), Tier::Host);
  c.add_model(1, variant(40, 60), Tier::Host);
  c.add_model(2, plain(110));  // fits only when the backbone goes too: 40 + 40 alone is short
  MiniSim s(c, 1.0, 10.0);
  s.arrive(0.0, 1, 2);
  s.run();
  CHECK(s.evicts.size() == 2);
  REQUIRE(s.batches.size() == 1);
  CHECK(s.batches[0].at == Approx(10.0));
  CHECK(host_bytes(c) == 110);
}

TEST_CASE("a removed variant leaves the backbone to the one still registered") {
  Controller c(config(150));
  c.add_model(0, variant(40, 60), Tier::Host);
  c.add_model(1, variant(40, 60), Tier::Host);
  ActionBuffer out;
  c.remove_model(0, 0.0, out);
  CHECK(host_bytes(c) == 100);
  c.remove_model(1, 0.0, out);
  CHECK(host_bytes(c) == 0);
}
