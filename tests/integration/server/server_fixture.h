// Test fixture: a real HttpServer (real Engine, LibTorch executor) on 127.0.0.1 with an
// ephemeral port and a temporary model store, plus helpers to read the tiny test models of
// scripts/make-models and to read values from /metrics.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "engine/server/http_server.h"
#include "tests/integration/server/http_client.h"

namespace servelab::testing {

// A fresh directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir();
  ~TempDir();
};

// `models/` of the source tree; fails the test (with how to fix it) when the tiny models are
// missing.
std::string models_dir();
std::string model_file(const std::string& model);       // models/<model>.pt
std::string image_file(const std::string& image);       // models/images/<image>
std::string bad_file(const std::string& file);          // models/bad/<file>

// JSON body of POST /register for test model `model` (its manifest's preprocessing and
// labels) registered under `name`.
std::string register_json(const std::string& name, const std::string& model);
// Multipart fields of the same registration, uploading the file.
std::vector<FormField> register_form(const std::string& name, const std::string& model);

// Sum of the values of every /metrics sample whose line starts with `prefix` (a metric name
// with an optional opening of its labels, e.g. `servelab_batch_size_count{model="noop"`).
double metric_sum(const std::string& metrics_text, const std::string& prefix);

struct TestServer {
  // `tweak` may change the engine and server options before the server starts.
  explicit TestServer(
      const std::string& store_dir,
      const std::function<void(runtime::EngineOptions&, server::ServerOptions&)>& tweak = {});
  std::unique_ptr<server::HttpServer> server;
  server::RestoreReport restore;
  uint16_t port() const { return server->port(); }
};

}  // namespace servelab::testing
