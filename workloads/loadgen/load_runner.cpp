// run_load: the open and closed loops over keep-alive connections on one Asio thread.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/version.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <stdexcept>

#include "workloads/loadgen/connection.h"
#include "workloads/loadgen/loadgen.h"

namespace servelab::loadgen {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using detail::Connection;
using detail::Exchange;
using detail::Request;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

RequestStatus status_of(const Exchange& e) {
  if (e.timed_out) return RequestStatus::Timeout;
  switch (e.status) {
    case 200: return RequestStatus::Ok;
    case 503: return RequestStatus::Rejected;
    case 504:  // the server's answer says whether it dropped a late request
      return e.body.find("\"status\":\"dropped\"") != std::string::npos ? RequestStatus::Dropped
                                                                        : RequestStatus::Timeout;
    default: return RequestStatus::Failed;
  }
}

// State shared by both loops; lives on run_load's stack while the io_context runs.
struct Run {
  const LoadOptions& options;
  const workloads::Workload& workload;
  asio::io_context io;
  tcp::resolver::results_type endpoints;
  // One prepared request per model, or per (model, image) with labelled images: model m,
  // image k at m * images + k.
  std::vector<Request> requests;
  results::RunRecords records;
  LoadStats stats;
  Clock::time_point t0;

  Run(const LoadOptions& o, const workloads::Workload& w) : options(o), workload(w) {}
  double now() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
  size_t images() const { return std::max<size_t>(1, options.labelled.size()); }
  const Request& request_for(size_t i) const {
    return requests[workload.models[i] * images() + i % images()];
  }

  void sent(size_t i) { records.requests[i].arrival = now(); }
  void completed(size_t i, const Exchange& e) {
    auto& r = records.requests[i];
    r.finish = now();
    r.status = status_of(e);
    if (r.status == RequestStatus::Ok) {
      apply_server_timing(e.body, r);
      if (!options.labelled.empty())
        r.accuracy = answer_label(e.body) == options.labelled[i % images()].label ? 1.0 : 0.0;
    }
    if (!e.error.empty() && !e.timed_out && stats.first_error.empty()) stats.first_error = e.error;
    if (e.route_seq >= 0) {
      if (stats.route_seq.empty()) stats.route_seq.assign(records.requests.size(), -1);
      stats.route_seq[i] = e.route_seq;
    }
  }
  std::shared_ptr<Connection> connection() {
    return std::make_shared<Connection>(io, endpoints, &stats.connections, &stats.retries);
  }
};

// Sends each request at its scheduled time, on an idle connection or a new one.
class OpenLoop {
 public:
  explicit OpenLoop(Run& run) : run_(run), timer_(run.io) {}
  void start() { arm(); }
  double lag_sum() const { return lag_sum_; }

 private:
  void arm() {
    if (next_ >= run_.workload.send_times.size()) return;
    timer_.expires_at(run_.t0 + seconds(run_.workload.send_times[next_]));
    timer_.async_wait([this](boost::system::error_code) { fire(); });
  }
  void fire() {
    const auto& times = run_.workload.send_times;
    const double now = run_.now();
    while (next_ < times.size() && times[next_] <= now) issue(next_++);
    arm();
  }
  void issue(size_t i) {
    if (!idle_.empty()) {
      Connection* c = idle_.back();
      idle_.pop_back();
      start(c, i);
    } else if (connections_.size() < run_.options.max_connections) {
      connections_.push_back(run_.connection());
      start(connections_.back().get(), i);
    } else {
      pending_.push_back(i);  // every connection busy: sent late, the lag is reported
    }
  }
  void start(Connection* c, size_t i) {
    run_.sent(i);
    const double lag = run_.records.requests[i].arrival - run_.workload.send_times[i];
    lag_sum_ += lag;
    run_.stats.send_lag_max = std::max(run_.stats.send_lag_max, lag);
    c->send(run_.request_for(i), run_.options.timeout, [this, c, i](const Exchange& e) {
      run_.completed(i, e);
      if (pending_.empty()) {
        idle_.push_back(c);
      } else {
        const size_t j = pending_.front();
        pending_.pop_front();
        start(c, j);
      }
    });
  }

  Run& run_;
  asio::steady_timer timer_;
  size_t next_ = 0;
  std::vector<std::shared_ptr<Connection>> connections_;
  std::vector<Connection*> idle_;
  std::deque<size_t> pending_;
  double lag_sum_ = 0;
};

// `concurrency` clients, each: think, send, wait for the response, repeat; in queries
// (Workload::samples_per_query) all of them together, the next query when all have answered.
class ClosedLoop {
 public:
  explicit ClosedLoop(Run& run) : run_(run) {
    const size_t n = std::min<size_t>(run.workload.concurrency, run.workload.models.size());
    for (size_t s = 0; s < n; ++s)
      clients_.push_back(std::make_unique<Client>(Client{run.connection(), asio::steady_timer(run.io)}));
  }
  // Opens the clients' connections (if pre-connecting), then calls `ready`.
  void prepare(std::function<void()> ready) {
    if (!run_.options.preconnect || clients_.empty()) return ready();
    ready_ = std::move(ready);
    for (auto& c : clients_)
      c->connection->open(run_.options.timeout, [this](const Exchange&) {
        // A failed open is retried by the first send, which reports the error per request.
        if (++opened_ == clients_.size()) ready_();
      });
  }
  void start() { start_query(); }

