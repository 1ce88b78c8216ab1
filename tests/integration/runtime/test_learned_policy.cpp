// rafiki-rl deployed in the engine: the network file a training run writes is an ordinary
// batching policy of the real engine (real threads, a real TorchScript model), and its choice
// of b decides the batches the workers run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>

#include "learn/mlp.h"
#include "learn/rafiki_rl.h"
#include "runtime_test_util.h"
#include "tests/support/mlp_fixtures.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::runtime;
using namespace servelab::runtime::test;

namespace {

using testutil::constant_choice;

// Serves 9 requests submitted together behind the model's first load with a network that
// always picks B[pick] from B = {2, 4}; returns the batch sizes the requests ran in.
std::vector<uint32_t> serve_with(size_t pick, const std::string& dir) {
  const std::string weights = dir + "/b" + std::to_string(pick) + ".json";
  learn::save_mlp(constant_choice(8, 2, pick), weights);  // state: 4 waits + 2 + 2 costs
  EngineOptions o = options(1, "rafiki-rl",
                            params({{"weights", weights}, {"batch_sizes", "2,4"},
                                    {"queue_features", "4"}, {"slo_ms", "1000"}}));
  Engine engine(o);
  engine.register_model(tiny_spec("tiny_cnn"));
  std::vector<float> input(3 * 32 * 32, 0.5f);
  Collector first, c;
  std::atomic<int> accepted{0};
  // The nine are submitted from the first request's `done`: the engine runs what a callback
  // posts right after it, all nine arrivals before the worker's next completion.
  REQUIRE(engine.submit_raw("tiny_cnn", input, 1, [&](ClassifyResult r) {
    for (int i = 0; i < 9; ++i) accepted += engine.submit_raw("tiny_cnn", input, 1, c.callback()) == 0;
    first.callback()(std::move(r));
  }) == 0);
  first.wait(1);
  std::vector<uint32_t> sizes;
  for (const ClassifyResult& r : c.wait(9)) {
    REQUIRE(r.status == RequestStatus::Ok);
    sizes.push_back(r.batch_size);
  }
  CHECK(accepted == 9);
  return sizes;
}

}  // namespace

// The nine arrive together while the worker is idle: the first goes alone (min(b, queue) goes
// at once) and the other eight queue behind it, so later decisions see a queue of at least 4,
// each network's b shows as the largest batch, and no batch is larger than b.
TEST_CASE("engine: rafiki-rl's network decides the batch sizes", "[runtime][learn]") {
  learn::register_policies();
  servelab::testutil::TempDir dir("engine-rl");
  const std::vector<uint32_t> small = serve_with(0, dir.path().string());
  const std::vector<uint32_t> big = serve_with(1, dir.path().string());
  CHECK(*std::max_element(small.begin(), small.end()) == 2);
  CHECK(*std::max_element(big.begin(), big.end()) == 4);
}

TEST_CASE("engine: rafiki-rl with a missing network file is refused at start", "[runtime][learn]") {
  learn::register_policies();
  EngineOptions o = options(1, "rafiki-rl", params({{"weights", "/nonexistent/net.json"}}));
  CHECK_THROWS_WITH(Engine(o), Catch::Contains("/nonexistent/net.json"));
}
