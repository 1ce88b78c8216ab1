// The real front end's forwarding: each classify or KServe v2 infer request goes to one of N
// backends (`servelab serve` processes), chosen by a router of the shared registry
// (engine/route/router.h) among the backends that are up and host the request's model. It
// holds at most `max_held` requests at once; one more is answered 503 at once, before
// anything is forwarded. A backend that refuses, breaks a connection or gives no answer within
// `backend_timeout_s` is marked down and the request is sent to another backend that is up,
// hosts the model and was not yet tried; a down backend's GET /health is asked every
// `probe_interval_s` and a 200 marks it up again. No request waits for ever: every one is
// answered (the backend's answer, or 404/502/503/504). With backups (backup_after_s,
// backup_percentile) a slow request gets a second copy on another host; the copies are tied:
// each carries X-Request-Id and asks its server to say when it starts (a 102 answer), and the
// first to start has the other cancelled.
// Thread-safety: forward(), metrics_text() and backends_json() from any thread; all backend
// state lives on the forwarder's one thread. start()/stop() from the owning thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/control/policy_params.h"
#include "engine/route/http/backend_list.h"
#include "engine/server/http_message.h"

namespace boost::asio {
class io_context;
}

namespace servelab::route {

struct ForwarderOptions {
  std::vector<BackendAddress> backends;
  PolicySpec router{"least-outstanding", {}};
  // Which backends (indices into `backends`) host each model (a placement,
  // engine/route/placement.h); a request goes only to its model's hosts, and a model not
  // listed is answered 404. Empty: every model on every backend.
  std::map<std::string, std::vector<uint32_t>> hosts;
  uint64_t seed = 1;                    // the router's random stream
  size_t max_held = 1024;               // requests held at once; one more: 503
  double backend_timeout_s = 30;        // no whole answer within this: the backend is down
  double probe_interval_s = 1;          // a down backend is asked this often (also the
                                        // probe's own timeout)
  size_t max_answer_bytes = 256u << 20; // a larger answer fails (502)
  // Backup requests (DLIS; "The Tail at Scale"'s tied requests; docs/cluster.md): a request
  // neither answered nor started this long after it was sent goes again to another host of
  // its model. Negative: no static delay.
  double backup_after_s = -1;
  // In (0, 100): the delay is instead this percentile of the model's latency over the front
  // end's last answered requests (the static delay, or none, until enough are in). 0: off.
  double backup_percentile = 0;
  // With backups: the first copy to start has the other cancelled on its server
  // (DELETE /requests/{id}); the first answer wins either way and the other is discarded.
  bool cancel_copies = true;
  std::function<void(const std::string&)> log;  // state changes; may be empty
};

// What the copies of one tied request (backups on) did, for its per-request row: whether a
// backup was sent, which copy's answer the client got (0 none, 1 the first sent, 2 a
// backup), whether a cancel found the other copy on its server, and the seconds losing
// copies ran on their servers for nothing (from their start notice to their end, as this
// front end saw them).
struct CopyRow {
  bool backup_sent = false;
  uint8_t won_by = 0;
  bool copy_cancelled = false;
  double wasted_s = 0;
};

// The rows settled since the last call, by the request's sequence number (the answer's
// X-Servelab-Route-Seq header), the tied requests not yet settled (a losing copy still
// running), and the rows not kept (over the forwarder's bound).
struct CopyRows {
  std::unordered_map<uint64_t, CopyRow> rows;
  uint64_t unsettled = 0, dropped = 0;
};

class Forwarder {
 public:
  // Resolves every backend and makes the router. Throws std::invalid_argument naming the
  // backend that cannot be resolved, or two names of one address; ConfigError for the router.
  // Its sockets, timers and handlers run on a strand of `context` (the transport's, so that a
  // request crosses no thread on its way through), which must outlive the forwarder.
  Forwarder(ForwarderOptions options, boost::asio::io_context& context);
  ~Forwarder();  // stop()s
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // Asks every backend's /health once, running the context on this thread until the answers
  // are in (at most probe_interval_s); call it before any other thread runs the context.
  // Returns the backends found down, with why; they are asked again every probe_interval_s.
  std::vector<std::pair<std::string, std::string>> start();
  // Closes every backend connection and answers each held request 503 (the front end is
  // stopping), waiting at most 2 s for those answers while the context runs (call it before
  // the transport stops, so that they reach the clients). Idempotent.
  void stop();

  // Forwards `req` (for model `model`) and calls `reply` once, from the forwarder's strand,
  // or at once from this thread when max_held requests are held.
  void forward(std::string model, server::HttpRequest req, server::Reply reply);
  // Prometheus text of the forwarder's counters; JSON of the backends (address, up,
  // outstanding, forwarded). `done` runs once on the forwarder's strand.
  void metrics_text(std::function<void(std::string)> done);
  void backends_json(std::function<void(std::string)> done);
  // Takes the copy rows settled so far (each is given once). `done` as metrics_text's.
  void copy_rows(std::function<void(CopyRows)> done);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::route
