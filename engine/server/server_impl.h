// Internal state of HttpServer, shared by http_server.cpp (lifecycle, classify, health,
// metrics) and server_models.cpp (register, list, delete, restore). Not a public header.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>

#include "engine/control/group_controller.h"
#include "engine/server/group_definition.h"
#include "engine/server/http_metrics.h"
#include "engine/server/http_server.h"
#include "engine/server/http_transport.h"
#include "engine/server/model_store.h"
#include "engine/server/registry.h"
#include "engine/server/request_ids.h"
#include "engine/server/route_table.h"
#include "engine/server/store_lock.h"
#include "engine/store/shared_files.h"
#include "engine/store/source_digests.h"

namespace servelab::server {

struct LiveGroup;  // a defined group with its subset policy (server_groups.cpp)

// Declaration order is destruction order reversed: the transport goes first, then the admin
// pool, then the engine (whose pending callbacks still find the members above it alive).
struct HttpServer::Impl {
  ServerOptions options;
  HttpMetrics metrics;
  RequestIds request_ids;  // requests in flight with an X-Request-Id (server_cancel.cpp)
  ModelStore store;
  // Digests of server-side model files by their identity, kept in the weight store for every
  // server on it (store/source_digests.h); none without a weight store.
  std::optional<store::SourceDigests> source_digests;
  // Model files shared by link with the other model stores on the weight store
  // (store/shared_files.h); none without a weight store.
  std::optional<store::SharedFiles> shared_files;
  StoreLock store_lock;  // taken before the registry is opened, held for the server's life
  Registry registry;
  RouteTable routes;

  // Registration and deletion run here, off the IO threads (a registration loads and checks
  // the model before it answers, Rafiqi 3.1), one at a time under `admin_mu`.
  std::mutex admin_mu;
  // Models in the registry whose file could not be registered at start-up, with the reason.
  // Own mutex: readers (GET /models, /health) must not wait for a registration.
  std::mutex unavailable_mu;
  std::map<std::string, std::string> unavailable;
  void set_unavailable(const std::string& name, const std::string& why);
  void clear_unavailable(const std::string& name);
  // Names deleted since start-up and not registered again: a request that failed because
  // its model went away answers 404 instead of 500.
  std::mutex deleted_mu;
  std::set<std::string> deleted;
  // Model groups by name (ensembles; server_groups.cpp). Defined and deleted on the admin
  // pool under `admin_mu` (so a model's deletion and a group naming it never interleave);
  // read by classify on IO threads. `groups_mu` guards the map only; a LiveGroup is shared.
  // Groups with an ensemble dispatcher decide on this pool (group_dispatch.h); declared
  // before the groups (their timers are its objects) and stopped before the engine goes.
  boost::asio::thread_pool group_pool{1};
  size_t group_queue_limit = 0;  // engine.queue_bound, else kDefaultGroupQueueLimit
  GroupExpiry group_expiry;      // the engine's request timeout and late-request rule
  std::mutex groups_mu;
  std::map<std::string, std::shared_ptr<LiveGroup>> groups;
  // Groups kept in the registry that could not be restored at start-up, and why: their
  // names are taken until DELETE /groups/{name} frees them. Under `groups_mu`.
  std::map<std::string, std::string> unavailable_groups;
  // After everything its callbacks read: ~Engine answers pending requests (Failed), and
  // those callbacks read `metrics`, `deleted`, `groups` and their mutexes.
  std::unique_ptr<runtime::Engine> engine;
  boost::asio::thread_pool admin{1};
  // Answers whose size grows with the registry (GET /models, /models/{name}, /groups) are
  // built here, so that the IO threads stay free for /health and small requests.
  boost::asio::thread_pool listing{1};
  std::optional<HttpTransport> transport;

  Impl(ServerOptions opts, runtime::EngineOptions engine_opts);
  void add_routes();
  // An administrative route: checks the admin token on the IO thread (401), then runs
  // `work` on the admin pool and replies with its result (or its HttpError).
  using AdminWork = std::function<HttpResponse(Impl*, HttpRequest&, const PathParams&)>;
  RouteHandler admin_route(AdminWork work);
  // A read-only route whose answer is built on the listing pool (no token needed).
  RouteHandler listing_route(AdminWork work);
  void log(const std::string& line) const;

