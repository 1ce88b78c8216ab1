// The restore at start-up: store files without a registry row are set aside in quarantine,
// then every registry row is registered again (groups follow, server_groups.cpp).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/server/register_request.h"
#include "engine/server/server_impl.h"
#include "engine/store/digest.h"

namespace servelab::server {
using store::Sha256;
using nlohmann::json;

namespace {

// The model files (*.pt) among `paths`: what a user may have put in the store themselves.
std::vector<std::string> model_files(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths)
    if (std::filesystem::path(p).extension() == ".pt") out.push_back(p);
  return out;
}

}  // namespace

// A file without a row was never acknowledged (a registration cut short) or belongs to a
// deleted model: nothing refers to it, yet it may still be someone's only copy, so it is set
// aside, never deleted. A registry without models beside model files is more likely lost,
// truncated or being restored than truly empty: that start needs the user's word.
void HttpServer::Impl::quarantine_orphans(RestoreReport* report) {
  std::set<std::string> names;
  for (const auto& row : registry.all()) names.insert(row.name);
  const std::vector<std::string> strays = store.stray_files(names);
  if (strays.empty()) return;
  const std::vector<std::string> models = model_files(strays);
  if (names.empty() && !models.empty() && !options.quarantine_orphans) {
    throw std::runtime_error(
        "model store '" + store.dir() + "' holds " + std::to_string(models.size()) +
        " model file(s) (e.g. '" + models.front() + "') but its registry '" + store.db_path() +
        "' has no models: refusing to start, since they may be your own files or the "
        "registry may be lost or being restored. Restore the registry, use another store "
        "directory, or start with --quarantine-orphans to move them to '" + store.dir() +
        "/quarantine/'");
  }
  const std::string dir = store.make_quarantine_dir();
  for (const std::string& path : strays) {
    const std::string to = (std::filesystem::path(dir) / std::filesystem::path(path).filename())
                               .string();
    std::error_code ec;
    std::filesystem::rename(path, to, ec);
    if (ec) {
      log("cannot move orphan file '" + path + "' to quarantine: " + ec.message());
      continue;
    }
    log("moved orphan file '" + path + "' (no registry row) to '" + to + "'");
    report->orphans_quarantined.emplace_back(path, to);
  }
  log("quarantined " + std::to_string(report->orphans_quarantined.size()) +
      " file(s) without a registry row in '" + dir + "'");
}

RestoreReport HttpServer::Impl::restore() {
  RestoreReport report;
  std::lock_guard<std::mutex> lock(admin_mu);
  quarantine_orphans(&report);  // first: a refused start must not have moved anything
  for (const auto& row : registry.all()) {
    auto skip = [&](const std::string& why) {
      log("cannot restore '" + row.name + "' (kept in the registry): " + why);
      set_unavailable(row.name, why);
      report.skipped.emplace_back(row.name, why);
    };
    std::error_code ec;
    if (!std::filesystem::is_regular_file(row.file, ec)) {
      skip("model file '" + row.file + "' is missing");
      continue;
    }
    try {
      if (Sha256::hex_file(row.file) != row.checksum) {
        skip("model file '" + row.file + "' does not match its checksum");
        continue;
      }
      runtime::ModelSpec spec;
      spec.name = row.name;
      spec.file = row.file;
      spec.digest = row.checksum;
      spec.labels = row.labels;
      spec.preprocess = preprocess_from_json(json::parse(row.preprocess_json));
      spec.contexts = row.contexts;
      if (row.slo_ms) spec.slo = *row.slo_ms / 1e3;
      auto st = engine->register_model(spec);
      registry.update_sizes(row.name, st.param_bytes, st.workspace_bytes, st.size_bytes);
      report.restored.push_back(row.name);
    } catch (const std::exception& e) {
      skip(e.what());
    }
  }
  restore_groups(&report);
  report.weight_store = engine->tidy_weight_store();
  if (shared_files) shared_files->prune();  // copies of models no store holds any more
  refresh_registry_weights();
  if (report.weight_store.marks || report.weight_store.blobs)
    log("weight store: released " + std::to_string(report.weight_store.marks) +
        " mark(s) of models this server no longer has and deleted " +
        std::to_string(report.weight_store.blobs) + " blob(s) no model holds");
  if (!report.restored.empty() || !report.skipped.empty()) {
    log("restored " + std::to_string(report.restored.size()) + " model(s) from " +
        store.db_path() + ", skipped " + std::to_string(report.skipped.size()));
  }
  return report;
}

}  // namespace servelab::server
