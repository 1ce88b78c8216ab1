// The ServeLab HTTP server: the REST API of the engine (Rafiqi section 2.1 and 3).
//   POST   /register          register a model (multipart upload or JSON with a server path)
//   GET    /models            all registered models; GET /models/{name}: one
//   DELETE /models/{name}     unregister and remove its file
//   POST   /classify/{name}   image bytes in the body, ?top_k=N; top-k labels and time split
//                             (a group's name: its members' majority vote, server_groups.cpp)
//   POST   /groups            define a model group; GET /groups, GET|DELETE /groups/{name}
//   DELETE /requests/{id}     cancel the request in flight with that X-Request-Id
//   GET    /health, GET /metrics (Prometheus text: engine metrics plus HTTP counters)
// Every error is JSON {"error": "..."} with its status. The server owns its Engine, the model
// store directory and the SQLite registry in it; start() registers every model of the
// registry again before it accepts connections.
// Thread-safety: construct, start(), stop() and destroy from one owning thread; port() and
// engine() from any thread. Embeddable in-process (the experiment runner does).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/engine.h"
#include "engine/server/image_guard.h"

namespace servelab::server {

struct ServerOptions {
  std::string bind = "127.0.0.1";    // listen address (loopback by default)
  uint16_t port = 0;                 // 0: ephemeral; read the bound port with port()
  unsigned io_threads = 2;           // HTTP IO threads (image decoding runs on them too)
  size_t max_body_bytes = 256u << 20;  // larger bodies are answered 413
  // The JSON of a v2 infer request (the body, or the JSON header of a binary-tensor body);
  // larger: 413 before the body is read. Large tensors go as binary data.
  size_t max_json_body_bytes = 16u << 20;
  ImageLimits image_limits;          // classify bodies, checked from the header before decoding
  std::string store_dir = "model-store";  // model files and registry.sqlite
  int default_top_k = 5;             // /classify without ?top_k=
  // Largest batch (first input dimension) of a KServe v2 infer request; larger ones are
  // answered 413 before anything is allocated. Each item is one engine request.
  uint32_t v2_max_batch = 64;
  // Labels one GET /models/{name} answer carries at most (a page; ?labels_offset= picks it),
  // so that an answer does not grow with a model's label list. At least 1.
  size_t labels_per_answer = 1000;
  bool log = true;                   // log registrations and restore problems on stderr
  // Freed heap memory (the forward passes' buffers the process keeps) goes back to the
  // system once no request has been in flight this long; zero (the default here; `servelab
  // serve` gives 10 s): kept while the process lives, the regime the cost profiles measure.
  std::chrono::milliseconds idle_trim{0};
  // JSON registration with a server-side path reads only regular files under this directory
  // (canonical paths, symlinks resolved). Empty: server-side paths are refused (upload).
  std::string model_root;
  // Non-empty: POST /register, DELETE /models/{name}, POST /groups and DELETE /groups/{name}
  // need `Authorization: Bearer <token>` (401 otherwise). Reads and /classify stay open.
  std::string admin_token;
  // Start even when the registry has no models but the store holds model files (a folder of
  // exported models, a registry lost or being restored): they are moved to quarantine. Off:
  // such a start is refused, since those files may be the user's own.
  bool quarantine_orphans = false;
  // Requests carrying an X-Request-Id (so DELETE /requests/{id} can cancel them) held at
  // once; one more is answered 503.
  size_t max_request_ids = 65536;
};

// What start() found in the registry.
struct RestoreReport {
  std::vector<std::string> restored;
  std::vector<std::pair<std::string, std::string>> skipped;  // name, reason (row kept)
  // Store files without a row (e.g. after kill -9), moved into quarantine: from, to.
  std::vector<std::pair<std::string, std::string>> orphans_quarantined;
  std::vector<std::string> groups_restored;
  std::vector<std::pair<std::string, std::string>> groups_skipped;  // name, reason (row kept)
  store::Tidied weight_store;  // what a crash had left in the weight store, removed
};

class HttpServer {
 public:
  // Opens the store, locks it for this server's life (StoreLock) and opens the registry, and
  // starts the engine. Throws std::runtime_error with a user-facing message (unusable store
  // directory or database, a store locked by another server, bad engine configuration).
  HttpServer(ServerOptions options, runtime::EngineOptions engine_options);
  ~HttpServer();  // stop()s, then stops the engine (pending requests fail)
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Moves store files without a row into `<store>/quarantine/<UTC time>/` and logs them
  // (never deletes them), re-registers the registry's models (a broken one is logged and
  // skipped, its row kept; a row without its file is reported so), then binds and serves.
  // Throws std::runtime_error when the address cannot be bound, or when the registry has no
  // models while the store holds model files and quarantine_orphans is off.
  RestoreReport start();
  uint16_t port() const;
  // Stops accepting, lets responses in flight finish (up to 2 s) and joins the IO threads.
  // Idempotent.
  void stop();

  // The engine behind the API, e.g. for submit_raw() from an in-process load generator.
  runtime::Engine& engine();

  // Defines a model group in-process, as `POST /groups` with `definition` as its body does
  // (the same parsing, checks, registry row and live group; no admin token asked): for an
  // embedding owner such as the experiment runner. Returns the stored definition (JSON
  // text). Throws std::runtime_error with the answer's message where POST /groups would
  // answer an error. Any thread, after start().
  std::string define_group(const std::string& definition);

  struct Impl;  // shared by the server's translation units

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::server
