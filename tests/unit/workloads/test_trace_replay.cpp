// Trace replay of the real Azure LLM inference traces, against gaps computed by hand from the
// files' first rows, plus numeric-seconds traces, sorting and limits.
#include <catch2/catch.hpp>

#include "tests/unit/workloads/test_helpers.h"

using namespace servelab::workloads;
using namespace servelab::workloads::test;

namespace {

WorkloadSpec trace_spec(const std::string& file, uint64_t requests, double time_scale = 1) {
  WorkloadSpec s;
  s.num_models = 2;
  s.requests = requests;
  s.arrival.type = "trace";
  s.arrival.trace_file = file;
  s.arrival.time_scale = time_scale;
  return s;
}

}  // namespace

TEST_CASE("azure code trace: first gaps match the file", "[workloads][trace]") {
  // azure-llm-2023-code.csv rows 1-4:
  //   2023-11-16 18:17:03.9799600 / 18:17:04.0319600 / 18:17:04.0781490 / 18:17:04.1206440
  const double t1 = 0.0520000, t2 = t1 + 0.0461890, t3 = t2 + 0.0424950;
  const std::string file = traces_dir() + "/azure-llm-2023-code.csv";
  const Workload w = generate(trace_spec(file, 4));
  REQUIRE(w.send_times.size() == 4);
  CHECK(w.send_times[0] == 0);
  CHECK(w.send_times[1] == Approx(t1).margin(1e-9));
  CHECK(w.send_times[2] == Approx(t2).margin(1e-9));
  CHECK(w.send_times[3] == Approx(t3).margin(1e-9));

  const Workload half = generate(trace_spec(file, 4, 0.5));
  for (size_t i = 0; i < 4; ++i) CHECK(half.send_times[i] == Approx(w.send_times[i] / 2));
}

TEST_CASE("azure conversation trace: whole file, gaps and duration cut", "[workloads][trace]") {
  const std::string file = traces_dir() + "/azure-llm-2023-conv.csv";
  // 18:15:46.6805900 -> 18:15:50.9951690 -> 18:15:51.2224670 -> 18:15:51.3910170
  const Workload all = generate(trace_spec(file, 0));
  CHECK(all.send_times.size() == 19366);  // every data row (the last has no newline)
  CHECK(all.models.size() == all.send_times.size());
  CHECK(all.send_times[1] == Approx(4.3145790).margin(1e-9));
  CHECK(all.send_times[2] - all.send_times[1] == Approx(0.2272980).margin(1e-9));
  CHECK(all.send_times[3] - all.send_times[2] == Approx(0.1685500).margin(1e-9));
  // Last row 19:14:08.4025270 is 58 min 21.7219370 s after the first.
  CHECK(all.send_times.back() == Approx(3501.7219370).margin(1e-6));

  auto cut = trace_spec(file, 0, 10.0);
  cut.duration = 100;  // scaled seconds: keeps rows whose original offset is under 10 s
  const Workload first = generate(cut);
  REQUIRE(!first.send_times.empty());
  CHECK(first.send_times.back() < 100);
  size_t expected = 0;
  while (all.send_times[expected] * 10 < 100) ++expected;
  CHECK(first.send_times.size() == expected);
}

TEST_CASE("numeric-second traces are sorted stably and made relative", "[workloads][trace]") {
  const std::string path = temp_file("seconds.csv", "t,model\r\n5.5,a\r\n5.0,b\r\n\r\n7.25,c\r\n");
  const Workload w = generate(trace_spec(path, 0));
  CHECK(w.send_times == std::vector<double>{0.0, 0.5, 2.25});

  const std::string cal = temp_file("unsorted.csv",
                                    "TIMESTAMP\n2023-11-16 23:59:59.5\n2023-11-17T00:00:01Z\n"
                                    "2023-11-16 23:59:58.25\n");
  const Workload c = generate(trace_spec(cal, 0));
  REQUIRE(c.send_times.size() == 3);
  CHECK(c.send_times[1] == Approx(1.25));  // across midnight
  CHECK(c.send_times[2] == Approx(2.75));
}

TEST_CASE("bad traces are reported with file and line", "[workloads][trace]") {
  CHECK_THROWS_WITH(generate(trace_spec("/nonexistent/trace.csv", 0)),
                    Catch::Contains("/nonexistent/trace.csv") && Catch::Contains("cannot open"));
  const std::string bad = temp_file("bad.csv", "TIMESTAMP\n2023-11-16 10:00:00\nyesterday\n");
  CHECK_THROWS_WITH(generate(trace_spec(bad, 0)),
                    Catch::Contains("line 3") && Catch::Contains("yesterday"));
  const std::string empty = temp_file("empty.csv", "TIMESTAMP\n");
  CHECK_THROWS_WITH(generate(trace_spec(empty, 0)), Catch::Contains("no rows"));
  CHECK_THROWS_WITH(generate(trace_spec(bad, 0, 0)), Catch::Contains("time_scale"));
}

TEST_CASE("a bad trace field is shown escaped and cut, never ending the message",
          "[workloads][trace]") {
  using Catch::Contains;
  const std::string nul = temp_file("nul.csv", std::string("TIMESTAMP\n1\nab\0cd\n", 18));
  CHECK_THROWS_WITH(generate(trace_spec(nul, 0)),
                    Contains("line 3") && Contains("'ab\\x00cd'") && Contains("neither a timestamp"));
  const std::string huge = temp_file("huge.csv", "TIMESTAMP\n1\n" + std::string(100000, 'z') + "\n");
  try {
    generate(trace_spec(huge, 0));
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.size() < 1000);
    CHECK_THAT(what, Contains("(100000 bytes)") && Contains("neither a timestamp"));
  }
  // A send time the clock cannot resolve stops the replay.
  const std::string ok = temp_file("ok.csv", "TIMESTAMP\n0\n1\n2\n");
  CHECK_THROWS_WITH(generate(trace_spec(ok, 0, 1e12)), Contains("a send time passes"));
}
