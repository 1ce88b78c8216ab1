// `servelab run --merge` (what a Slurm array's merge job runs): each planned run's folder is
// merged as the run it records in run.json, or the merge is refused before results.db changes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "experiments/experiment.h"
#include "experiments/results_index.h"
#include "experiments/runner.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::experiments;
namespace fs = std::filesystem;

namespace {

// A body that answers every run with one request of `latency` seconds.
struct FixedBody : Backend {
  double latency = 0.010;
  results::RunRecords run(const YAML::Node&, uint64_t, const std::string&) override {
    results::RunRecords r;
    r.model_names = {"a"};
    results::RequestRecord q;
    q.finish = q.start = latency;
    q.dispatch = 0;
    r.requests.push_back(q);
    return r;
  }
};

ExperimentSpec two_points() {
  return parse_experiment(YAML::Load("name: m\nmodels: [a]\nrepetitions: 1\n"
                                     "sweep: {engine.workers: [1, 2]}\n"),
                          "m.yaml");
}

// Every task of the plan, then the merge, as `run --slurm` does on its nodes.
void run_tasks(const ExperimentSpec& spec, const fs::path& out, FixedBody& body) {
  for (size_t t = 0; t < 2; ++t) {
    RunOptions o;
    o.out_dir = out.string();
    o.quiet = true;
    o.task = t;
    run_experiment(spec, o, {{"sim", &body}});
  }
}

RunOutcome merge(const ExperimentSpec& spec, const fs::path& out, FixedBody& body) {
  RunOptions o;
  o.out_dir = out.string();
  o.quiet = true;
  o.merge = true;
  return run_experiment(spec, o, {{"sim", &body}});
}

int count_runs(const fs::path& db_path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM runs", -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  const int n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

}  // namespace

TEST_CASE("merge indexes each task's folder once") {
  testutil::TempDir tmp("servelab-merge-ok");
  FixedBody body;
  const auto spec = two_points();
  run_tasks(spec, tmp.path(), body);
  const RunOutcome o = merge(spec, tmp.path(), body);
  CHECK(o.runs == 2);
  CHECK(o.failed == 0);
  CHECK(count_runs(tmp.path() / "results.db") == 2);
}

TEST_CASE("merge refuses a folder whose run.json records another run, naming both folders") {
  testutil::TempDir tmp("servelab-merge-stale");
  FixedBody body;
  const auto spec = two_points();
  run_tasks(spec, tmp.path(), body);
  REQUIRE(merge(spec, tmp.path(), body).runs == 2);
  // Point 1's folder replaced by a copy of point 0's (a stale or copied folder).
  const fs::path runs = tmp.path() / "runs";
  fs::remove_all(runs / "p001-sim-r0");
  fs::copy(runs / "p000-sim-r0", runs / "p001-sim-r0");
  CHECK_THROWS_WITH(merge(spec, tmp.path(), body),
                    Catch::Contains("runs/p001-sim-r0/run.json") &&
                        Catch::Contains("runs/p000-sim-r0") && Catch::Contains("point 1"));
  CHECK(count_runs(tmp.path() / "results.db") == 2);  // the earlier merge is still there
}

TEST_CASE("merge refuses a run.json of another seed") {
  testutil::TempDir tmp("servelab-merge-seed");
  FixedBody body;
  const auto spec = two_points();
  run_tasks(spec, tmp.path(), body);
  const fs::path row = tmp.path() / "runs" / "p000-sim-r0" / "run.json";
  nlohmann::json j;
  std::ifstream(row) >> j;
  j["seed"] = 99;
  std::ofstream(row) << j.dump();
  CHECK_THROWS_WITH(merge(spec, tmp.path(), body), Catch::Contains("seed 99"));
  CHECK_FALSE(fs::exists(tmp.path() / "results.db"));  // nothing was written
}

TEST_CASE("results.db holds one row per point, mode and repetition") {
  testutil::TempDir tmp("servelab-merge-unique");
  ResultsIndex index((tmp.path() / "results.db").string(), {});
  index.add_point(SweepPoint{});
  const RunRow row{0, "sim", 0, 1, "runs/p000-sim-r0", "failed", "e", 0};
  index.add_run(row, {});
  CHECK_THROWS_WITH(index.add_run(row, {}), Catch::Contains("UNIQUE"));
  RunRow other = row;
  other.repetition = 1;
  CHECK_NOTHROW(index.add_run(other, {}));
}
