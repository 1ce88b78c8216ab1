// Forwarding one request: pick a backend that is up, send, pass the answer back; on a
// backend's failure mark it down and try another; probes bring a down backend back up.
// Runs on the forwarder's thread (forwarder_impl.h).
#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <algorithm>
#include <cstring>

#include "engine/route/http/forwarder_impl.h"

namespace servelab::route {

namespace asio = boost::asio;
using server::error_response;
using server::HttpResponse;

namespace {

// Request headers that describe the client's connection: the front end writes its own.
bool hop_by_hop_request(const std::string& name) {
  for (const char* h : {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                        "content-length", "te", "trailer", "upgrade", "expect"})
    if (name == h) return true;
  return false;
}

// The request as the backend gets it: method, target and end-to-end headers as sent (the SLO
// header X-SLO-Ms among them), and the body whole again where the transport split a v2
// binary tensor off it.
std::shared_ptr<BackendRequest> backend_request(server::HttpRequest& req) {
  auto r = std::make_shared<BackendRequest>();
  r->method_string(req.method);
  r->target(req.target);
  r->version(11);
  bool host = false;
  for (const auto& [name, value] : req.headers) {
    if (hop_by_hop_request(name)) continue;
    host = host || name == "host";
    r->insert(name, value);
  }
  if (!host) r->set(beast_http::field::host, "servelab-route");
  r->keep_alive(true);
  r->body() = std::move(req.body);
  if (req.tensor_split && !req.tensor.empty()) {
    const size_t n = req.tensor.size() * sizeof(float);
    const size_t at = r->body().size();
    r->body().resize(at + n);
    std::memcpy(r->body().data() + at, req.tensor.data(), n);
  }
  r->prepare_payload();
  return r;
}

}  // namespace

ModelId Forwarder::Impl::model_id(const std::string& name) {
  auto it = model_ids.find(name);
  if (it != model_ids.end()) return it->second;
  if (model_ids.size() >= kMaxModelNames || name.size() > 256) return 0;  // bounded: shared id
  const ModelId id = ModelId(model_ids.size() + 1);
  model_ids.emplace(name, id);
  return id;
}

void Forwarder::Impl::begin(std::string model, server::HttpRequest req, server::Reply reply) {
  auto p = std::make_shared<Pending>();
  p->id = next_id++;
  p->model = model_id(model);
  p->reply = std::move(reply);
  if (!options.hosts.empty()) {
    auto it = options.hosts.find(model);
    if (it == options.hosts.end())
      return fail(*p, 404, "model '" + server::echo_value(model, 64) +
                               "' is not placed on any backend");
    p->hosts = &it->second;
  }
  p->model_name = std::move(model);
  p->request = backend_request(req);
  if (backups()) tie(*p);
  p->sent = Clock::now();
  attempt(std::move(p));
}

void Forwarder::Impl::candidates(const Pending& p) {
  views.clear();
  for (uint32_t i = 0; i < backends.size(); ++i) {
    const Backend& b = backends[i];
    if (!b.up || std::find(p.tried.begin(), p.tried.end(), i) != p.tried.end()) continue;
    if (p.hosts && !std::binary_search(p.hosts->begin(), p.hosts->end(), i)) continue;
    views.push_back({i, b.outstanding, 0, 0});
  }
}

void Forwarder::Impl::attempt(std::shared_ptr<Pending> p) {
  if (stopping) return fail(*p, 503, "the front end is stopping");
  candidates(*p);
  if (views.empty()) {
    if (p->tried.empty()) {
      ++no_backend;
      if (p->hosts)
        return fail(*p, 503, "no backend hosting model '" + server::echo_value(p->model_name, 64) +
                                 "' is up (" +
                                 std::to_string(p->hosts->size()) + " host it)");
      return fail(*p, 503, "no backend is up (" + std::to_string(backends.size()) +
                               " backends, all marked down)");
    }
    const Backend& last = backends[p->tried.back()];
    const BackendAnswer& f = p->last_failure;
    const int status = f.failure == BackendFailure::Timeout ? 504 : 502;
    return fail(*p, status, "backend " + last.name + " failed (" + f.error +
                                "); no other backend is up to try");
  }
  const double now = std::chrono::duration<double>(Clock::now() - started).count();
  size_t k = router->route(p->id, p->model, views, now);
  if (k >= views.size()) k = 0;  // a router's bug must not lose the request
  p->copies.push_back({views[k].index});
  send_copy(p, p->copies.size() - 1);
  if (p->copies.size() == 1 && backups()) arm_backup(p);
}

void Forwarder::Impl::send_copy(std::shared_ptr<Pending> p, size_t c) {
  const uint32_t bi = p->copies[c].backend;
  Backend& b = backends[bi];
  p->tried.push_back(bi);
  ++b.outstanding;
  ++b.forwarded;
  auto conn = connection(b);
  b.in_use.insert(conn);
  const auto timeout = std::chrono::duration<double>(options.backend_timeout_s);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  BackendConnection::Interim started;
  if (!p->request_id.empty()) {  // a tied copy: its server says when it starts (102)
    started = [this, p, c](unsigned status, const auto& headers) {
      for (const auto& [name, value] : headers)
        if (status == 102 && name == "x-servelab-started" && value == p->request_id)
          return on_started(p, c);
    };
  }
  conn->send(
      p->request, deadline,
      [this, p, c, conn](BackendAnswer a) { on_answer(p, c, conn, std::move(a)); }, started);
}

void Forwarder::Impl::on_answer(std::shared_ptr<Pending> p, size_t c,
                                std::shared_ptr<BackendConnection> conn, BackendAnswer a) {
  const std::shared_ptr<Pending> kept = p;  // `p` may be handed on to a retry
  take_answer(std::move(p), c, std::move(conn), std::move(a));
  settle_row(kept);
}

void Forwarder::Impl::take_answer(std::shared_ptr<Pending> p, size_t c,
                                  std::shared_ptr<BackendConnection> conn, BackendAnswer a) {
  Backend& b = backends[p->copies[c].backend];
  --b.outstanding;
  b.in_use.erase(conn);
  p->copies[c].done = true;
  p->copies[c].ended_at = since_start();
  if (a.failure == BackendFailure::None) {
    ++b.answered;
    if (conn->connected() && b.up && !stopping && b.idle.size() < kMaxIdlePerBackend)
      b.idle.push_back(std::move(conn));
  }
  if (settle_copy(*p, c, a)) return;  // a losing copy, or one this front end cancelled
  if (a.failure == BackendFailure::None) {
    HttpResponse r;
    r.status = int(a.status);
    r.content_type = a.content_type.empty() ? "application/octet-stream" : a.content_type;
    r.body = std::move(a.body);
    r.headers = std::move(a.headers);
    r.headers.emplace_back("x-servelab-backend", b.name);
    if (!p->request_id.empty())  // with backups: which copy answered
      r.headers.emplace_back("x-servelab-copy", p->copies[c].backup ? "backup" : "first");
    ++answered;
    won_by(p, c);
    return answer(*p, std::move(r));
  }
  ++b.failures[size_t(a.failure)];
  if (stopping) return fail(*p, 503, "the front end is stopping");
  if (a.failure == BackendFailure::TooLarge) {
    return fail(*p, 502, "backend " + b.name + "'s answer is larger than " +
                             std::to_string(options.max_answer_bytes) + " bytes");
  }
  mark_down(b, std::string(failure_name(a.failure)) + ": " + a.error);
  p->last_failure = std::move(a);
  if (other_copy_alive(*p, c)) return;  // a backup still runs: its answer is the request's
  ++retries;
  attempt(std::move(p));
}

void Forwarder::Impl::fail(Pending& p, int status, const std::string& message) {
  ++failed;
  answer(p, error_response(status, message));
}

void Forwarder::Impl::answer(Pending& p, HttpResponse r) {
  server::Reply reply = std::move(p.reply);
  p.reply = nullptr;
  p.answered = true;
  if (p.backup_timer) p.backup_timer->cancel();
  if (!p.request_id.empty())  // tied: its copies' row is kept under this number
    r.headers.emplace_back("x-servelab-route-seq", std::to_string(p.id));
  held.fetch_sub(1);
  if (reply) reply(std::move(r));
}

std::shared_ptr<BackendConnection> Forwarder::Impl::connection(Backend& b) {
  while (!b.idle.empty()) {
    auto c = std::move(b.idle.back());
    b.idle.pop_back();
    if (c->connected()) return c;
  }
  return std::make_shared<BackendConnection>(ex, b.endpoint, options.max_answer_bytes);
}

void Forwarder::Impl::mark_down(Backend& b, const std::string& reason) {
  b.down_reason = reason;
  if (!b.up) return;
  b.up = false;
  ++b.marked_down;
  log("backend " + b.name + " marked down (" + reason + ")");
  for (auto& c : b.idle) c->close();
  b.idle.clear();
  schedule_probe(uint32_t(&b - backends.data()));
}

void Forwarder::Impl::schedule_probe(uint32_t bi) {
  Backend& b = backends[bi];
  if (stopping) return;
  b.probe_timer->expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.probe_interval_s)));
  b.probe_timer->async_wait([this, bi](boost::system::error_code ec) {
    if (!ec) probe(bi);
  });
}

// GET /health on a connection of its own: 200 marks the backend up, anything else keeps it
// down (asked again after probe_interval_s).
void Forwarder::Impl::probe(uint32_t bi) {
  if (stopping) return;
  Backend& b = backends[bi];
  if (b.up) return;  // brought up meanwhile
  auto req = std::make_shared<BackendRequest>(beast_http::verb::get, "/health", 11);
  req->set(beast_http::field::host, b.name);
  req->keep_alive(false);
  auto conn = std::make_shared<BackendConnection>(ex, b.endpoint, 64 * 1024);
  b.in_use.insert(conn);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.probe_interval_s));
  conn->send(req, deadline, [this, bi, conn](BackendAnswer a) {
    Backend& b = backends[bi];
    b.in_use.erase(conn);
    b.probed = true;
    if (a.failure == BackendFailure::None && a.status == 200) {
      if (!b.up) log("backend " + b.name + " is up");
      b.up = true;
      b.down_reason.clear();
      return;
    }
    b.up = false;
    b.down_reason = a.failure == BackendFailure::None
                        ? "/health answered " + std::to_string(a.status)
                        : std::string(failure_name(a.failure)) + ": " + a.error;
    schedule_probe(bi);
  });
}

}  // namespace servelab::route
