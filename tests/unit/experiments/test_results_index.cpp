// results.db: sweep values and summary metrics are queryable columns.
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <filesystem>

#include "experiments/results_index.h"
#include "tests/support/temp_dir.h"

using namespace servelab::experiments;

TEST_CASE("results.db holds sweep values and metrics as columns") {
  servelab::testutil::TempDir tmp_dir("servelab-test-index");
  const std::filesystem::path dir = tmp_dir.path();
  std::string path = (dir / "results.db").string();
  auto spec = parse_experiment(
      YAML::Load("sweep: {workload.arrival.concurrency: [1, 4], policies.batching.name: [none]}"),
      "t.yaml");
  {
    ResultsIndex index(path, spec.sweep);
    for (const auto& p : expand_sweep(spec)) index.add_point(p);
    nlohmann::json s = {{"requests", 10}, {"throughput_rps", 12.5},
                        {"latency_ms", {{"mean", 3.0}, {"p99", 9.0}}}};
    index.add_run({1, "sim", 0, 1, "runs/p001-sim-r0", "ok", "", 0.1}, s);
    index.add_run({0, "real", 0, 1, "runs/p000-real-r0", "failed", "boom", 0.1}, {});
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "SELECT workload_arrival_concurrency, policies_batching_name, "
                             "throughput_rps, latency_p99_ms, status FROM results ORDER BY run_id",
                             -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(sqlite3_column_double(st, 0) == 4);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 1))) == "none");
  CHECK(sqlite3_column_double(st, 2) == 12.5);
  CHECK(sqlite3_column_double(st, 3) == 9.0);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(sqlite3_column_type(st, 2) == SQLITE_NULL);  // a failed run has no summary
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 4))) == "failed");
  sqlite3_finalize(st);
  sqlite3_close(db);
}
