#include "engine/route/http/route_server.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "engine/server/http_metrics.h"
#include "engine/server/http_transport.h"
#include "engine/server/route_table.h"

namespace servelab::route {

using server::HttpRequest;
using server::HttpResponse;
using server::PathParams;
using server::Reply;

// The transport comes first: its io_context runs the forwarder too (one thread for a request's
// whole way through with io_threads 1), and must outlive the forwarder's sockets and timers.
struct RouteServer::Impl {
  RouteServerOptions options;
  server::RouteTable routes;
  server::HttpMetrics metrics;
  server::HttpTransport transport;
  Forwarder forwarder;

  explicit Impl(RouteServerOptions o)
      : options(std::move(o)),
        transport(transport_options(), [this](HttpRequest req, Reply reply) {
          handle(std::move(req), std::move(reply));
        }),
        forwarder(options.forwarder, transport.context()) {
    add_routes();
  }

  server::TransportOptions transport_options() {
    server::TransportOptions t;
    t.bind = options.bind;
    t.port = options.port;
    t.io_threads = options.io_threads;
    t.max_body_bytes = options.max_body_bytes;
    t.log = options.forwarder.log;
    t.refused = [this](int status) { metrics.refused(status); };
    return t;
  }

  void add_routes() {
    auto forward = [this](HttpRequest& req, const PathParams& p, Reply reply) {
      forwarder.forward(p.at("name"), std::move(req), std::move(reply));
    };
    routes.add("POST", "/classify/{name}", forward);
    routes.add("POST", "/v2/models/{name}/infer", forward);
    routes.add("POST", "/v2/models/{name}/versions/{version}/infer", forward);
    routes.add("GET", "/health", [this](HttpRequest&, const PathParams&, Reply reply) {
      forwarder.backends_json([reply = std::move(reply)](std::string text) {
        const nlohmann::json j = nlohmann::json::parse(text);
        size_t up = 0;
        for (const auto& b : j["backends"]) up += b["up"].get<bool>() ? 1 : 0;
        const nlohmann::json h = {
            {"status", "ok"}, {"backends_up", up}, {"backends", j["backends"].size()}};
        reply(server::json_response(200, h.dump()));
      });
    });
    routes.add("GET", "/backends", [this](HttpRequest&, const PathParams&, Reply reply) {
      forwarder.backends_json([reply = std::move(reply)](std::string text) {
        reply(server::json_response(200, std::move(text)));
      });
    });
    routes.add("GET", "/metrics", [this](HttpRequest&, const PathParams&, Reply reply) {
      forwarder.metrics_text([this, reply = std::move(reply)](std::string text) {
        HttpResponse r;
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = std::move(text) + metrics.text();
        reply(std::move(r));
      });
    });
  }

  // Every request through the route table, counted by route and status as the engine's
  // server counts them.
  void handle(HttpRequest req, Reply reply) {
    auto route = std::make_shared<const std::string*>(nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    metrics.started();
    Reply counted = [this, route, t0, reply = std::move(reply)](HttpResponse res) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      static const std::string kUnmatched = "unmatched";
      metrics.finished(*route ? **route : kUnmatched, res.status, secs);
      reply(std::move(res));
    };
    routes.dispatch(std::move(req), std::move(counted), route.get());
  }
};

RouteServer::RouteServer(RouteServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

RouteServer::~RouteServer() { stop(); }

std::vector<std::pair<std::string, std::string>> RouteServer::start() {
  auto down = impl_->forwarder.start();  // runs the context on this thread meanwhile
  impl_->transport.start();
  return down;
}

uint16_t RouteServer::port() const { return impl_->transport.port(); }

void RouteServer::stop() {
  impl_->forwarder.stop();  // its 503s for held requests go out while the transport runs
  impl_->transport.stop();
}

Forwarder& RouteServer::forwarder() { return impl_->forwarder; }

}  // namespace servelab::route
