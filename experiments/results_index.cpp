#include "experiments/results_index.h"

#include <limits>

#include <sqlite3.h>

#include <stdexcept>

namespace servelab::experiments {
namespace {

// Summary metrics stored as columns: (column, JSON pointer into summary.json).
const std::vector<std::pair<const char*, const char*>> kMetrics = {
    {"requests", "/requests"}, {"completed", "/completed"}, {"failed", "/failed"},
    {"throughput_rps", "/throughput_rps"},
    {"latency_mean_ms", "/latency_ms/mean"}, {"latency_p50_ms", "/latency_ms/p50"},
    {"latency_p80_ms", "/latency_ms/p80"}, {"latency_p90_ms", "/latency_ms/p90"},
    {"latency_p99_ms", "/latency_ms/p99"}, {"latency_p999_ms", "/latency_ms/p999"},
    {"latency_max_ms", "/latency_ms/max"}, {"slo_attainment", "/slo_attainment"},
    {"overdue", "/overdue"}, {"loads", "/loads"}, {"evictions", "/evictions"},
    {"hits", "/hits"}, {"misses", "/misses"}, {"mean_batch_size", "/mean_batch_size"},
    {"speed_factor", "/speed_factor"}, {"cost_scale", "/cost_scale"},
    {"accuracy", "/accuracy"},  // runs with model groups only; NULL otherwise
    {"backup_extra_load", "/backups/extra_load"},  // runs with backups only
    {"backup_wasted_s", "/backups/wasted_seconds"}};

// RAII prepared statement.
struct Stmt {
  Stmt(sqlite3* db, const std::string& sql) : db(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("results.db: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s); }
  void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.c_str(), -1, SQLITE_TRANSIENT); }
  void real(int i, double v) { sqlite3_bind_double(s, i, v); }
  void integer(int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
  void null(int i) { sqlite3_bind_null(s, i); }
  void run() {
    if (sqlite3_step(s) != SQLITE_DONE)
      throw std::runtime_error(std::string("results.db: ") + sqlite3_errmsg(db));
  }
  sqlite3* db;
  sqlite3_stmt* s = nullptr;
};

// Binds a YAML scalar as a number when it reads as one, else as text.
void bind_value(Stmt& st, int i, const YAML::Node& v) {
  std::string text = node_text(v);
  try {
    size_t used = 0;
    double d = std::stod(text, &used);
    if (used == text.size()) return st.real(i, d);
  } catch (const std::exception&) {
  }
  st.text(i, text);
}

nlohmann::json yaml_to_json(const YAML::Node& v) {
  if (!v.IsScalar()) return node_text(v);
  const std::string& s = v.Scalar();
  try {
    size_t used = 0;
    long long n = std::stoll(s, &used);
    if (used == s.size()) return n;
    double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

}  // namespace

std::vector<std::string> summary_metric_names() {
  std::vector<std::string> names;
  for (const auto& [col, ptr] : kMetrics) names.push_back(col);
  return names;
}

double summary_metric(const nlohmann::json& summary, const std::string& name) {
  for (const auto& [col, ptr] : kMetrics) {
    if (name != col) continue;
    const nlohmann::json::json_pointer at(ptr);
    if (summary.contains(at) && summary.at(at).is_number()) return summary.at(at).get<double>();
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string ResultsIndex::column_name(const std::string& path) {
  std::string c = path;
  for (char& ch : c)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return c;
}

ResultsIndex::ResultsIndex(const std::string& path, const std::vector<SweepAxis>& axes) {
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open " + path + ": " + msg);
  }
  exec("DROP VIEW IF EXISTS results; DROP TABLE IF EXISTS summaries; DROP TABLE IF EXISTS runs;"
       "DROP TABLE IF EXISTS points;");
  std::string points = "CREATE TABLE points (point_id INTEGER PRIMARY KEY, label TEXT, params TEXT";
  for (const auto& a : axes) {
    axis_columns_.push_back(column_name(a.path));
    points += ", \"" + axis_columns_.back() + "\"";
  }
  exec(points + ")");
  exec("CREATE TABLE runs (run_id INTEGER PRIMARY KEY, point_id INTEGER REFERENCES points, "
       "mode TEXT, repetition INTEGER, seed INTEGER, dir TEXT, status TEXT, error TEXT, "
       "wall_s REAL, started_at TEXT DEFAULT CURRENT_TIMESTAMP, "
       "UNIQUE (point_id, mode, repetition))");  // a run of the plan is indexed once
  std::string summaries = "CREATE TABLE summaries (run_id INTEGER PRIMARY KEY REFERENCES runs";
  for (const auto& [col, ptr] : kMetrics) summaries += std::string(", ") + col + " REAL";
  exec(summaries + ", summary TEXT)");
  exec("CREATE VIEW results AS SELECT * FROM runs JOIN points USING (point_id) "
       "LEFT JOIN summaries USING (run_id)");
}

ResultsIndex::~ResultsIndex() { sqlite3_close(db_); }

void ResultsIndex::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("results.db: " + msg);
  }
}

void ResultsIndex::add_point(const SweepPoint& point) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [path, v] : point.values) params[path] = yaml_to_json(v);
  std::string sql = "INSERT INTO points VALUES (?, ?, ?";
  for (size_t i = 0; i < axis_columns_.size(); ++i) sql += ", ?";
  Stmt st(db_, sql + ")");
  st.integer(1, point.index);
  st.text(2, point.label);
  st.text(3, params.dump());
  for (size_t i = 0; i < point.values.size() && i < axis_columns_.size(); ++i)
    bind_value(st, static_cast<int>(4 + i), point.values[i].second);
  st.run();
}

int64_t ResultsIndex::add_run(const RunRow& run, const nlohmann::json& summary) {
  Stmt st(db_, "INSERT INTO runs (point_id, mode, repetition, seed, dir, status, error, wall_s) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  st.integer(1, run.point_id);
  st.text(2, run.mode);
  st.integer(3, run.repetition);
  st.integer(4, static_cast<int64_t>(run.seed));
  st.text(5, run.dir);
  st.text(6, run.status);
  if (run.error.empty()) st.null(7); else st.text(7, run.error);
  st.real(8, run.wall_s);
  st.run();
  int64_t id = sqlite3_last_insert_rowid(db_);
  if (run.status != "ok") return id;
  std::string sql = "INSERT INTO summaries VALUES (?";
  for (size_t i = 0; i <= kMetrics.size(); ++i) sql += ", ?";
  Stmt s(db_, sql + ")");
  s.integer(1, id);
  int i = 2;
  for (const auto& [col, ptr] : kMetrics) {
    auto p = nlohmann::json::json_pointer(ptr);
    if (summary.contains(p) && summary.at(p).is_number()) s.real(i, summary.at(p).get<double>());
    else s.null(i);
    ++i;
  }
  s.text(i, summary.dump());
  s.run();
  return id;
}

}  // namespace servelab::experiments
