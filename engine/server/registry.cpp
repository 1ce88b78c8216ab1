#include "engine/server/registry.h"

#include <sqlite3.h>

#include <mutex>
#include <string>
#include <nlohmann/json.hpp>

namespace servelab::server {
namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS models (
  name            TEXT PRIMARY KEY,
  file            TEXT NOT NULL,
  checksum        TEXT NOT NULL,
  param_bytes     INTEGER NOT NULL,
  workspace_bytes INTEGER NOT NULL,
  size_bytes      INTEGER NOT NULL,
  preprocess      TEXT NOT NULL,
  labels          TEXT NOT NULL,
  registered_at   INTEGER NOT NULL,
  contexts        INTEGER NOT NULL DEFAULT 0,
  slo_ms          REAL
);
CREATE TABLE IF NOT EXISTS groups (
  name        TEXT PRIMARY KEY,
  definition  TEXT NOT NULL,
  created_at  INTEGER NOT NULL
);)sql";

// Columns added after the first schema: a registry written before them gets them, with
// their defaults, when it is opened.
const char* kAddedColumns[][2] = {{"contexts", "INTEGER NOT NULL DEFAULT 0"},
                                  {"slo_ms", "REAL"},
                                  {"logical_bytes", "INTEGER NOT NULL DEFAULT 0"},
                                  {"unique_bytes", "INTEGER NOT NULL DEFAULT 0"},
                                  {"shared_bytes", "INTEGER NOT NULL DEFAULT 0"}};

const char* kColumns =
    "name, file, checksum, param_bytes, workspace_bytes, size_bytes, preprocess, labels, "
    "registered_at, contexts, slo_ms, logical_bytes, unique_bytes, shared_bytes";

// Binds the whole string, embedded NULs included: "a.pt\0" must never match row "a.pt".
void bind_text(sqlite3_stmt* s, int index, const std::string& text) {
  sqlite3_bind_text(s, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

}  // namespace

// Owns one prepared statement; reset and cleared after each use. (Named, not file-local:
// Registry::Impl holds them, and a unity build compiles this file inside another.)
struct RegistryStatement {
  sqlite3_stmt* s = nullptr;
  ~RegistryStatement() { sqlite3_finalize(s); }
};

struct Registry::Impl {
  sqlite3* db = nullptr;
  mutable std::mutex mu;
  RegistryStatement insert, update, update_weights, remove, find, all;
  RegistryStatement insert_group, remove_group, all_groups;

  [[noreturn]] void fail(const std::string& what) const {
    throw RegistryError("registry: " + what + ": " + sqlite3_errmsg(db));
  }
  void prepare(RegistryStatement& st, const std::string& sql) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) fail("prepare");
  }
  // Runs `st` to completion after binding; resets it whatever happens.
  struct Reset {
    sqlite3_stmt* s;
    ~Reset() {
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
    }
  };
  // Runs a DELETE keyed by one name (`what` names it in errors); true when a row went.
  bool delete_named(RegistryStatement& st, const std::string& name, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    Reset reset{st.s};
    bind_text(st.s, 1, name);
    if (sqlite3_step(st.s) != SQLITE_DONE) fail(what);
    return sqlite3_changes(db) > 0;
  }
  static std::string text(sqlite3_stmt* s, int col) {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
    return p ? std::string(p, size_t(sqlite3_column_bytes(s, col))) : std::string();
  }
  static RegistryRow row_of(sqlite3_stmt* s) {
    RegistryRow r;
    r.name = text(s, 0);
    r.file = text(s, 1);
    r.checksum = text(s, 2);
    r.param_bytes = uint64_t(sqlite3_column_int64(s, 3));
    r.workspace_bytes = uint64_t(sqlite3_column_int64(s, 4));
    r.size_bytes = uint64_t(sqlite3_column_int64(s, 5));
    r.preprocess_json = text(s, 6);
    auto labels = nlohmann::json::parse(text(s, 7), nullptr, false);
    if (labels.is_array()) {
      for (const auto& l : labels) {
        if (l.is_string()) r.labels.push_back(l.get<std::string>());
      }
    }
    r.registered_at = sqlite3_column_int64(s, 8);
    r.contexts = uint32_t(sqlite3_column_int64(s, 9));
    if (sqlite3_column_type(s, 10) != SQLITE_NULL) r.slo_ms = sqlite3_column_double(s, 10);
    r.weights.logical = uint64_t(sqlite3_column_int64(s, 11));
    r.weights.unique = uint64_t(sqlite3_column_int64(s, 12));
    r.weights.shared = uint64_t(sqlite3_column_int64(s, 13));
    return r;
  }
  bool has_column(const std::string& name) {
    RegistryStatement st;
    prepare(st, "SELECT 1 FROM pragma_table_info('models') WHERE name = ?1");
    bind_text(st.s, 1, name);
    return sqlite3_step(st.s) == SQLITE_ROW;
  }
  void add_missing_columns() {
    for (const auto& [name, type] : kAddedColumns) {
      if (has_column(name)) continue;
      const std::string sql = std::string("ALTER TABLE models ADD COLUMN ") + name + " " + type;
      if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
        fail(std::string("add column ") + name);
    }
  }
};

