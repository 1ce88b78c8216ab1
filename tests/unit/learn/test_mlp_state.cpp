// rafiki-rl's deployed parts against hand-computed values: the plain MLP, its file format,
// the state vector and equation 7's reward.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/control/model_queue.h"
#include "learn/mlp.h"
#include "learn/rafiki_rl.h"

using namespace servelab;
using namespace servelab::learn;

namespace {

// 2 -> 2 (tanh) -> 1: weights chosen so every value can be computed by hand.
Mlp small_net() {
  DenseLayer hidden{2, 2, {1, 0, 0.5f, -1}, {0, 0.25f}};
  DenseLayer out{2, 1, {2, -1}, {0.5f}};
  return Mlp({hidden, out});
}

}  // namespace

TEST_CASE("Mlp forward: tanh between layers and a linear output", "[learn]") {
  Mlp net = small_net();
  float in[2] = {0.3f, 0.2f}, out[1] = {0};
  net.forward(in, out);
  // h0 = tanh(0.3), h1 = tanh(0.5 * 0.3 - 0.2 + 0.25) = tanh(0.2); y = 2 h0 - h1 + 0.5
  CHECK(out[0] == Approx(2 * std::tanh(0.3) - std::tanh(0.2) + 0.5).epsilon(1e-6));
}

TEST_CASE("Mlp JSON round trip keeps every weight", "[learn]") {
  Mlp net = small_net();
  Mlp back = Mlp::from_json(net.to_json());
  REQUIRE(back.layers().size() == 2);
  CHECK(back.layers()[0].weight == net.layers()[0].weight);
  CHECK(back.layers()[1].bias == net.layers()[1].bias);
  float in[2] = {-1, 2}, a[1], b[1];
  net.forward(in, a);
  back.forward(in, b);
  CHECK(a[0] == b[0]);
}

TEST_CASE("Mlp files that are not a network are refused with the reason", "[learn]") {
  CHECK_THROWS_WITH(Mlp::from_json("{"), Catch::Contains("not JSON"));
  CHECK_THROWS_WITH(Mlp::from_json(R"({"format":"x"})"), Catch::Contains("servelab-mlp"));
  const std::string head = R"({"format":"servelab-mlp","version":1,"activation":"tanh",)";
  // Layers that do not chain: 2 -> 1, then a layer taking 3.
  CHECK_THROWS_WITH(Mlp::from_json(head + R"("layers":[
      {"inputs":2,"outputs":1,"weight":[1,2],"bias":[0]},
      {"inputs":3,"outputs":1,"weight":[1,2,3],"bias":[0]}]})"), Catch::Contains("takes 3"));
  // A weight count that does not match the sizes, and sizes over the bound.
  CHECK_THROWS_WITH(Mlp::from_json(head + R"("layers":[
      {"inputs":2,"outputs":1,"weight":[1],"bias":[0]}]})"), Catch::Contains("outputs x inputs"));
  CHECK_THROWS_WITH(Mlp::from_json(head + R"("layers":[
      {"inputs":100000000,"outputs":1,"weight":[],"bias":[0]}]})"), Catch::Contains("at most"));
  CHECK_THROWS(load_mlp("/nonexistent/weights.json"));
}

TEST_CASE("rafiki-rl state: waiting times over tau, queue length, running, c(b) over tau",
          "[learn]") {
  RlSettings s;
  s.sizes = {2, 4};
  s.queue_features = 4;
  ModelQueue q;
  for (double at : {0.0, 0.2, 0.5}) q.push_back(Request{0, 0, at, kNever});
  ModelView m;
  m.queued = 3;
  m.running = 1;
  m.queue = &q;
  const float costs[2] = {0.25f, 0.5f};
  std::vector<float> state(state_size(s));
  REQUIRE(state.size() == 4 + 2 + 2);
  make_state(s, m, /*now=*/1.0, /*tau=*/0.5, costs, state);
  // Waiting 1.0, 0.8, 0.5 s over tau 0.5; the fourth slot is padding.
  CHECK(state[0] == Approx(2.0));
  CHECK(state[1] == Approx(1.6));
  CHECK(state[2] == Approx(1.0));
  CHECK(state[3] == 0);
  CHECK(state[4] == Approx(3.0 / 4));  // queued / max(B)
  CHECK(state[5] == 1);                // running batches
  CHECK(state[6] == Approx(0.25));
  CHECK(state[7] == Approx(0.5));
}

TEST_CASE("rafiki-rl reward is Rafiki's equation 7", "[learn]") {
  RlSettings s;
  s.slo = 0.5;
  s.beta = 2;
  s.accuracy = 0.8;
  // Finishing at 1.0: arrivals 0.2 and 0.4 waited 0.8 and 0.6 (> tau), 0.6 waited 0.4.
  std::vector<Request> batch{{0, 0, 0.2, kNever}, {1, 0, 0.4, kNever}, {2, 0, 0.6, kNever}};
  // a(M) * (b - beta * overdue) = 0.8 * (3 - 2 * 2)
  CHECK(batch_reward(s, batch, 1.0) == Approx(0.8 * (3 - 2 * 2)));
  // Without slo_ms, each request's own deadline sets tau.
  s.slo = kNever;
  batch[0].deadline = 0.2 + 1.0;  // waited 0.8 of 1.0: in time
  batch[1].deadline = 0.4 + 0.5;
  batch[2].deadline = 0.6 + 0.5;
  CHECK(batch_reward(s, batch, 1.0) == Approx(0.8 * (3 - 2 * 1)));
}
