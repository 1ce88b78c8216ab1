// Forwarder: resolving the backends, start and stop, the hand-off of requests to its strand,
// and the reports (/metrics, /backends).
#include "engine/route/http/forwarder.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "engine/route/http/forwarder_impl.h"

namespace servelab::route {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

tcp::endpoint resolve(asio::io_context& io, const BackendAddress& a) {
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(a.host, std::to_string(a.port), ec);
  if (ec || results.empty())
    throw std::invalid_argument("backend " + a.text() + " cannot be resolved: " +
                                (ec ? ec.message() : "no address"));
  return results.begin()->endpoint();
}

}  // namespace

Forwarder::Forwarder(ForwarderOptions options, asio::io_context& context)
    : impl_(std::make_unique<Impl>(context)) {
  Impl& s = *impl_;
  if (options.backends.empty()) throw std::invalid_argument("no backends");
  if (!(options.backend_timeout_s > 0) || !(options.probe_interval_s > 0))
    throw std::invalid_argument("the backend timeout and probe interval must be positive");
  if (options.max_held == 0) throw std::invalid_argument("max_held must be at least 1");
  if (!(options.backup_percentile >= 0 && options.backup_percentile < 100))
    throw std::invalid_argument("the backup percentile must be in [0, 100)");
  s.options = std::move(options);
  s.router = make_router(s.options.router, s.options.seed);
  for (auto& [model, hosts] : s.options.hosts) {
    std::sort(hosts.begin(), hosts.end());
    if (hosts.empty() || hosts.back() >= s.options.backends.size())
      throw std::invalid_argument("model '" + model + "' must be hosted on backends 0.." +
                                  std::to_string(s.options.backends.size() - 1));
  }
  std::set<tcp::endpoint> endpoints;
  s.backends.reserve(s.options.backends.size());
  for (const BackendAddress& a : s.options.backends) {
    Backend b;
    b.address = a;
    b.name = a.text();
    b.endpoint = resolve(s.context, a);
    if (!endpoints.insert(b.endpoint).second)
      throw std::invalid_argument("backend " + b.name + " is the address of another backend (" +
                                  b.endpoint.address().to_string() + ":" +
                                  std::to_string(b.endpoint.port()) + ")");
    b.probe_timer = std::make_unique<asio::steady_timer>(s.ex);
    s.backends.push_back(std::move(b));
  }
}

Forwarder::~Forwarder() { stop(); }

std::vector<std::pair<std::string, std::string>> Forwarder::start() {
  Impl& s = *impl_;
  s.running = true;
  // No other thread runs the context yet: this one runs it until every backend's first probe
  // is answered (each bounded by its deadline), so state is read here directly.
  asio::post(s.ex, [&s] {
    for (uint32_t i = 0; i < s.backends.size(); ++i) s.probe(i);
  });
  auto all_probed = [&s] {
    return std::all_of(s.backends.begin(), s.backends.end(),
                       [](const Backend& b) { return b.probed; });
  };
  const auto limit = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(s.options.probe_interval_s + 1));
  while (!all_probed() && std::chrono::steady_clock::now() < limit) {
    if (s.context.stopped()) s.context.restart();
    s.context.run_for(std::chrono::milliseconds(10));
  }
  std::vector<std::pair<std::string, std::string>> down;
  for (const Backend& b : s.backends)
    if (!b.up) down.emplace_back(b.name, b.down_reason.empty() ? "no answer yet" : b.down_reason);
  return down;
}

void Forwarder::stop() {
  Impl& s = *impl_;
  if (!s.running || s.stopped) return;
  s.stopped = true;
  // Closing every connection fails what is in flight; with `stopping` set, each held request
  // is then answered 503 instead of being tried elsewhere.
  asio::post(s.ex, [&s] {
    s.stopping = true;
    for (Backend& b : s.backends) {
      b.probe_timer->cancel();
      for (auto& c : b.idle) c->close();
      b.idle.clear();
      for (auto& c : b.in_use) c->close();
    }
    s.closed = true;
  });
  // The transport's IO threads run those answers; this thread helps (the strand keeps the
  // forwarder's handlers one at a time), and runs them alone when the transport never started.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while ((!s.closed || s.held > 0) && std::chrono::steady_clock::now() < limit) {
    if (s.context.stopped()) break;  // the transport stopped first: nothing runs them now
    s.context.run_for(std::chrono::milliseconds(5));
  }
}

