// results/: percentiles (numpy's linear method, by hand), summaries and requests.csv.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "results/latency_store.h"
#include "results/order_select.h"
#include "results/percentiles.h"
#include "results/records.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::results;

TEST_CASE("percentile interpolates linearly between closest ranks", "[results]") {
  std::vector<double> v = {4, 1, 3, 2};  // unsorted on purpose
  CHECK(percentile(v, 0) == 1);
  CHECK(percentile(v, 50) == Approx(2.5));
  CHECK(percentile(v, 80) == Approx(3.4));   // rank 0.8*3 = 2.4
  CHECK(percentile(v, 99) == Approx(3.97));  // rank 2.97
  CHECK(percentile(v, 100) == 4);
  CHECK(percentile({7}, 90) == 7);
  CHECK(std::isnan(percentile({}, 50)));
}

namespace {

// numpy's linear percentile over a full sort, written out here as the reference.
double sorted_percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double rank = p / 100.0 * double(v.size() - 1);
  const size_t lo = size_t(std::floor(rank)), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - double(lo));
}

}  // namespace

TEST_CASE("percentiles_of selects exactly what a full sort gives", "[results]") {
  const std::vector<double> ps = {99.9, 0, 50, 80, 90, 99, 100, 37.5};  // any order
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> expo(1.0);
  std::lognormal_distribution<double> heavy(0.0, 3.0);
  std::uniform_int_distribution<int> few(0, 5);
  auto check = [&](const std::vector<double>& v, const char* what) {
    INFO(what << ", n = " << v.size());
    std::vector<double> work = v;
    const std::vector<double> got = percentiles_of(work, ps);
    REQUIRE(got.size() == ps.size());
    for (size_t i = 0; i < ps.size(); ++i) {
      INFO("p" << ps[i]);
      CHECK(got[i] == sorted_percentile(v, ps[i]));  // bit for bit, not approximately
    }
  };
  for (size_t n : {1ul, 2ul, 4095ul, 4096ul, 200000ul}) {
    std::vector<double> latency, wide, ties, signs, idle_half, zeros, cluster, plateaus;
    for (size_t i = 0; i < n; ++i) {
      // M/D/1: half never wait, and the first value is not the tied one.
      idle_half.push_back(i % 2 ? 20.0 : 20.0 + 1e-9 + 10.0 * expo(rng));
      zeros.push_back(i % 3 == 0 ? -0.0 : i % 3 == 1 ? 0.0 : expo(rng));  // signed zeros tie
      // Most values within a few ulps of 20 (sums of floating times), a few far above: the
      // cluster fills one bucket of the whole range and is bucketed again, level by level.
      cluster.push_back(i % 4 ? 20.0 * (1 + 1e-15 * double(i % 7)) : 20.0 + 1e3 * expo(rng));
      plateaus.push_back(i == 0 ? 1.0 : i % 2 ? 5.0 : 7.0);  // two huge ties, not the least
      latency.push_back(20.0 + 10.0 * expo(rng));  // a queue's sojourn times, in ms
      wide.push_back(heavy(rng));                   // many orders of magnitude
      ties.push_back(double(few(rng)));             // six values, each tied many times
      signs.push_back(expo(rng) - 1.0);             // negative, zero-crossing
    }
    check(latency, "latency");
    check(wide, "heavy tail");
    check(ties, "ties");
    check(signs, "signs");
    check(idle_half, "half tied at the service time");
    check(zeros, "signed zeros");
    check(cluster, "a narrow cluster in a wide range");
    check(plateaus, "ties above the least value");
    check(std::vector<double>(n, 3.25), "constant");
  }
  std::vector<double> none;
  CHECK(std::isnan(percentiles_of(none, ps)[0]));
}

