// HttpServer lifecycle, routing, and the request-path endpoints (classify, health, metrics).
#include "engine/server/http_server.h"

#include <boost/asio/post.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "engine/server/admin_auth.h"
#include "engine/server/group_dispatch.h"
#include "engine/server/server_impl.h"

namespace servelab::server {
using nlohmann::json;

namespace {

// Runs `work` (which returns a response or throws HttpError) and replies with its result.
template <class Work>
void reply_with(const Reply& reply, Work&& work) {
  try {
    reply(work());
  } catch (const HttpError& e) {
    reply(error_response(e.status, e.what()));
  } catch (const std::exception& e) {
    reply(error_response(500, std::string("internal error: ") + e.what()));
  }
}

int parse_top_k(const HttpRequest& req, int fallback) {
  auto it = req.query.find("top_k");
  if (it == req.query.end()) return fallback;
  try {
    size_t used = 0;
    int k = std::stoi(it->second, &used);
    if (used == it->second.size() && k >= 1 && k <= 100000) return k;
  } catch (const std::exception&) {
  }
  throw HttpError(400, "top_k must be a positive integer (got '" + echo_value(it->second) + "')");
}

}  // namespace

// X-SLO-Ms: this request's latency objective in milliseconds, (0, one day]; absent: none.
runtime::RequestOptions parse_slo_header(const HttpRequest& req) {
  runtime::RequestOptions ro;
  const std::string* v = req.header("x-slo-ms");
  if (!v) return ro;
  // Decimal only: strtod would also read hexadecimal (0x10 as 16) and leading blanks.
  double ms = 0;
  const char* end = v->data() + v->size();
  const auto [stop, ec] = std::from_chars(v->data(), end, ms, std::chars_format::general);
  if (v->empty() || ec != std::errc() || stop != end || !(ms > 0) || !(ms <= 86400000.0))
    throw HttpError(400, "X-SLO-Ms must be a decimal number of milliseconds in (0, 86400000] "
                         "(got '" + v->substr(0, 32) + "')");
  ro.slo = ms / 1e3;
  return ro;
}

std::optional<HttpResponse> request_failure(const std::string& model,
                                            const runtime::ClassifyResult& r) {
  switch (r.status) {
    case RequestStatus::Ok:
      return std::nullopt;
    case RequestStatus::Rejected:
      return error_response(503, "queue of model '" + model + "' is full" +
                                     (r.error.empty() ? "" : ": " + r.error));
    case RequestStatus::Timeout:
      return error_response(504, "request to model '" + model + "' timed out in its queue" +
                                     (r.error.empty() ? "" : ": " + r.error));
    case RequestStatus::Dropped: {  // "status" tells load generators it is not a timeout
      nlohmann::json j = {{"error", "request to model '" + model + "' was past its deadline "
                                    "(SLO) before it could run, and the engine drops late requests"},
                          {"status", "dropped"}};
      return json_response(504, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    case RequestStatus::Cancelled:  // its client went, or a sibling v2 item failed: 499
      return error_response(499, "request to model '" + model + "' was cancelled");
    case RequestStatus::Failed:
      return error_response(500, "inference with model '" + model + "' failed" +
                                     (r.error.empty() ? "" : ": " + r.error));
  }
  return error_response(500, "unknown request status");
}

namespace {

HttpResponse classify_response(const std::string& model, const runtime::ClassifyResult& r) {
  if (auto failure = request_failure(model, r)) return std::move(*failure);
  json top = json::array();
  for (const auto& [label, score] : r.top) top.push_back({{"label", label}, {"score", score}});
  json j = {{"model", model},
            {"top", std::move(top)},
            {"batch_size", r.batch_size},
            {"queue_ms", r.queue_s * 1e3},
            {"load_ms", r.load_s * 1e3},
            {"compute_ms", r.compute_s * 1e3}};
  if (r.load_s > 0) {
    const runtime::LoadParts& p = r.load_parts;
    j["load_parts_ms"] = {{"read", p.read_s * 1e3},
                          {"deserialize", p.deserialize_s * 1e3},
                          {"copy", p.copy_s * 1e3},
                          {"share", p.share_s * 1e3}};
  }
  if (r.slo_met) j["slo_met"] = *r.slo_met;
  return json_response(200, j.dump(-1, ' ', false, json::error_handler_t::replace));
}

// The digest records of a weight store (its `sources` folder); none without one.
std::optional<store::SourceDigests> digest_records(const std::string& weight_store) {
  if (weight_store.empty()) return std::nullopt;
  return std::optional<store::SourceDigests>(std::in_place, weight_store + "/sources");
}

// The model files shared by the model stores on a weight store (its `files` folder).
std::optional<store::SharedFiles> shared_model_files(const std::string& weight_store) {
  if (weight_store.empty()) return std::nullopt;
  return std::optional<store::SharedFiles>(std::in_place, weight_store + "/files");
}

}  // namespace

HttpServer::Impl::Impl(ServerOptions opts, runtime::EngineOptions engine_opts)
    : options(std::move(opts)),
      request_ids(options.max_request_ids),
      store(options.store_dir),
      source_digests(digest_records(engine_opts.weight_store)),
      shared_files(shared_model_files(engine_opts.weight_store)),
      store_lock(store.dir()),
      registry(store.db_path()),
      group_queue_limit(engine_opts.control.queue_bound ? engine_opts.control.queue_bound
                                                         : kDefaultGroupQueueLimit),
      group_expiry{engine_opts.control.request_timeout, engine_opts.control.drop_late},
      engine(std::make_unique<runtime::Engine>(std::move(engine_opts))) {}

void HttpServer::Impl::log(const std::string& line) const {
  if (options.log) std::fprintf(stderr, "servelab serve: %s\n", line.c_str());
}

void reply_with_result(const Reply& reply, const std::function<HttpResponse()>& work) {
  reply_with(reply, work);
}

// Slow administrative work goes to the admin pool; the IO thread is free at once.
// With an admin token, the token is checked here on the IO thread, before any work.
RouteHandler HttpServer::Impl::admin_route(AdminWork work) {
  return [this, work](HttpRequest& req, const PathParams& p, Reply reply) {
    if (!options.admin_token.empty() && !has_bearer_token(req, options.admin_token)) {
      return reply(unauthorized_response());
    }
    boost::asio::post(admin, [this, work, req = std::move(req), p, reply]() mutable {
      reply_with(reply, [&] { return work(this, req, p); });
    });
  };
}

RouteHandler HttpServer::Impl::listing_route(AdminWork work) {
  return [this, work](HttpRequest& req, const PathParams& p, Reply reply) {
    boost::asio::post(listing, [this, work, req = std::move(req), p, reply]() mutable {
      reply_with(reply, [&] { return work(this, req, p); });
    });
  };
}

void HttpServer::Impl::add_routes() {
  auto on_admin = [this](AdminWork work) { return admin_route(std::move(work)); };
  routes.add("POST", "/register", on_admin([](Impl* s, HttpRequest& req, const PathParams&) {
               return s->register_model(req);
             }));
  routes.add("DELETE", "/models/{name}",
             on_admin([](Impl* s, HttpRequest&, const PathParams& p) {
               return s->delete_model(p.at("name"));
             }));
  routes.add("GET", "/models", listing_route([](Impl* s, HttpRequest&, const PathParams&) {
               return s->list_models();
             }));
  routes.add("GET", "/models/{name}",
             listing_route([](Impl* s, HttpRequest& req, const PathParams& p) {
               return s->get_model(p.at("name"), req);
             }));
  routes.add("POST", "/classify/{name}", [this](HttpRequest& req, const PathParams& p,
                                                 Reply client_reply) {
    // A model's request with an X-Request-Id is listed for cancels (server_cancel.cpp); a
    // group's is not (its members' requests are the engine's).
    Tracked t;
    const std::string& name = p.at("name");
    std::shared_ptr<LiveGroup> group = find_group(name);
    if (auto why = group ? std::nullopt : unavailable_group(name)) {
      const HttpError e = group_not_restored(name, *why, 503);
      return client_reply(error_response(e.status, e.what()));
    }
    try {
      t = group ? Tracked{{}, nullptr, client_reply, nullptr} : track_request(req, client_reply);
    } catch (const HttpError& e) {
      return client_reply(error_response(e.status, e.what()));
    }
    const Reply& reply = t.reply;
    reply_with(reply, [&]() -> HttpResponse {
      int top_k = parse_top_k(req, options.default_top_k);
      runtime::RequestOptions ro = parse_slo_header(req);
      ro.on_dispatch = t.on_dispatch;
      if (req.body.empty()) throw HttpError(400, "empty body: send the image bytes as the body");
      std::string why;  // bounded before decoding: dimensions from the image header
      if (int status = check_image(req.body, options.image_limits, &why)) {
        throw HttpError(status, why);
      }
      if (group) {  // its members vote (server_groups.cpp)
        classify_group(group, std::move(req.body), ro, reply, req.client);
        HttpResponse later;
        later.status = -1;
        return later;
      }
      RequestId id = 0;
      int rc = engine->classify(name, std::move(req.body), top_k,
                                [this, reply, name](runtime::ClassifyResult r) {
                                  if (r.status == RequestStatus::Failed && removed(name)) {
                                    return reply(error_response(
                                        404, "model '" + name + "' was removed"));
                                  }
                                  reply(classify_response(name, r));
                                }, ro, &id);
      if (rc == 0) {  // answered later, from an engine thread
        if (id != 0 && t.entry) t.entry->set_cancel([this, id] { engine->cancel(id); });
        if (id != 0 && req.client)  // a client gone takes its queued request with it
          req.client->on_gone([this, id] { engine->cancel(id); });
        HttpResponse later;
        later.status = -1;
        return later;
      }
      if (rc == 404) throw HttpError(404, "unknown model '" + name + "'");
      if (rc == 400) throw HttpError(400, "cannot decode the request body as an image");
      if (rc == 413) throw HttpError(413, "image is larger than the engine's limit");
      throw HttpError(rc, "model '" + name + "' cannot take requests now");
    });
  });
  add_v2_routes();
  add_group_routes();
  add_cancel_routes();
  routes.add("GET", "/health", [this](HttpRequest&, const PathParams&, Reply reply) {
    reply_with(reply, [&] {
      size_t unavailable_models;
      {
        std::lock_guard<std::mutex> lock(unavailable_mu);
        unavailable_models = unavailable.size();
      }
      json j = {{"status", "ok"},
                {"models", engine->models().size()},
                {"unavailable_models", unavailable_models},
                {"cuda", engine->cuda_available()}};
      return json_response(200, j.dump());
    });
  });
  routes.add("GET", "/metrics", [this](HttpRequest&, const PathParams&, Reply reply) {
    reply_with(reply, [&] {
      HttpResponse r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = engine->metrics_text();
      if (!r.body.empty() && r.body.back() != '\n') r.body += '\n';
      r.body += request_ids.metrics_text();
      r.body += metrics.text();
      return r;
    });
  });
}

HttpServer::HttpServer(ServerOptions options, runtime::EngineOptions engine_options)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(engine_options))) {
  impl_->add_routes();
}

HttpServer::~HttpServer() {
  stop();
  impl_->admin.join();
  impl_->listing.join();
  // Group dispatchers call the engine: none may run while or after it is destroyed.
  impl_->group_pool.stop();
  impl_->group_pool.join();
}

RestoreReport HttpServer::start() {
  Impl& s = *impl_;
  if (s.transport) throw std::runtime_error("server already started");
  RestoreReport report = s.restore();
  TransportOptions t;
  t.bind = s.options.bind;
  t.port = s.options.port;
  t.io_threads = s.options.io_threads;
  t.max_body_bytes = s.options.max_body_bytes;
  t.max_json_body_bytes = s.options.max_json_body_bytes;
  t.idle_trim = s.options.idle_trim;
  t.trimmed = [&s](bool idle) { s.metrics.heap_trimmed(idle); };
  t.log = [&s](const std::string& line) { s.log(line); };
  t.refused = [&s](int status) { s.metrics.refused(status); };
  s.transport.emplace(t, [&s](HttpRequest req, Reply reply) {
    // The matched route's pattern (the route table's, alive as long as the server).
    auto route = std::make_shared<const std::string*>(nullptr);
    auto t0 = std::chrono::steady_clock::now();
    s.metrics.started();
    Reply counted = [&s, route, t0, reply = std::move(reply)](HttpResponse res) {
      if (res.status < 0) return;  // placeholder: the real reply comes later
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      static const std::string kUnmatched = "unmatched";
      s.metrics.finished(*route ? **route : kUnmatched, res.status, secs);
      reply(std::move(res));
    };
    s.routes.dispatch(std::move(req), std::move(counted), route.get());
  });
  s.transport->start();
  // What the start-up freed and kept (restored models' loads; a replica's warm-up buffers,
  // kept for its first batch) goes back if no request comes.
  s.transport->trim_when_idle();
  return report;
}

uint16_t HttpServer::port() const { return impl_->transport ? impl_->transport->port() : 0; }

void HttpServer::stop() {
  if (impl_->transport) impl_->transport->stop();
}

runtime::Engine& HttpServer::engine() { return *impl_->engine; }

std::string HttpServer::define_group(const std::string& definition) {
  HttpRequest req;
  req.method = "POST";
  req.target = req.path = "/groups";
  req.body = definition;
  try {
    return impl_->create_group(req).body;
  } catch (const HttpError& e) {
    throw std::runtime_error("group definition refused (" + std::to_string(e.status) +
                             "): " + e.what());
  }
}

}  // namespace servelab::server
