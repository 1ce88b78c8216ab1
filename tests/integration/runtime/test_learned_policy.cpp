// rafiki-rl deployed in the engine: the network file a training run writes is an ordinary
// batching policy of the real engine (real threads, a real TorchScript model), and its choice
// of b decides the batches the workers run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>

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

// Serves 9 requests submitted together after a first one with a network that always picks
// B[pick] from B = {2, 4}; returns the batch sizes the nine ran in.
std::vector<uint32_t> serve_with(size_t pick, const std::string& dir) {
  const std::string weights = dir + "/b" + std::to_string(pick) + ".json";
  learn::save_mlp(constant_choice(8, 2, pick), weights);  // state: 4 waits + 2 + 2 costs
  EngineOptions o = options(1, "rafiki-rl",
                            params({{"weights", weights}, {"batch_sizes", "2,4"},
                                    {"queue_features", "4"}, {"slo_ms", "1000"}}));
  Engine engine(o);
  engine.register_model(tiny_spec("tiny_cnn"));
  std::vector<float> input(3 * 32 * 32, 0.5f);
  Collector first;
  std::mutex mu;
  std::vector<ClassifyResult> results;
  std::condition_variable cv;
  int code = -1;
  // The nine reach the controller in one event (submit_raw_together) once the first request
  // is answered, so the batching policy decides with all nine queued and the worker free.
  REQUIRE(engine.submit_raw("tiny_cnn", input, 1, [&](ClassifyResult r) {
    code = engine.submit_raw_together(
        "tiny_cnn", std::vector<std::vector<float>>(9, input), 1, [&](size_t, ClassifyResult x) {
          std::lock_guard lock(mu);
          results.push_back(std::move(x));
          cv.notify_all();
        });
    first.callback()(std::move(r));
  }) == 0);
  first.wait(1);
  {
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return results.size() == 9; }));
  }
  std::vector<uint32_t> sizes;
  for (const ClassifyResult& r : results) {
    REQUIRE(r.status == RequestStatus::Ok);
    sizes.push_back(r.batch_size);
  }
  CHECK(code == 0);
  return sizes;
}

}  // namespace

// The nine are queued together while the worker is idle, so every decision takes
// min(b, queue): with b = 2 four batches of 2 and one of 1, with b = 4 two of 4 and one of 1.
TEST_CASE("engine: rafiki-rl's network decides the batch sizes", "[runtime][learn]") {
  learn::register_policies();
  servelab::testutil::TempDir dir("engine-rl");
  std::vector<uint32_t> small = serve_with(0, dir.path().string());
  std::vector<uint32_t> big = serve_with(1, dir.path().string());
  std::sort(small.begin(), small.end());
  std::sort(big.begin(), big.end());
  CHECK(small == std::vector<uint32_t>{1, 2, 2, 2, 2, 2, 2, 2, 2});
  CHECK(big == std::vector<uint32_t>{1, 4, 4, 4, 4, 4, 4, 4, 4});
}

TEST_CASE("engine: rafiki-rl with a missing network file is refused at start", "[runtime][learn]") {
  learn::register_policies();
  EngineOptions o = options(1, "rafiki-rl", params({{"weights", "/nonexistent/net.json"}}));
  CHECK_THROWS_WITH(Engine(o), Catch::Contains("/nonexistent/net.json"));
}