TEST_CASE("the sample's brackets and the buckets each select what a full sort gives",
          "[results]") {
  const size_t n = 300000;
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> expo(1.0);
  std::lognormal_distribution<double> heavy(0.0, 3.0);
  std::uniform_int_distribution<int> few(0, 5);
  struct Case {
    const char* what;
    bool smooth;  // the sample's brackets must hold every rank
    std::vector<double> values;
  };
  std::vector<Case> cases = {{"latency", true, {}},    {"heavy tail", true, {}},
                             {"idle half", true, {}},  {"cluster", true, {}},
                             {"six ties", false, {}},  {"signed zeros", false, {}},
                             {"constant", false, {}}};
  for (size_t i = 0; i < n; ++i) {
    cases[0].values.push_back(20.0 + 10.0 * expo(rng));
    cases[1].values.push_back(heavy(rng));
    cases[2].values.push_back(i % 2 ? 20.0 : 20.0 + 1e-9 + 10.0 * expo(rng));
    cases[3].values.push_back(i % 4 ? 20.0 * (1 + 1e-15 * double(i % 7)) : 20.0 + expo(rng));
    cases[4].values.push_back(double(few(rng)));
    cases[5].values.push_back(i % 3 == 0 ? -0.0 : i % 3 == 1 ? 0.0 : expo(rng));
    cases[6].values.push_back(3.25);
  }
  // p50, p80, p90, p99, p99.9 and the max's ranks, as percentiles_of asks for them.
  const std::vector<size_t> ranks = {0,      149999, 150000, 239999, 240000, 269999,
                                     270000, 296999, 297000, 299699, 299700, n - 1};
  for (const Case& c : cases) {
    std::vector<double> sorted = c.values;
    std::sort(sorted.begin(), sorted.end());
    // In memory, and read back in chunks from a spill file (a budget of 5,000 in memory).
    LatencySpill spill(5000);
    LatencyStore spilled(&spill);
    for (double v : c.values) spilled.add(v);
    REQUIRE(spill.spilled() > 0);
    const VectorChunks in_memory(c.values);
    for (const ValueChunks* values : {static_cast<const ValueChunks*>(&in_memory),
                                      static_cast<const ValueChunks*>(&spilled)}) {
      INFO(c.what << (values == &spilled ? ", spilled" : ", in memory"));
      const std::vector<double> by_buckets = servelab::results::detail::bucket_select(*values, ranks);
      const std::optional<std::vector<double>> by_sample = servelab::results::detail::sample_select(*values, ranks);
      if (c.smooth) REQUIRE(by_sample.has_value());
      for (size_t i = 0; i < ranks.size(); ++i) {
        INFO("rank " << ranks[i]);
        CHECK(by_buckets[i] == sorted[ranks[i]]);
        if (by_sample) CHECK((*by_sample)[i] == sorted[ranks[i]]);
      }
    }
  }
  SECTION("more brackets than it searches at once: no answer, and the buckets' is used") {
    std::vector<size_t> spread_ranks;  // 17 ranks 6% apart: their brackets do not merge
    std::vector<double> ps;
    for (size_t p = 2; p < 100; p += 6) spread_ranks.push_back(p * (n - 1) / 100), ps.push_back(p);
    CHECK_FALSE(servelab::results::detail::sample_select(VectorChunks(cases[0].values), spread_ranks).has_value());
    std::vector<double> work = cases[0].values;
    const std::vector<double> got = percentiles_of(work, ps);
    for (size_t i = 0; i < ps.size(); ++i) CHECK(got[i] == sorted_percentile(cases[0].values, ps[i]));
  }
}

namespace {

RunRecords sample_run() {
  RunRecords run;
  run.model_names = {"a", "b"};
  // latencies: a: 10 ms, 30 ms; b: 20 ms, and one timeout.
  run.requests.push_back({0, 0, 0.000, 0.001, 0.001, 0.010, 1, false, RequestStatus::Ok});
  run.requests.push_back({1, 1, 0.010, 0.011, 0.012, 0.030, 2, true, RequestStatus::Ok});
  run.requests.push_back({2, 0, 0.020, 0.021, 0.021, 0.050, 2, false, RequestStatus::Ok});
  run.requests.push_back({3, 1, 0.030, NAN, NAN, 0.130, 0, false, RequestStatus::Timeout});
  run.slo = 0.025;
  run.loads = 3;
  run.hits = 2;
  run.misses = 1;
  run.mean_batch_size = 1.5;
  return run;
}

}  // namespace

