// Internal state of HttpServer, shared by http_server.cpp (lifecycle, classify, health,
// metrics) and server_models.cpp (register, list, delete, restore). Not a public header.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "engine/server/http_metrics.h"
#include "engine/server/http_server.h"
#include "engine/server/http_transport.h"
#include "engine/server/model_store.h"
#include "engine/server/registry.h"
#include "engine/server/router.h"

namespace servelab::server {

// Declaration order is destruction order reversed: the transport goes first, then the admin
// pool, then the engine (whose pending callbacks still find `metrics` alive).
struct HttpServer::Impl {
  ServerOptions options;
  HttpMetrics metrics;
  ModelStore store;
  Registry registry;
  std::unique_ptr<runtime::Engine> engine;
  Router router;

  // Registration and deletion run here, off the IO threads (a registration loads and checks
  // the model before it answers, Rafiqi 3.1), one at a time under `admin_mu`.
  std::mutex admin_mu;
  // Models in the registry whose file could not be registered at start-up, with the reason.
  // Own mutex: readers (GET /models, /health) must not wait for a registration.
  std::mutex unavailable_mu;
  std::map<std::string, std::string> unavailable;
  void set_unavailable(const std::string& name, const std::string& why);
  void clear_unavailable(const std::string& name);
  boost::asio::thread_pool admin{1};
  std::optional<HttpTransport> transport;

  Impl(ServerOptions opts, runtime::EngineOptions engine_opts);
  void add_routes();
  void log(const std::string& line) const;

  // Route handlers (server_models.cpp).
  HttpResponse register_model(HttpRequest& req);
  HttpResponse delete_model(const std::string& name);
  HttpResponse list_models();
  HttpResponse get_model(const std::string& name);
  RestoreReport restore();
  nlohmann::json model_json(const std::string& name, bool full);
};

}  // namespace servelab::server
