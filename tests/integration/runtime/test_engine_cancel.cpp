// Cancelling accepted requests in the real engine (Engine::cancel): a queued request leaves
// its queue at once, answered Cancelled; the requests around it are served as if it had never
// come; unknown and answered ids change nothing.
#include <catch2/catch.hpp>

#include <string>

#include "runtime_test_util.h"

using namespace servelab;
using namespace servelab::runtime;
using namespace servelab::runtime::test;

namespace {

// The `fixed` policy holds a batch until 4 requests wait (or 60 s pass): requests stay queued
// until the test sends the fourth.
EngineOptions hold_for_four() {
  return options(1, "fixed", params({{"size", "4"}, {"max_wait", "60"}}));
}

}  // namespace

TEST_CASE("engine: a cancelled queued request is answered at once and leaves its queue",
          "[runtime][cancel]") {
  Engine engine(hold_for_four());
  engine.register_model(tiny_spec("tiny_cnn"));
  std::vector<float> input(3 * 32 * 32, 0.5f);
  Collector cancelled, served;
  RequestId first = 0, ignored = 0;
  REQUIRE(engine.infer("tiny_cnn", input, cancelled.callback(), {}, &first) == 0);
  REQUIRE(engine.infer("tiny_cnn", input, served.callback(), {}, &ignored) == 0);
  CHECK(first != ignored);
  engine.cancel(first);
  ClassifyResult r = cancelled.wait(1)[0];
  CHECK(r.status == RequestStatus::Cancelled);
  CHECK(r.error == "the request was cancelled");
  CHECK(engine.model("tiny_cnn")->queued == 1);
  // Three more make a batch of four: the cancelled one is not in it.
  for (int i = 0; i < 3; ++i) REQUIRE(engine.infer("tiny_cnn", input, served.callback()) == 0);
  for (const ClassifyResult& s : served.wait(4)) {
    CHECK(s.status == RequestStatus::Ok);
    CHECK(s.batch_size == 4);
  }
  const std::string metrics = engine.metrics_text();
  CHECK(metrics.find("servelab_request_failures_total{model=\"tiny_cnn\",reason=\"cancelled\"} 1\n") !=
        std::string::npos);
}

TEST_CASE("engine: cancelling an answered or unknown request changes nothing", "[runtime][cancel]") {
  Engine engine(options(1));
  engine.register_model(tiny_spec("tiny_cnn"));
  std::vector<float> input(3 * 32 * 32, 0.5f);
  Collector c;
  RequestId id = 0;
  REQUIRE(engine.infer("tiny_cnn", input, c.callback(), {}, &id) == 0);
  REQUIRE(c.wait(1)[0].status == RequestStatus::Ok);
  engine.cancel(id);
  engine.cancel(id + 1000);
  REQUIRE(engine.infer("tiny_cnn", input, c.callback()) == 0);
  CHECK(c.wait(2)[1].status == RequestStatus::Ok);
  CHECK(engine.metrics_text().find("reason=\"cancelled\"} 0\n") != std::string::npos);
}