TEST_CASE("summarize counts, latency over ok requests, SLO and per model", "[results]") {
  nlohmann::json s = summarize(sample_run());
  CHECK(s["requests"] == 4);
  CHECK(s["completed"] == 3);
  CHECK(s["failed"] == 1);
  CHECK(s["failed_by_status"]["timeout"] == 1);
  CHECK(s["latency_ms"]["mean"].get<double>() == Approx(20));
  CHECK(s["latency_ms"]["p50"].get<double>() == Approx(20));
  CHECK(s["latency_ms"]["p90"].get<double>() == Approx(28));  // rank 1.8 between 20 and 30
  CHECK(s["latency_ms"]["max"].get<double>() == Approx(30));
  CHECK(s["throughput_rps"].get<double>() == Approx(3 / 0.05));  // first arrival..last ok finish
  CHECK(s["slo_attainment"].get<double>() == Approx(0.5));       // 10 and 20 ms of 4
  CHECK(s["overdue"] == 2);
  CHECK(s["loads"] == 3);
  CHECK(s["per_model"]["a"]["completed"] == 2);
  CHECK(s["per_model"]["a"]["latency_ms"]["mean"].get<double>() == Approx(20));
  CHECK(s["per_model"]["b"]["failed"] == 1);
  CHECK(s["per_model"]["b"]["latency_ms"]["p99"].get<double>() == Approx(20));

  RunRecords empty;
  nlohmann::json e = summarize(empty);
  CHECK(e["latency_ms"]["mean"].is_null());
  CHECK(e.dump().find("NaN") == std::string::npos);
}

TEST_CASE("a warm-up leaves the requests sent before it out of every summary field", "[results]") {
  RunRecords run = sample_run();
  run.warmup = 0.010;  // request 0 (sent at 0) is warm-up; request 1 (sent at 0.010) counts
  nlohmann::json s = summarize(run);
  CHECK(s["warmup_s"].get<double>() == Approx(0.010));
  CHECK(s["warmup_requests"] == 1);
  CHECK(s["requests"] == 3);
  CHECK(s["completed"] == 2);                                       // 20 and 30 ms
  CHECK(s["latency_ms"]["mean"].get<double>() == Approx(25));
  // Throughput stays the whole run's: 3 completions from the first send to the last finish.
  CHECK(s["throughput_rps"].get<double>() == Approx(3 / 0.05));
  CHECK(s["slo_attainment"].get<double>() == Approx(1.0 / 3));      // 20 ms of 3
  CHECK(s["per_model"]["a"]["completed"] == 1);
  CHECK(s["per_model"]["a"]["latency_ms"]["mean"].get<double>() == Approx(30));
  CHECK(s["loads"] == 3);  // engine counters cover the whole run
  // Without a warm-up the summary has no warm-up fields.
  CHECK_FALSE(summarize(sample_run()).contains("warmup_s"));
}

TEST_CASE("requests.csv round-trips and rejects foreign files", "[results]") {
  servelab::testutil::TempDir tmp_dir("servelab-results-test");
  const std::filesystem::path dir = tmp_dir.path();
  std::string path = (dir / "requests.csv").string();
  RunRecords run = sample_run();
  run.requests[0].queued = 0.0005;  // the others' are unknown (NaN)
  write_requests_csv(path, run);
  std::ifstream in(path);
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  CHECK(header ==
        "id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,status");
  CHECK(first == "0,a,0.000000000,0.000500000,0.001000000,0.001000000,0.010000000,1,0,ok");

  RunRecords back = read_requests_csv(path);
  REQUIRE(back.requests.size() == 4);
  CHECK(back.model_names == run.model_names);
  CHECK(back.requests[1].waited_for_load);
  CHECK(back.requests[3].status == RequestStatus::Timeout);
  CHECK(std::isnan(back.requests[3].dispatch));
  CHECK(back.requests[2].finish == Approx(0.05));
  CHECK(back.requests[0].queued == Approx(0.0005));
  CHECK(std::isnan(back.requests[1].queued));

  // A file written before the queued column existed still reads, with queued unknown.
  std::ofstream(path) << "id,model,arrival,dispatch,start,finish,batch_size,waited_for_load,"
                         "status\n7,a,0.5,0.6,0.6,0.9,2,0,ok\n";
  RunRecords old = read_requests_csv(path);
  REQUIRE(old.requests.size() == 1);
  CHECK(old.requests[0].id == 7);
  CHECK(old.requests[0].dispatch == Approx(0.6));
  CHECK(old.requests[0].finish == Approx(0.9));
  CHECK(std::isnan(old.requests[0].queued));
  std::ofstream(path) << "id,model,arrival,queued,dispatch,start,finish,batch_size,"
                         "waited_for_load,status\n7,a,0.5,0.6,0.6,0.9,2,0,ok\n";
  CHECK_THROWS_WITH(read_requests_csv(path), Catch::Matchers::Contains("expected 10 fields"));

  std::ofstream(path) << "a,b\n1,2\n";
  CHECK_THROWS_WITH(read_requests_csv(path), Catch::Matchers::Contains("not a requests.csv"));
  CHECK_THROWS(write_requests_csv("/nonexistent-dir/x.csv", run));
}

