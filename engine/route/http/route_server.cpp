#include "engine/route/http/route_server.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/server/http_metrics.h"
#include "engine/server/http_transport.h"
#include "engine/server/route_table.h"

namespace servelab::route {

using server::HttpRequest;
using server::HttpResponse;
using server::PathParams;
using server::Reply;

struct RouteServer::Impl {
  RouteServerOptions options;
  Forwarder forwarder;
  server::RouteTable routes;
  server::HttpMetrics metrics;
  std::optional<server::HttpTransport> transport;

  explicit Impl(RouteServerOptions o) : options(std::move(o)), forwarder(options.forwarder) {
    add_routes();
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
  Impl& s = *impl_;
  auto down = s.forwarder.start();
  server::TransportOptions t;
  t.bind = s.options.bind;
  t.port = s.options.port;
  t.io_threads = s.options.io_threads;
  t.max_body_bytes = s.options.max_body_bytes;
  t.log = s.options.forwarder.log;
  t.refused = [&s](int status) { s.metrics.refused(status); };
  s.transport.emplace(t, [&s](HttpRequest req, Reply reply) {
    s.handle(std::move(req), std::move(reply));
  });
  s.transport->start();
  return down;
}

uint16_t RouteServer::port() const { return impl_->transport ? impl_->transport->port() : 0; }

void RouteServer::stop() {
  if (impl_->transport) impl_->transport->stop();
  impl_->forwarder.stop();
}

Forwarder& RouteServer::forwarder() { return impl_->forwarder; }

}  // namespace servelab::route
