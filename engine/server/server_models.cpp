// Model administration: register (store, check, registry row), delete, list. The restore at
// start-up is in server_restore.cpp.
#include <algorithm>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/server/json_text.h"
#include "engine/server/model_root.h"
#include "engine/server/register_request.h"
#include "engine/server/server_impl.h"

namespace servelab::server {
using nlohmann::json;

namespace {

json counters_json(const ModelCounters& c) {
  return {{"arrivals", c.arrivals}, {"completed", c.completed}, {"timeouts", c.timeouts},
          {"rejected", c.rejected}, {"failed", c.failed},       {"batches", c.batches},
          {"hits", c.hits},         {"misses", c.misses},       {"loads", c.loads},
          {"evictions", c.evictions}};
}

// A 409 for a name in use that says how to go on.
std::string already_registered(const std::string& name) {
  return "model '" + name + "' is already registered (DELETE /models/" + name +
         " first to replace it, or register under another name)";
}

// Labels from `offset`, at most `page` of them, and where the next page starts (null after
// the last): an answer's size does not grow with the model's label list.
void add_label_page(json& j, const std::vector<std::string>& labels, size_t offset, size_t page) {
  const size_t from = std::min(offset, labels.size());
  const size_t to = from + std::min(std::max<size_t>(1, page), labels.size() - from);
  j["labels_offset"] = from;
  j["labels"] = std::vector<std::string>(labels.begin() + long(from), labels.begin() + long(to));
  j["labels_next"] = to < labels.size() ? json(to) : json();
}

}  // namespace

json HttpServer::Impl::model_json(const std::string& name, bool full, size_t labels_offset) {
  auto row = registry.find(name);
  auto st = engine->model(name);
  if (!row && !st) throw HttpError(404, "unknown model '" + name + "'");
  json j = {{"name", name}};
  if (row) {
    j["file"] = row->file;
    j["checksum"] = row->checksum;
    j["registered_at"] = row->registered_at;
    j["param_bytes"] = row->param_bytes;
    j["workspace_bytes"] = row->workspace_bytes;
    j["size_bytes"] = row->size_bytes;
    j["num_labels"] = row->labels.size();
    if (full) add_label_page(j, row->labels, labels_offset, options.labels_per_answer);
    j["preprocess"] = json::parse(row->preprocess_json, nullptr, false);
  }
  if (st) {
    j["state"] = st->loading ? "loading" : "ready";
    j["param_bytes"] = st->param_bytes;  // measured now: authoritative
    j["workspace_bytes"] = st->workspace_bytes;
    j["size_bytes"] = st->size_bytes;
    // Shared weights (a weight store): what the model's blobs take, what only it uses (what
    // removing it frees) and what it shares with other models; per tier, whether it is
    // resident there and what evicting it would free there now (its unique bytes among that
    // tier's residents: the eviction policy's view).
    j["weights"] = {{"logical_bytes", st->weights.logical},
                    {"unique_bytes", st->weights.unique},
                    {"shared_bytes", st->weights.shared},
                    {"tiers", {{"host", st->resident_host}, {"device", st->resident_device}}},
                    {"evict_frees_bytes",
                     {{"host", st->host_frees_bytes}, {"device", st->device_frees_bytes}}}};
    j["contexts"] = st->contexts;
    // How registration checked it: its own forward passes, or the weight store's record of
    // the same file's check at the same input size.
    j["check"] = st->check_recorded ? "recorded" : "forward";
    j["slo_ms"] = st->slo ? json(*st->slo * 1e3) : json();
    j["resident"] = {{"host", st->resident_host}, {"device", st->resident_device}};
    j["loading"] = st->loading;
    j["queued"] = st->queued;
    j["ref_count"] = st->ref_count;
    j["counters"] = counters_json(st->counters);
  } else {
    std::lock_guard<std::mutex> lock(unavailable_mu);
    auto it = unavailable.find(name);
    j["state"] = "unavailable";
    j["error"] = it == unavailable.end() ? "not loaded" : it->second;
  }
  return j;
}

void HttpServer::Impl::set_unavailable(const std::string& name, const std::string& why) {
  std::lock_guard<std::mutex> lock(unavailable_mu);
  unavailable[name] = why;
}

void HttpServer::Impl::clear_unavailable(const std::string& name) {
  std::lock_guard<std::mutex> lock(unavailable_mu);
  unavailable.erase(name);
}

std::string HttpServer::Impl::server_side_path(const std::string& requested) const {
  if (options.model_root.empty()) {
    throw HttpError(403, "registration from a server-side path is disabled: upload the model "
                         "with multipart/form-data, or start the server with --model-root DIR");
  }
  return resolve_model_path(options.model_root, store.dir(), requested);
}

void HttpServer::Impl::check_name(const std::string& name) {
  if (std::string why = model_name_problem(name); !why.empty()) {
    throw HttpError(400, "invalid model name: " + why);
  }
}

HttpResponse HttpServer::Impl::register_model(HttpRequest& req) {
  RegisterRequest r = parse_register_request(req);
  if (std::string why = model_name_problem(r.name); !why.empty()) {
    throw HttpError(400, "invalid model name '" + echo_value(r.name) + "': " + why);
  }
  std::lock_guard<std::mutex> lock(admin_mu);
  if (registry.find(r.name) || engine->model(r.name)) {
    throw HttpError(409, already_registered(r.name));
  }
  if (find_group(r.name)) throw HttpError(409, "'" + r.name + "' is the name of a model group");
  StoredFile file;
  try {
    file = r.model_bytes ? store.put(r.name, *r.model_bytes)
                         : store.copy_from(r.name, server_side_path(r.source_path),
                                           source_digests ? &*source_digests : nullptr,
                                           shared_files ? &*shared_files : nullptr);
  } catch (const StoreError& e) {
    throw HttpError(400, e.what());
  }
  // Undone if anything below fails: the engine's model (once registered), then the file.
  struct Undo {
    HttpServer::Impl& server;
    const std::string& name;
    bool registered = false, armed = true;
    ~Undo() {
      if (!armed) return;
      try {
        if (registered) server.engine->unregister_model(name);
      } catch (...) {  // the registration's own error is the one answered
      }
      server.store.remove(name);  // does not throw: a file it cannot remove stays
    }
  } undo{*this, r.name};
  // The file's write-back runs on a thread of its own while the model loads and is checked;
  // it is waited for (and its failure refuses the registration) before the row is written,
  // and on a failure before the file is removed (the future is destroyed before `undo`).
  std::future<void> durable =
      std::async(std::launch::async, [this, file] { store.make_durable(file); });
  runtime::ModelSpec spec;
  spec.name = r.name;
  spec.file = file.path;
  spec.digest = file.sha256;
  spec.labels = r.labels;
  spec.preprocess = r.preprocess;
  spec.contexts = r.contexts;
  if (r.slo_ms) spec.slo = *r.slo_ms / 1e3;
  runtime::ModelStatus st;
  try {
    st = engine->register_model(spec);  // loads and checks before we answer (Rafiqi 3.1)
  } catch (const runtime::ModelError& e) {
    throw HttpError(e.http_status, e.what());
  }
  undo.registered = true;
  durable.get();
  RegistryRow row;
  row.name = r.name;
  row.file = file.path;
  row.checksum = file.sha256;
  row.param_bytes = st.param_bytes;
  row.workspace_bytes = st.workspace_bytes;
  row.size_bytes = st.size_bytes;
  row.preprocess_json = json_text(preprocess_to_json(r.preprocess));
  row.labels = r.labels;
  row.registered_at = unix_seconds_now();
  row.contexts = r.contexts;
  row.slo_ms = r.slo_ms;
  row.weights = st.weights;
  if (!registry.insert(row)) throw HttpError(409, already_registered(r.name));
  undo.armed = false;
  if (shared_files) shared_files->offer(file.sha256, file.path);  // durable: waited for above
  refresh_registry_weights();
  clear_unavailable(r.name);
  {
    std::lock_guard<std::mutex> deleted_lock(deleted_mu);
    deleted.erase(r.name);
  }
  log("registered '" + r.name + "' (" + std::to_string(file.bytes) + " bytes, sha256 " +
      file.sha256.substr(0, 12) + ", size " + std::to_string(st.size_bytes) + " bytes)");
  json j = {{"name", r.name},         {"file", file.path},
            {"checksum", file.sha256}, {"file_bytes", file.bytes},
            {"param_bytes", st.param_bytes}, {"workspace_bytes", st.workspace_bytes},
            {"size_bytes", st.size_bytes},   {"num_labels", r.labels.size()},
            {"contexts", st.contexts},       {"preprocess", preprocess_to_json(r.preprocess)},
            {"slo_ms", r.slo_ms ? json(*r.slo_ms) : json()}};
  return json_response(201, json_text(j));
}

HttpResponse HttpServer::Impl::delete_model(const std::string& name) {
  check_name(name);  // exactly this name, and nothing a C API would read differently
  std::lock_guard<std::mutex> lock(admin_mu);
  if (std::string group = group_with_member(name); !group.empty()) {
    throw HttpError(409, "model '" + name + "' is a member of group '" + group +
                             "': delete the group first (DELETE /groups/" + group + ")");
  }
  // Marked first: requests that fail because the engine dropped the model answer 404 (see
  // classify). The row goes before the engine's model so that listings never show a row
  // without its model; a crash in between leaves an orphan file, quarantined at the next start.
  {
    std::lock_guard<std::mutex> deleted_lock(deleted_mu);
    deleted.insert(name);
  }
  const std::optional<RegistryRow> row = registry.find(name);
  bool in_registry = registry.remove(name);
  bool in_engine = engine->unregister_model(name);
  if (!in_engine && !in_registry) throw HttpError(404, "unknown model '" + name + "'");
  store.remove(name);
  // The shared copy of its file, if this store linked it and no other store does.
  if (shared_files && row) shared_files->release(row->checksum);
  clear_unavailable(name);
  refresh_registry_weights();
  log("deleted '" + name + "'");
  return json_response(200, json_text(json{{"deleted", name}}));
}

void HttpServer::Impl::refresh_registry_weights() {
  // Only rows whose bytes changed are written: a registration changes few of them (those
  // sharing its blobs), and every write is a transaction of its own.
  std::map<std::string, store::WeightBytes> recorded;
  for (const RegistryRow& row : registry.all()) recorded[row.name] = row.weights;
  for (const runtime::ModelStatus& st : engine->models()) {
    if (st.weights.logical == 0) continue;  // no weight store
    auto it = recorded.find(st.name);
    if (it != recorded.end() && it->second.logical == st.weights.logical &&
        it->second.unique == st.weights.unique && it->second.shared == st.weights.shared)
      continue;
    try {
      registry.update_weights(st.name, st.weights);
    } catch (const RegistryError& e) {  // the row stays as it was; the model serves on
      log(std::string("cannot record the weight bytes of '") + st.name + "': " + e.what());
    }
  }
}

bool HttpServer::Impl::removed(const std::string& name) {
  std::lock_guard<std::mutex> lock(deleted_mu);
  return deleted.count(name) > 0;
}

HttpResponse HttpServer::Impl::list_models() {
  json list = json::array();
  std::set<std::string> seen;
  auto add = [&](const std::string& name) {
    try {
      list.push_back(model_json(name, false));
    } catch (const HttpError& e) {
      if (e.status != 404) throw;  // deleted while we listed: leave it out
    }
  };
  for (const auto& row : registry.all()) {
    seen.insert(row.name);
    add(row.name);
  }
  for (const auto& st : engine->models()) {  // registered in the engine by someone else
    if (!seen.count(st.name)) add(st.name);
  }
  return json_response(200, json_text(json{{"models", std::move(list)}}));
}

HttpResponse HttpServer::Impl::get_model(const std::string& name, const HttpRequest& req) {
  check_name(name);
  size_t offset = 0;
  if (auto it = req.query.find("labels_offset"); it != req.query.end()) {
    const std::string& v = it->second;
    const bool digits = !v.empty() && v.size() <= 9 &&
                        v.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
      throw HttpError(400, "labels_offset must be an integer from 0 to 999999999 (got '" +
                               echo_value(v) + "')");
    offset = std::stoul(v);
  }
  return json_response(200, json_text(model_json(name, true, offset)));
}

}  // namespace servelab::server