TEST_CASE("requests.csv carries an accuracy column only when some accuracy is known",
          "[results]") {
  servelab::testutil::TempDir tmp_dir("servelab-results-accuracy");
  const std::string path = (tmp_dir.path() / "requests.csv").string();
  RunRecords run = sample_run();
  run.requests[0].accuracy = 0.815;  // a group's voters
  run.requests[1].accuracy = 1.0;    // a scored answer; the others unknown
  write_requests_csv(path, run);
  std::ifstream in(path);
  std::string header, first, last;
  std::getline(in, header);
  std::getline(in, first);
  for (std::string line; std::getline(in, line);) last = line;
  CHECK(header == "id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,"
                  "status,accuracy");
  CHECK(first == "0,a,0.000000000,,0.001000000,0.001000000,0.010000000,1,0,ok,0.815");
  CHECK(last == "3,b,0.030000000,,,,0.130000000,0,0,timeout,");
  RunRecords back = read_requests_csv(path);
  REQUIRE(back.requests.size() == 4);
  CHECK(back.requests[0].accuracy == 0.815);  // the shortest digits read back exactly
  CHECK(back.requests[1].accuracy == 1.0);
  CHECK(std::isnan(back.requests[2].accuracy));

  // Without a known accuracy the file keeps the ten columns.
  write_requests_csv(path, sample_run());
  std::ifstream plain(path);
  std::getline(plain, header);
  CHECK(header == "id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,status");

  // The streamed writer writes the same bytes when asked for the column.
  const std::string streamed = (tmp_dir.path() / "streamed.csv").string();
  {
    RequestsCsvStream rows(streamed, run.model_names, true);
    for (const RequestRecord& r : run.requests) rows.add(r);
    rows.close();
  }
  write_requests_csv(path, run);
  auto bytes = [](const std::string& p) {
    std::stringstream ss;
    ss << std::ifstream(p).rdbuf();
    return ss.str();
  };
  CHECK(bytes(streamed) == bytes(path));

  std::ofstream(path) << header << ",accuracy\n7,a,0.5,,0.6,0.6,0.9,2,0,ok,high\n";
  CHECK_THROWS_WITH(read_requests_csv(path), Catch::Matchers::Contains("bad accuracy 'high'"));
}

TEST_CASE("requests.csv writes times with printf's %.9f digits and ties to even",
          "[results]") {
  // 1/1024 s is 976562.5 ns exactly: a tie, which rounds to the even 976562; 3/1024 s to
  // 2929688. Then random times of every magnitude a run can have.
  RunRecords run;
  run.model_names = {"a"};
  std::vector<double> times = {0, 1.0 / 1024, 3.0 / 1024, 0.1, 1e-10, 5e-10, 123456.789,
                               4503599.627370496, 999999999.999999};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i)
    times.push_back(std::ldexp(double(rng() >> 11), -53) * std::pow(10.0, double(rng() % 12) - 3));
  for (double t : times) {
    RequestRecord r;
    r.id = run.requests.size();
    r.arrival = r.queued = r.dispatch = r.start = r.finish = t;
    run.requests.push_back(r);
  }
  servelab::testutil::TempDir tmp_dir1("servelab-csv-digits");
  const std::filesystem::path dir = tmp_dir1.path();
  write_requests_csv((dir / "r.csv").string(), run);
  std::ifstream in(dir / "r.csv");
  std::string line;
  std::getline(in, line);
  for (double t : times) {
    REQUIRE(std::getline(in, line));
    char want[400];
    std::snprintf(want, sizeof want, "%.9f", t);
    std::string field = line.substr(line.find(',', line.find(',') + 1) + 1);
    field = field.substr(0, field.find(','));
    INFO("t = " << t);
    REQUIRE(field == want);
  }
}
