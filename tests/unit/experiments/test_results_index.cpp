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

namespace {

// The schema results.db had before the accuracy column (ServeLab before issue 15).
const char* kOldSchema =
    "CREATE TABLE points (point_id INTEGER PRIMARY KEY, label TEXT, params TEXT, "
    "\"groups_g_subset\");"
    "CREATE TABLE runs (run_id INTEGER PRIMARY KEY, point_id INTEGER REFERENCES points, "
    "mode TEXT, repetition INTEGER, seed INTEGER, dir TEXT, status TEXT, error TEXT, "
    "wall_s REAL, started_at TEXT DEFAULT CURRENT_TIMESTAMP);"
    "CREATE TABLE summaries (run_id INTEGER PRIMARY KEY REFERENCES runs, requests REAL, "
    "completed REAL, failed REAL, throughput_rps REAL, latency_mean_ms REAL, "
    "latency_p50_ms REAL, latency_p80_ms REAL, latency_p90_ms REAL, latency_p99_ms REAL, "
    "latency_p999_ms REAL, latency_max_ms REAL, slo_attainment REAL, overdue REAL, loads REAL, "
    "evictions REAL, hits REAL, misses REAL, mean_batch_size REAL, speed_factor REAL, "
    "cost_scale REAL, summary TEXT);"
    "CREATE VIEW results AS SELECT * FROM runs JOIN points USING (point_id) "
    "LEFT JOIN summaries USING (run_id);"
    "INSERT INTO points VALUES (0, 'old', '{}', 'all');"
    "INSERT INTO runs (point_id, mode, status) VALUES (0, 'sim', 'ok');"
    "INSERT INTO summaries (run_id, throughput_rps) VALUES (1, 5);";

}  // namespace

TEST_CASE("results.db of the older schema gets the accuracy column of runs with groups") {
  servelab::testutil::TempDir tmp_dir("servelab-test-index-old");
  std::string path = (tmp_dir.path() / "results.db").string();
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, kOldSchema, nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);

  auto spec = parse_experiment(YAML::Load("sweep: {groups.g.subset: [all, one]}"), "t.yaml");
  {
    ResultsIndex index(path, spec.sweep);
    for (const auto& p : expand_sweep(spec)) index.add_point(p);
    // A run with model groups: its summary carries accuracy.
    index.add_run({0, "sim", 0, 1, "runs/p000-sim-r0", "ok", "", 0.1},
                  {{"throughput_rps", 10.0}, {"accuracy", 0.875}, {"accuracy_requests", 8}});
    // A run without groups: no accuracy in its summary.
    index.add_run({1, "sim", 0, 1, "runs/p001-sim-r0", "ok", "", 0.1},
                  {{"throughput_rps", 20.0}});
  }
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "SELECT groups_g_subset, throughput_rps, accuracy FROM results "
                             "ORDER BY run_id",
                             -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) == "all");
  CHECK(sqlite3_column_double(st, 1) == 10.0);
  CHECK(sqlite3_column_double(st, 2) == 0.875);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) == "one");
  CHECK(sqlite3_column_double(st, 1) == 20.0);
  CHECK(sqlite3_column_type(st, 2) == SQLITE_NULL);  // no groups: no accuracy, not 0
  CHECK(sqlite3_step(st) == SQLITE_DONE);             // the old run went with the old tables
  sqlite3_finalize(st);
  sqlite3_close(db);
}
