// The model registry: one SQLite row per registered model (and one per model group), in the model store directory, so
// that a restarted server registers the same models again (Rafiqi 3.1 keeps them in BoltDB).
// Uses prepared statements. Thread-safety: every method may be called from any thread (one
// connection guarded by a mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/store/weight_bytes.h"

namespace servelab::server {

// Now in seconds since the Unix epoch: a row's registration or creation time.
inline int64_t unix_seconds_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct RegistryRow {
  std::string name;
  std::string file;      // path of the TorchScript file in the store
  std::string checksum;  // SHA-256 hex of the file
  uint64_t param_bytes = 0;
  uint64_t workspace_bytes = 0;
  uint64_t size_bytes = 0;
  std::string preprocess_json;      // the preprocessing spec, as JSON text
  std::vector<std::string> labels;
  int64_t registered_at = 0;        // seconds since the Unix epoch
  uint32_t contexts = 0;            // as registered (0: the engine default)
  std::optional<double> slo_ms;     // as registered
  // With a weight store: the model's logical, unique and shared weight bytes, as of the last
  // registration or removal of any model (unique bytes change as others come and go).
  store::WeightBytes weights;
};

// One model group (ensemble): its definition as JSON text (group_definition_json), so the
// registry needs no knowledge of what a group holds.
struct GroupRow {
  std::string name;
  std::string definition_json;
  int64_t created_at = 0;  // seconds since the Unix epoch
};

// A registry operation failed (I/O, corrupt database); message is user-facing.
struct RegistryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Registry {
 public:
  // Opens (creating if needed) the database at `db_path`. Throws RegistryError.
  explicit Registry(const std::string& db_path);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Inserts a row; returns false if the name exists already. Throws RegistryError.
  bool insert(const RegistryRow& row);
  // Updates the measured sizes of an existing row (after re-registration at start-up).
  void update_sizes(const std::string& name, uint64_t param_bytes, uint64_t workspace_bytes,
                    uint64_t size_bytes);
  // Sets a row's weight bytes (RegistryRow::weights).
  void update_weights(const std::string& name, const store::WeightBytes& w);
  // Deletes a row; returns false if it did not exist.
  bool remove(const std::string& name);
  std::optional<RegistryRow> find(const std::string& name) const;
  std::vector<RegistryRow> all() const;  // ordered by registration time, then name

  // Groups live in their own table beside the models, so that a restart defines them again.
  // insert_group returns false if the name exists already; remove_group false if it did not.
  bool insert_group(const GroupRow& row);
  bool remove_group(const std::string& name);
  std::vector<GroupRow> all_groups() const;  // ordered by creation time, then name

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::server
