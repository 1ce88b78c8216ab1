// Streaming outputs: a run whose records go to a sink as they become final (RecordWindow,
// RequestsCsvStream, SummaryBuilder) writes the very bytes of the collected run
// (write_requests_csv and summarize over every record), in settings that finish requests out
// of order, give up on them, lose them, and leave a warm-up out; the window emits in id order
// and stays as small as the span of ids in flight.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "results/records.h"
#include "simulator/record_window.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/simulator/sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Both sinks at once, as `servelab simulate` feeds them.
struct Both : results::RecordSink {
  results::RequestsCsvStream& rows;
  results::SummaryBuilder& summary;
  Both(results::RequestsCsvStream& r, results::SummaryBuilder& s) : rows(r), summary(s) {}
  void add(const results::RequestRecord& r) override {
    rows.add(r);
    summary.add(r);
  }
};

void check_streaming_matches_collected(const SimulationSetup& setup, const workloads::Workload& w) {
  testutil::TempDir dir("servelab-streaming");
  const SimulationResult collected = simulate(setup, w);
  results::write_requests_csv((dir / "collected.csv").string(), collected.records);
  const std::string collected_summary = results::summarize(collected.records).dump();

  std::vector<std::string> names;
  for (const SimModel& m : setup.models) names.push_back(m.name);
  // The deadline column as `servelab simulate` asks for it: with the run's SLO.
  results::RequestsCsvStream rows((dir / "streamed.csv").string(), names, false,
                                  setup.slo.has_value());
  results::SummaryBuilder summary(names, setup.slo, w.warmup);
  Both both(rows, summary);
  const SimulationResult streamed = simulate(setup, w, both);
  rows.close();
  CHECK(streamed.records.requests.empty());
  CHECK(streamed.lost == collected.lost);
  CHECK(streamed.events == collected.events);
  CHECK(file_text(dir / "streamed.csv") == file_text(dir / "collected.csv"));
  CHECK(summary.summary(streamed.records).dump() == collected_summary);
}

}  // namespace

TEST_CASE("streamed rows and summary equal the collected run's", "[simulator][streaming]") {
  SECTION("six models with SLO and timeouts in three workers") {
    check_streaming_matches_collected(test::contract_setup(0.002),
                                      test::poisson(20000, 900, 6, 11));
  }
  SECTION("a warm-up leaves early requests out of the summary") {
    workloads::Workload w = test::poisson(5000, 300, 6, 12);
    w.warmup = 2.0;
    check_streaming_matches_collected(test::contract_setup(0.002), w);
  }
  SECTION("clients that give up and cancel") {
    SimulationSetup s = test::contract_setup(0.002);
    s.client_timeout = 0.03;
    s.cancel_delay = 0.001;
    check_streaming_matches_collected(s, test::poisson(5000, 1500, 6, 13));
  }
  SECTION("requests lost when the run stops early") {
    SimulationSetup s = test::contract_setup(0.002);
    s.max_time = 1.0;
    check_streaming_matches_collected(s, test::poisson(5000, 2000, 6, 14));
  }
  SECTION("four servers behind a router") {
    SimulationSetup s = test::contract_setup(0.002);
    s.cluster.servers = 4;
    s.cluster.router = {"power-of-two", {}};
    check_streaming_matches_collected(s, test::poisson(8000, 3000, 6, 15));
  }
}

namespace {

struct Ids : results::RecordSink {
  std::vector<uint64_t> ids;
  void add(const results::RequestRecord& r) override { ids.push_back(r.id); }
};

}  // namespace

TEST_CASE("the record window emits in id order and holds only ids in flight",
          "[simulator][streaming]") {
  Ids sink;
  RecordWindow window(sink);
  // Two requests in flight at a time, finishing in reverse order: 1 before 0, 3 before 2...
  for (uint64_t i = 0; i < 100000; i += 2) {
    REQUIRE(window.open(0) == i);
    REQUIRE(window.open(0) == i + 1);
    window.at(i).arrival = double(i);
    window.at(i + 1).arrival = double(i);
    window.finalize(i + 1);
    CHECK(sink.ids.size() == i);  // 0 .. i-1 left; i + 1 waits for i
    window.finalize(i);
  }
  REQUIRE(sink.ids.size() == 100000);
  for (uint64_t i = 0; i < sink.ids.size(); ++i) REQUIRE(sink.ids[i] == i);
  CHECK(window.capacity() <= 16);
  CHECK_FALSE(window.holds(99999));  // gone to the sink

  // One straggler holds the window open: it grows to the span it must keep.
  Ids sink2;
  RecordWindow window2(sink2);
  for (uint64_t i = 0; i < 100000; ++i) window2.open(uint32_t(i % 3));
  for (uint64_t i = 1; i < 1000; ++i) window2.finalize(i);
  CHECK(sink2.ids.empty());
  CHECK(window2.capacity() >= 1000);
  CHECK(window2.target(998) == 998 % 3);
  window2.flush_all();  // 0 was never finished: it leaves as failed, then everything else
  REQUIRE(sink2.ids.size() == 100000);
  CHECK(sink2.ids[0] == 0);
  CHECK(sink2.ids[99999] == 99999);
}

TEST_CASE("a held request stays in play after its record is final", "[simulator][streaming]") {
  Ids sink;
  RecordWindow window(sink);
  window.open(1);
  window.open(2);
  window.state(0) = RecordWindow::GivenUp;
  window.hold(0);  // the cancellation
  window.hold(0);  // the server's outcome
  window.finalize(0);
  window.finalize(1);
  CHECK(sink.ids.empty());  // 0 is held, and 1 waits for it
  window.release(0);
  CHECK(sink.ids.empty());
  CHECK(window.holds(0));
  CHECK(window.state(0) == RecordWindow::GivenUp);
  window.release(0);
  CHECK(sink.ids == std::vector<uint64_t>{0, 1});
  CHECK_FALSE(window.holds(0));
}