void Forwarder::forward(std::string model, server::HttpRequest req, server::Reply reply) {
  Impl& s = *impl_;
  if (s.held.fetch_add(1) >= s.options.max_held) {
    s.held.fetch_sub(1);
    asio::post(s.ex, [&s] { ++s.rejected_full; });
    reply(server::error_response(503, "the front end holds " +
                                          std::to_string(s.options.max_held) +
                                          " requests already (its queue is full)"));
    return;
  }
  asio::post(s.ex, [&s, model = std::move(model), req = std::move(req),
                    reply = std::move(reply)]() mutable {
    s.begin(std::move(model), std::move(req), std::move(reply));
  });
}

void Forwarder::metrics_text(std::function<void(std::string)> done) {
  Impl& s = *impl_;
  asio::post(s.ex, [&s, done = std::move(done)] {
    std::ostringstream o;
    o << "# TYPE servelab_route_held gauge\nservelab_route_held " << s.held.load() << "\n";
    o << "# TYPE servelab_route_answered_total counter\nservelab_route_answered_total "
      << s.answered << "\n";
    o << "# TYPE servelab_route_failed_total counter\nservelab_route_failed_total " << s.failed
      << "\n";
    o << "# TYPE servelab_route_rejected_full_total counter\nservelab_route_rejected_full_total "
      << s.rejected_full << "\n";
    o << "# TYPE servelab_route_no_backend_total counter\nservelab_route_no_backend_total "
      << s.no_backend << "\n";
    o << "# TYPE servelab_route_retries_total counter\nservelab_route_retries_total "
      << s.retries << "\n";
    o << "# TYPE servelab_route_backend_up gauge\n";
    for (const Backend& b : s.backends)
      o << "servelab_route_backend_up{backend=\"" << b.name << "\"} " << (b.up ? 1 : 0) << "\n";
    o << "# TYPE servelab_route_backend_outstanding gauge\n";
    for (const Backend& b : s.backends)
      o << "servelab_route_backend_outstanding{backend=\"" << b.name << "\"} " << b.outstanding
        << "\n";
    o << "# TYPE servelab_route_forwarded_total counter\n";
    for (const Backend& b : s.backends)
      o << "servelab_route_forwarded_total{backend=\"" << b.name << "\"} " << b.forwarded << "\n";
    o << "# TYPE servelab_route_backend_failures_total counter\n";
    for (const Backend& b : s.backends)
      for (size_t f = 1; f < b.failures.size(); ++f)
        o << "servelab_route_backend_failures_total{backend=\"" << b.name << "\",kind=\""
          << failure_name(BackendFailure(f)) << "\"} " << b.failures[f] << "\n";
    o << "# TYPE servelab_route_marked_down_total counter\n";
    for (const Backend& b : s.backends)
      o << "servelab_route_marked_down_total{backend=\"" << b.name << "\"} " << b.marked_down
        << "\n";
    s.backup_metrics(o);
    done(o.str());
  });
}

void Forwarder::copy_rows(std::function<void(CopyRows)> done) {
  Impl& s = *impl_;
  asio::post(s.ex, [&s, done = std::move(done)] {
    CopyRows out;
    out.rows.swap(s.copy_rows);
    out.unsettled = s.unsettled;
    out.dropped = s.copy_rows_dropped;
    done(std::move(out));
  });
}

void Forwarder::backends_json(std::function<void(std::string)> done) {
  Impl& s = *impl_;
  asio::post(s.ex, [&s, done = std::move(done)] {
    nlohmann::json list = nlohmann::json::array();
    for (const Backend& b : s.backends) {
      nlohmann::json j = {{"backend", b.name},      {"up", b.up},
                          {"outstanding", b.outstanding}, {"forwarded", b.forwarded},
                          {"answered", b.answered}, {"marked_down", b.marked_down}};
      if (!b.up) j["down_reason"] = b.down_reason;
      list.push_back(std::move(j));
    }
    done(nlohmann::json{{"router", s.options.router.name}, {"backends", list}}.dump());
  });
}

}  // namespace servelab::route
