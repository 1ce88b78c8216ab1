// Serving behaviour of the engine under load with real tiny models: batching, eviction with
// real reloads, timeouts, queue bounds, failing batches, metrics.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "runtime_test_util.h"
#include "tests/support/thread_count.h"

using namespace servelab;
using namespace servelab::runtime;
using namespace servelab::runtime::test;

TEST_CASE("concurrent submits form batches larger than one", "[runtime]") {
  Engine engine(options(1, "max-delay", params({{"max_delay", "0.02"}})));
  engine.register_model(tiny_spec("tiny_cnn"));
  std::string jpg = read_file(models_dir() + "/images/gradient.jpg");
  Collector c;
  std::vector<std::thread> clients;
  std::atomic<int> refused{0};  // Catch2 assertions are not thread-safe: count, check below
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&] {
      for (int i = 0; i < 8; ++i) refused += engine.classify("tiny_cnn", jpg, 3, c.callback()) != 0;
    });
  for (auto& t : clients) t.join();
  REQUIRE(refused == 0);
  auto results = c.wait(64);
  uint32_t largest = 0;
  for (const ClassifyResult& r : results) {
    REQUIRE(r.status == RequestStatus::Ok);
    CHECK(r.top.size() == 3);
    CHECK(r.top[0].first == results[0].top[0].first);  // same image, same answer
    largest = std::max(largest, r.batch_size);
  }
  CHECK(largest > 1);
  ModelStatus st = *engine.model("tiny_cnn");
  CHECK(st.counters.completed == 64);
  CHECK(st.counters.batches < 64);
  std::string m = engine.metrics_text();
  CHECK(m.find("servelab_batch_size_bucket{model=\"tiny_cnn\",le=\"1\"}") != std::string::npos);
  CHECK(m.find("servelab_requests_total{model=\"tiny_cnn\"} 64") != std::string::npos);
  CHECK(m.find("servelab_compute_seconds_count{model=\"tiny_cnn\"} 64") != std::string::npos);
}

