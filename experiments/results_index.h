// results.db: the SQLite index of an experiment's results folder, so runs can be queried with
// sqlite3. Tables:
//   points(point_id, label, params JSON, one column per sweep path with '.' -> '_')
//   runs(run_id, point_id, mode, repetition, seed, dir, status, error, wall_s, started_at),
//        (point_id, mode, repetition) unique: add_run throws on a second row for a run
//   summaries(run_id, requests, completed, failed, throughput_rps, latency_{mean,p50,p80,p90,
//             p99,p999,max}_ms, slo_attainment, overdue, loads, evictions, hits, misses,
//             mean_batch_size, speed_factor (real runs, with --match-speed), cost_scale
//             (their sim runs), accuracy (mean expected accuracy of a group's voting
//             members: runs with model groups only, NULL otherwise), summary JSON)
//   view results: runs joined with points and summaries.
// Not thread-safe: one runner thread owns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/experiment.h"

struct sqlite3;

namespace servelab::experiments {

struct RunRow {
  uint32_t point_id = 0;
  std::string mode;
  uint32_t repetition = 0;
  uint64_t seed = 0;
  std::string dir;        // relative to the results folder
  std::string status;     // ok | failed
  std::string error;
  double wall_s = 0;
};

// The summaries table's metric columns, and one's value in a summary.json (NaN when absent).
std::vector<std::string> summary_metric_names();
double summary_metric(const nlohmann::json& summary, const std::string& name);

class ResultsIndex {
 public:
  // Opens (creating) DIR/results.db. Recreates the tables (a results folder holds one run of
  // one experiment), so a results.db of an older schema is replaced, not migrated. Throws
  // std::runtime_error with the SQLite message.
  ResultsIndex(const std::string& path, const std::vector<SweepAxis>& axes);
  ~ResultsIndex();
  ResultsIndex(const ResultsIndex&) = delete;
  ResultsIndex& operator=(const ResultsIndex&) = delete;

  void add_point(const SweepPoint& point);
  // Returns the run id; `summary` is summary.json (ignored unless status is ok).
  int64_t add_run(const RunRow& run, const nlohmann::json& summary);

  // Column name of a sweep path: "workload.arrival.concurrency" -> "workload_arrival_concurrency".
  static std::string column_name(const std::string& path);

 private:
  void exec(const std::string& sql);
  sqlite3* db_ = nullptr;
  std::vector<std::string> axis_columns_;
};

}  // namespace servelab::experiments
