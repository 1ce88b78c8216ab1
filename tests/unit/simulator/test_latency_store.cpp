// results/latency_store.h: latencies in memory up to a budget, then in a temporary file;
// SummaryBuilder's numbers do not depend on where they were kept.
#include <catch2/catch.hpp>

#include <random>

#include "results/latency_store.h"
#include "results/records.h"

using namespace servelab;
using namespace servelab::results;

namespace {

std::vector<double> read_all(const ValueChunks& values) {
  std::vector<double> out;
  values.for_each([&](std::span<const double> c) { out.insert(out.end(), c.begin(), c.end()); });
  return out;
}

}  // namespace

TEST_CASE("latency stores keep every value in order, in memory or spilled", "[results]") {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 100);
  SECTION("within the budget nothing reaches the disk") {
    LatencySpill spill(100000);
    LatencyStore store(&spill);
    std::vector<double> want;
    for (int i = 0; i < 50000; ++i) want.push_back(u(rng)), store.add(want.back());
    CHECK(spill.spilled() == 0);
    CHECK(store.contiguous().size() == want.size());
    CHECK(read_all(store) == want);
  }
  SECTION("past the budget, stores move to the file and memory stays within it") {
    const size_t budget = 20000;
    LatencySpill spill(budget);
    std::vector<LatencyStore> stores;
    for (int k = 0; k < 3; ++k) stores.emplace_back(&spill);
    std::vector<std::vector<double>> want(3);
    for (int i = 0; i < 400000; ++i) {
      const int k = i % 7 == 0 ? 2 : i % 2;  // uneven stores
      want[k].push_back(u(rng));
      stores[k].add(want[k].back());
      // Memory (capacity) held by the stores: the budget, plus at most a chunk per store.
      REQUIRE(spill.held() <= budget + 3 * LatencyStore::kChunk);
    }
    CHECK(spill.spilled() >= 400000 - 3 * LatencyStore::kChunk);  // all but a chunk a store
    for (int k = 0; k < 3; ++k) {
      CHECK(stores[k].size() == want[k].size());
      CHECK(stores[k].contiguous().empty());  // spilled: read in chunks
      CHECK(read_all(stores[k]) == want[k]);
    }
  }
  SECTION("a spill directory that cannot be written is named in the error") {
    LatencySpill spill(10, "/nonexistent-servelab-dir");
    LatencyStore store(&spill);
    auto fill = [&] {
      for (int i = 0; i < 100000; ++i) store.add(1.0);
    };
    CHECK_THROWS_WITH(fill(), Catch::Contains("/nonexistent-servelab-dir"));
  }
}

TEST_CASE("a summary is the same whether its latencies stayed in memory or were spilled",
          "[results]") {
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> expo(40.0);
  std::uniform_int_distribution<uint32_t> model(0, 3);  // 3: a model the run does not name
  const std::vector<std::string> names = {"a", "b", "c"};
  SummaryBuilder in_memory(names, 0.05, 1.0);
  // 3,000 values in memory, plus at most a chunk (65,536) for each of the four stores: the
  // ~294,000 latencies cannot all stay, so the spilled summary reads some from the file.
  SummaryBuilder spilled(names, 0.05, 1.0, 3000);
  double t = 0;
  for (uint64_t id = 0; id < 300000; ++id) {
    t += expo(rng);
    RequestRecord r;
    r.id = id;
    r.model = model(rng);
    r.arrival = t;
    r.dispatch = r.start = t + expo(rng);
    r.finish = r.start + 0.02 + expo(rng);
    r.batch_size = 1;
    r.status = id % 50 == 0 ? RequestStatus::Timeout : RequestStatus::Ok;
    in_memory.add(r);
    spilled.add(r);
  }
  RunRecords counters;
  const nlohmann::json a = in_memory.summary(counters), b = spilled.summary(counters);
  CHECK(a.dump() == b.dump());  // every number, bit for bit
  CHECK(a["per_model"]["b"]["latency_ms"]["p99"].get<double>() > 0);
}