 private:
  struct Client {
    std::shared_ptr<Connection> connection;
    asio::steady_timer timer;
  };
  // Every client sends its next request: the whole loop at the start, one query in queries.
  void start_query() {
    query_unanswered_ = clients_.size();
    for (auto& c : clients_) step(*c);
  }
  // An answer came back to `c`: it sends again, or in queries the last answer of a query
  // starts the next.
  void answered(Client& c) {
    if (run_.workload.samples_per_query == 0) return step(c);
    if (--query_unanswered_ == 0) start_query();
  }
  void step(Client& c) {
    if (next_ >= run_.workload.models.size()) return;
    const size_t i = next_++;
    const auto& think = run_.workload.think_times;
    if (i < think.size() && think[i] > 0) {
      c.timer.expires_after(seconds(think[i]));
      c.timer.async_wait([this, &c, i](boost::system::error_code) { send(c, i); });
    } else {
      send(c, i);
    }
  }
  void send(Client& c, size_t i) {
    run_.sent(i);
    c.connection->send(run_.request_for(i), run_.options.timeout, [this, &c, i](const Exchange& e) {
      run_.completed(i, e);
      answered(c);
    });
  }

  Run& run_;
  std::vector<std::unique_ptr<Client>> clients_;
  size_t next_ = 0, opened_ = 0;
  size_t query_unanswered_ = 0;  // in queries: this query's requests not answered yet
  std::function<void()> ready_;
};

void check_inputs(const LoadOptions& o, const workloads::Workload& w) {
  if (o.model_names.empty()) throw std::invalid_argument("load: no model names given");
  for (uint32_t m : w.models)
    if (m >= o.model_names.size())
      throw std::invalid_argument("load: the workload uses model index " + std::to_string(m) +
                                  " but only " + std::to_string(o.model_names.size()) +
                                  " model names were given");
  if (!w.closed_loop && w.send_times.size() != w.models.size())
    throw std::invalid_argument("load: open-loop workload has " +
                                std::to_string(w.send_times.size()) + " send times for " +
                                std::to_string(w.models.size()) + " requests");
  if (w.closed_loop && w.concurrency == 0)
    throw std::invalid_argument("load: closed-loop workload with concurrency 0");
  if (!(o.timeout > 0)) throw std::invalid_argument("load: timeout must be positive");
  if (o.max_connections == 0) throw std::invalid_argument("load: max_connections must be >= 1");
}

// Seconds as X-SLO-Ms's milliseconds, the shortest digits that read back the same.
std::string slo_ms_text(double slo) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, slo * 1e3).ptr;
  return std::string(buf, end);
}

}  // namespace

results::RunRecords run_load(const LoadOptions& options, const workloads::Workload& workload,
                             LoadStats* stats) {
  check_inputs(options, workload);
  const Url url = parse_url(options.url);
  Run run(options, workload);
  boost::system::error_code ec;
  run.endpoints = tcp::resolver(run.io).resolve(url.host, url.port, ec);
  if (ec) throw std::invalid_argument("load: cannot resolve '" + url.host + "': " + ec.message());

  for (uint32_t m = 0; m < options.model_names.size(); ++m) {
    const std::string& name = options.model_names[m];
    const std::optional<double> slo = options.slo_of(m);
    for (size_t k = 0; k < run.images(); ++k) {
      const LabelledBody* image = options.labelled.empty() ? nullptr : &options.labelled[k];
      Request r{detail::http::verb::post, url.prefix + "/classify/" + name, 11};
      r.set(detail::http::field::host, url.host + ":" + url.port);
      r.set(detail::http::field::user_agent, "servelab-load");
      r.set(detail::http::field::content_type, image ? image->content_type : options.content_type);
      if (options.send_slo && slo) r.set("X-SLO-Ms", slo_ms_text(*slo));
      r.keep_alive(true);
      r.body() = image ? image->body : options.body;
      r.prepare_payload();
      run.requests.push_back(std::move(r));
    }
  }
  run.records.model_names = options.model_names;
  run.records.slo = options.slo;
  run.records.warmup = workload.warmup;
  run.records.requests.resize(workload.models.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 0; i < workload.models.size(); ++i) {
    auto& r = run.records.requests[i];
    r.id = i;
    r.model = workload.models[i];
    r.dispatch = r.start = nan;
    if (const std::optional<double> slo = options.slo_of(r.model)) r.slo = *slo;
  }

  auto begin = [&run, &options] {
    if (options.before_start) options.before_start();
    run.t0 = Clock::now();
  };
  double lag_sum = 0;
  const double cpu0 = thread_cpu_seconds();
  if (workload.closed_loop) {
    ClosedLoop loop(run);
    loop.prepare([&] {
      begin();
      loop.start();
    });
    run.io.run();
  } else {
    OpenLoop loop(run);
    begin();
    loop.start();
    run.io.run();
    lag_sum = loop.lag_sum();
  }
  run.stats.client_cpu_s = thread_cpu_seconds() - cpu0;
  if (!workload.closed_loop && !workload.send_times.empty())
    run.stats.send_lag_mean = lag_sum / static_cast<double>(workload.send_times.size());
  if (stats) *stats = run.stats;
  return std::move(run.records);
}

}  // namespace servelab::loadgen