Registry::Registry(const std::string& db_path) : impl_(std::make_unique<Impl>()) {
  auto& im = *impl_;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(db_path.c_str(), &im.db, flags, nullptr) != SQLITE_OK) {
    std::string msg = im.db ? sqlite3_errmsg(im.db) : "out of memory";
    sqlite3_close(im.db);
    im.db = nullptr;
    throw RegistryError("registry: cannot open '" + db_path + "': " + msg);
  }
  sqlite3_busy_timeout(im.db, 5000);
  char* err = nullptr;
  if (sqlite3_exec(im.db, kSchema, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    sqlite3_close(im.db);
    im.db = nullptr;
    throw RegistryError("registry: cannot create schema in '" + db_path + "': " + msg);
  }
  im.add_missing_columns();
  std::string cols = kColumns;
  im.prepare(im.insert, "INSERT OR IGNORE INTO models (" + cols +
                            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  im.prepare(im.update,
             "UPDATE models SET param_bytes = ?2, workspace_bytes = ?3, size_bytes = ?4 "
             "WHERE name = ?1");
  im.prepare(im.update_weights,
             "UPDATE models SET logical_bytes = ?2, unique_bytes = ?3, shared_bytes = ?4 "
             "WHERE name = ?1");
  im.prepare(im.remove, "DELETE FROM models WHERE name = ?1");
  im.prepare(im.find, "SELECT " + cols + " FROM models WHERE name = ?1");
  im.prepare(im.all, "SELECT " + cols + " FROM models ORDER BY registered_at, name");
  im.prepare(im.insert_group,
             "INSERT OR IGNORE INTO groups (name, definition, created_at) VALUES (?1, ?2, ?3)");
  im.prepare(im.remove_group, "DELETE FROM groups WHERE name = ?1");
  im.prepare(im.all_groups,
             "SELECT name, definition, created_at FROM groups ORDER BY created_at, name");
}

Registry::~Registry() {
  if (!impl_->db) return;
  // Statements must be finalized before the connection closes.
  for (RegistryStatement* st :
       {&impl_->insert, &impl_->update, &impl_->update_weights, &impl_->remove, &impl_->find,
        &impl_->all, &impl_->insert_group, &impl_->remove_group, &impl_->all_groups}) {
    sqlite3_finalize(st->s);
    st->s = nullptr;
  }
  sqlite3_close(impl_->db);
}

bool Registry::insert(const RegistryRow& r) {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lock(im.mu);
  sqlite3_stmt* s = im.insert.s;
  Impl::Reset reset{s};
  nlohmann::json labels = r.labels;
  std::string labels_text = labels.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  bind_text(s, 1, r.name);
  bind_text(s, 2, r.file);
  bind_text(s, 3, r.checksum);
  sqlite3_bind_int64(s, 4, int64_t(r.param_bytes));
  sqlite3_bind_int64(s, 5, int64_t(r.workspace_bytes));
  sqlite3_bind_int64(s, 6, int64_t(r.size_bytes));
  bind_text(s, 7, r.preprocess_json);
  bind_text(s, 8, labels_text);
  sqlite3_bind_int64(s, 9, r.registered_at);
  sqlite3_bind_int64(s, 10, int64_t(r.contexts));
  if (r.slo_ms) sqlite3_bind_double(s, 11, *r.slo_ms);
  else sqlite3_bind_null(s, 11);
  sqlite3_bind_int64(s, 12, int64_t(r.weights.logical));
  sqlite3_bind_int64(s, 13, int64_t(r.weights.unique));
  sqlite3_bind_int64(s, 14, int64_t(r.weights.shared));
  if (sqlite3_step(s) != SQLITE_DONE) im.fail("insert '" + r.name + "'");
  return sqlite3_changes(im.db) > 0;
}

void Registry::update_sizes(const std::string& name, uint64_t param_bytes,
                            uint64_t workspace_bytes, uint64_t size_bytes) {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lock(im.mu);
  sqlite3_stmt* s = im.update.s;
  Impl::Reset reset{s};
  bind_text(s, 1, name);
  sqlite3_bind_int64(s, 2, int64_t(param_bytes));
  sqlite3_bind_int64(s, 3, int64_t(workspace_bytes));
  sqlite3_bind_int64(s, 4, int64_t(size_bytes));
  if (sqlite3_step(s) != SQLITE_DONE) im.fail("update '" + name + "'");
}

void Registry::update_weights(const std::string& name, const store::WeightBytes& w) {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lock(im.mu);
  sqlite3_stmt* s = im.update_weights.s;
  Impl::Reset reset{s};
  bind_text(s, 1, name);
  sqlite3_bind_int64(s, 2, int64_t(w.logical));
  sqlite3_bind_int64(s, 3, int64_t(w.unique));
  sqlite3_bind_int64(s, 4, int64_t(w.shared));
  if (sqlite3_step(s) != SQLITE_DONE) im.fail("update weights of '" + name + "'");
}

bool Registry::remove(const std::string& name) {
  return impl_->delete_named(impl_->remove, name, "delete '" + name + "'");
}

std::optional<RegistryRow> Registry::find(const std::string& name) const {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lock(im.mu);
  sqlite3_stmt* s = im.find.s;
  Impl::Reset reset{s};
  bind_text(s, 1, name);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) return Impl::row_of(s);
  if (rc != SQLITE_DONE) im.fail("find '" + name + "'");
  return std::nullopt;
}