TEST_CASE("three models with room for two: evictions and real reloads, all requests done",
          "[runtime]") {
  EngineOptions o = options(2, "max-delay", params({{"max_delay", "0.002"}}));
  o.control.budgets[static_cast<int>(Tier::Host)].models = 2;
  std::mutex spans_mu;
  std::vector<LoadSpan> spans;  // every load, as the loader thread reports it
  o.on_load = [&](const LoadSpan& s) {
    std::lock_guard lock(spans_mu);
    spans.push_back(s);
  };
  Engine engine(o);
  const char* names[] = {"m0", "m1", "m2"};
  for (const char* n : names) engine.register_model(tiny_spec("tiny_cnn", n));
  // The third registration found no room: it stays on disk until its first batch.
  int resident = 0;
  for (const ModelStatus& s : engine.models()) resident += s.resident_host;
  CHECK(resident == 2);

  std::string png = read_file(models_dir() + "/images/disk.png");
  Collector c;
  std::atomic<bool> done{false};
  std::atomic<int> over_budget{0};
  std::thread watcher([&] {  // residency never exceeds the budget
    while (!done) {
      int n = 0;
      for (const ModelStatus& s : engine.models()) n += s.resident_host;
      if (n > 2) ++over_budget;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const int rounds = 30;
  for (int i = 0; i < rounds; ++i) {
    // Two requests per model in rotation, so batches of a model overlap loads of the next.
    for (int k = 0; k < 2; ++k)
      REQUIRE(engine.classify(names[i % 3], png, 1, c.callback()) == 0);
    if (i % 3 == 2) c.wait(static_cast<size_t>(2 * (i + 1)));
  }
  auto results = c.wait(2 * rounds);
  done = true;
  watcher.join();
  int waited = 0;
  for (const ClassifyResult& r : results) {
    INFO(r.error);
    REQUIRE(r.status == RequestStatus::Ok);  // an evicted in-use model would fail its batch
    CHECK(r.top[0].first == results[0].top[0].first);  // same weights, same image
    if (r.load_s > 0) ++waited;
  }
  CHECK(over_budget == 0);
  CHECK(waited > 0);
  uint64_t loads = 0, evictions = 0, misses = 0;
  for (const ModelStatus& s : engine.models()) {
    loads += s.counters.loads;
    evictions += s.counters.evictions;
    misses += s.counters.misses;
  }
  CHECK(loads >= 5);
  CHECK(evictions >= 5);
  CHECK(misses >= 5);
  {
    std::lock_guard lock(spans_mu);
    CHECK(spans.size() == loads);  // on_load saw each load the counters count
    for (size_t i = 0; i < spans.size(); ++i) {
      CHECK(spans[i].ok);
      CHECK((spans[i].from == Tier::Disk && spans[i].to == Tier::Host));
      CHECK(spans[i].end >= spans[i].start);
      if (i > 0) CHECK(spans[i].start >= spans[i - 1].end);  // one load at a time, in order
    }
  }
  std::string m = engine.metrics_text();
  CHECK(m.find("servelab_resident_models{tier=\"host\"} 2") != std::string::npos);
  // The same contract checks as the simulator's, on the real loads, evictions and batches.
  CHECK(m.find("servelab_contract_violations_total 0\n") != std::string::npos);
}

TEST_CASE("a request still queued at its timeout completes with Timeout", "[runtime]") {
  EngineOptions o = options(1, "fixed", params({{"size", "100"}}));  // never fills
  o.control.request_timeout = 0.05;
  Engine engine(o);
  engine.register_model(tiny_spec("tiny_cnn"));
  Collector c;
  std::string png = read_file(models_dir() + "/images/disk.png");
  for (int i = 0; i < 3; ++i) REQUIRE(engine.classify("tiny_cnn", png, 1, c.callback()) == 0);
  for (const ClassifyResult& r : c.wait(3, 10)) {
    CHECK(r.status == RequestStatus::Timeout);
    CHECK(r.queue_s >= 0.04);
    CHECK(r.batch_size == 0);
  }
  CHECK(engine.model("tiny_cnn")->counters.timeouts == 3);
}

TEST_CASE("a full queue rejects - the engine fails what is left when it stops", "[runtime]") {
  Collector c;
  {
    EngineOptions o = options(1, "fixed", params({{"size", "100"}}));
    o.control.queue_bound = 2;
    Engine engine(o);
    engine.register_model(tiny_spec("noop"));
    for (int i = 0; i < 5; ++i)
      REQUIRE(engine.submit_raw("noop", std::vector<float>(3 * 32 * 32), 1, c.callback()) == 0);
    auto results = c.wait(3);  // the three over the bound
    for (const ClassifyResult& r : results) CHECK(r.status == RequestStatus::Rejected);
    CHECK(engine.model("noop")->queued == 2);
    CHECK(engine.metrics_text().find("reason=\"rejected\"} 3") != std::string::npos);
  }
  auto results = c.wait(5);
  REQUIRE(results.size() == 5);  // each callback exactly once
  CHECK(results[3].status == RequestStatus::Failed);
  CHECK(results[4].status == RequestStatus::Failed);
}

TEST_CASE("a batch whose forward fails fails all its requests, others still succeed",
          "[runtime]") {
  // fails_large_batch raises for batches of more than 4 (it passes the registration check).
  // max_wait 0.5 s: the 8 submits below must land in one batch even on a loaded machine.
  Engine engine(options(1, "fixed", params({{"size", "8"}, {"max_wait", "0.5"}})));
  engine.register_model(tiny_spec("fails_large_batch"));
  std::vector<float> input(3 * 32 * 32, 0.5f);
  Collector big;
  for (int i = 0; i < 8; ++i)
    REQUIRE(engine.submit_raw("fails_large_batch", input, 1, big.callback()) == 0);
  for (const ClassifyResult& r : big.wait(8)) {
    CHECK(r.status == RequestStatus::Failed);
    CHECK(r.error.find("batch larger than 4") != std::string::npos);
  }
  Collector small;
  REQUIRE(engine.submit_raw("fails_large_batch", input, 1, small.callback()) == 0);
  ClassifyResult r = small.wait(1)[0];  // dispatched alone after max_wait
  CHECK(r.status == RequestStatus::Ok);
  CHECK(engine.model("fails_large_batch")->counters.failed == 8);
}

// OpenMP keeps its thread count per thread: a worker that LibTorch did not start would run
// oneDNN's convolutions and OpenBLAS's products on a team of every core (a thread more per
// worker on this 2-core machine) whatever `intra_op_threads` says.
TEST_CASE("with one intra-op thread, forwards start no threads beside the engine's",
          "[runtime]") {
  Engine engine(options(2));
  ModelSpec spec = tiny_spec("tiny_variant_0");
  // Convolutions over a 224 x 224 image: work enough for oneDNN to split it over a team.
  spec.preprocess.input_width = spec.preprocess.input_height = 224;
  const size_t before = testutil::thread_count();
  engine.register_model(spec);  // its check forwards run on this thread
  std::string jpg = read_file(models_dir() + "/images/gradient.jpg");
  Collector c;
  for (int i = 0; i < 6; ++i)
    REQUIRE(engine.classify("tiny_variant_0", jpg, 1, c.callback()) == 0);
  for (const ClassifyResult& r : c.wait(6)) REQUIRE(r.status == RequestStatus::Ok);
  CHECK(testutil::thread_count() == before);
}