  // Route handlers (server_models.cpp).
  HttpResponse register_model(HttpRequest& req);
  HttpResponse delete_model(const std::string& name);
  HttpResponse list_models();
  // One model; its labels a page at a time (query labels_offset, options.labels_per_answer a page).
  HttpResponse get_model(const std::string& name, const HttpRequest& req);
  // The store-ready path of a JSON registration's server-side file (HttpError 403 without a
  // model root, 400 for any path outside it).
  std::string server_side_path(const std::string& requested) const;
  // HttpError 400 unless `name` is a valid model name (model_name_problem).
  static void check_name(const std::string& name);
  // Any thread: true when `name` was deleted (and not registered again) since start-up.
  bool removed(const std::string& name);
  RestoreReport restore();
  // With a weight store: every row's weight bytes as the engine counts them now (a model's
  // unique bytes change as others come and go). Under admin_mu.
  void refresh_registry_weights();
  // Moves store files without a registry row to a quarantine folder; refuses (throws) when
  // the registry has no models but the store holds model files, unless
  // options.quarantine_orphans. Under admin_mu, from restore().
  void quarantine_orphans(RestoreReport* report);
  nlohmann::json model_json(const std::string& name, bool full, size_t labels_offset = 0);
  void add_v2_routes();  // the KServe v2 protocol (server_v2.cpp)

  // A request's X-Request-Id, listed for DELETE /requests/{id} (server_cancel.cpp).
  struct Tracked {
    std::string id;                            // empty without the header
    std::shared_ptr<RequestIds::Entry> entry;  // null without the header
    Reply reply;  // the request's reply; with an id, it unlists the id as it answers
    // For RequestOptions::on_dispatch: marks the request started and, when it asked
    // (X-Servelab-Notify-Start: 1), sends its client "102 Processing" with X-Servelab-Started.
    std::function<void()> on_dispatch;
  };
  // Lists req's X-Request-Id. Throws HttpError 400 (not a request id, or a notification asked
  // without an id), 409 (in flight already), 503 (max_request_ids in flight).
  Tracked track_request(const HttpRequest& req, Reply reply);
  void add_cancel_routes();  // DELETE /requests/{id}

  // Groups (server_groups.cpp). create/delete run on the admin pool, under admin_mu.
  void add_group_routes();
  HttpResponse create_group(const HttpRequest& req);
  HttpResponse delete_group(const std::string& name);
  HttpResponse list_groups();
  HttpResponse get_group(const std::string& name);
  std::shared_ptr<LiveGroup> find_group(const std::string& name);
  // Why group `name` is in the registry but not serving, or nothing.
  std::optional<std::string> unavailable_group(const std::string& name);
  // A defined group ready to serve: its subset policy, or its dispatcher with a weights file
  // resolved under --model-root (HttpError 403 without a root, 400 outside it or bad).
  std::shared_ptr<LiveGroup> make_live_group(GroupDefinition def);
  // Any thread: the first group (by name) that has `model` as a member, or "".
  std::string group_with_member(const std::string& model);
  // Fans a checked image out to the members the group's subset policy picks and answers
  // through `reply` once every member answered (group_answer.h). Never throws after it
  // started asking members. `client` (may be null): when it goes, a request still queued in
  // a dispatched group's queue leaves it unsent, and its member requests are cancelled.
  void classify_group(const std::shared_ptr<LiveGroup>& group, std::string image,
                      const runtime::RequestOptions& ro, const Reply& reply,
                      const std::shared_ptr<ClientGone>& client);
  void restore_groups(RestoreReport* report);  // under admin_mu, from restore()
  // POST /v2/models/{name}/infer: parses and queues; `reply` answers later (status -1 now).
  HttpResponse infer_v2(HttpRequest& req, const std::string& name,
                        const runtime::Engine::Tensors& t, const Tracked& tracked);
};

// Replies with work()'s response, or with the error it throws (HttpError: its status; any
// other exception: 500).
void reply_with_result(const Reply& reply, const std::function<HttpResponse()>& work);

// The answer to a request naming a group in the registry that could not be restored.
HttpError group_not_restored(const std::string& name, const std::string& why, int status);

// The error response for a request the engine did not answer Ok (503 queue full, 504 timeout,
// 499 cancelled, 500 failed); nothing for Ok.
// X-SLO-Ms: the request's latency objective (bounded; malformed: HttpError 400).
runtime::RequestOptions parse_slo_header(const HttpRequest& req);

std::optional<HttpResponse> request_failure(const std::string& model,
                                            const runtime::ClassifyResult& r);

}  // namespace servelab::server