std::vector<RegistryRow> Registry::all() const {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lock(im.mu);
  sqlite3_stmt* s = im.all.s;
  Impl::Reset reset{s};
  std::vector<RegistryRow> rows;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) rows.push_back(Impl::row_of(s));
  if (rc != SQLITE_DONE) im.fail("list");
  return rows;
}

bool Registry::insert_group(const GroupRow& r) {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lock(im.mu);
  sqlite3_stmt* s = im.insert_group.s;
  Impl::Reset reset{s};
  bind_text(s, 1, r.name);
  bind_text(s, 2, r.definition_json);
  sqlite3_bind_int64(s, 3, r.created_at);
  if (sqlite3_step(s) != SQLITE_DONE) im.fail("insert group '" + r.name + "'");
  return sqlite3_changes(im.db) > 0;
}

bool Registry::remove_group(const std::string& name) {
  return impl_->delete_named(impl_->remove_group, name, "delete group '" + name + "'");
}

std::vector<GroupRow> Registry::all_groups() const {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lock(im.mu);
  sqlite3_stmt* s = im.all_groups.s;
  Impl::Reset reset{s};
  std::vector<GroupRow> rows;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    rows.push_back({Impl::text(s, 0), Impl::text(s, 1), sqlite3_column_int64(s, 2)});
  }
  if (rc != SQLITE_DONE) im.fail("list groups");
  return rows;
}

}  // namespace servelab::server
