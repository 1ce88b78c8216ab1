// Forwarder's state, shared by forwarder.cpp (start, stop, reports) and
// forwarder_requests.cpp (forwarding, failures, probes). Everything below but `held` and
// `closed` is used on the forwarder's strand only (`ex`, on the transport's io_context).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <ostream>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/route/http/backend_connection.h"
#include "engine/route/http/forwarder.h"
#include "engine/route/router.h"

namespace servelab::route {

struct Backend {
  BackendAddress address;
  std::string name;  // address.text()
  boost::asio::ip::tcp::endpoint endpoint;
  bool up = false;
  bool probed = false;      // the first probe's answer is in
  std::string down_reason;  // why it was last marked down
  uint64_t outstanding = 0;  // forwarded here, not yet answered
  uint64_t forwarded = 0, answered = 0, marked_down = 0;
  std::array<uint64_t, 5> failures{};  // by BackendFailure
  std::vector<std::shared_ptr<BackendConnection>> idle;  // keep-alive connections
  std::set<std::shared_ptr<BackendConnection>> in_use;    // sending (requests and probes)
  std::unique_ptr<boost::asio::steady_timer> probe_timer;
};

// One copy of a request on one backend: the first sent, a retry after a failure, a backup.
struct Copy {
  uint32_t backend = 0;
  bool backup = false;
  bool started = false;       // its server said it left the queue (102)
  bool cancelled = false;     // a cancel was sent to its server
  bool cancel_found = false;  // ... and found the copy there (queued or running)
  bool done = false;          // its answer or failure is in
  double started_at = -1, ended_at = -1;  // seconds since the forwarder started
};

// One client request while the forwarder holds it.
struct Pending {
  using Clock = std::chrono::steady_clock;
  uint64_t id = 0;
  ModelId model = 0;
  std::string model_name;
  const std::vector<uint32_t>* hosts = nullptr;  // its model's backends; null: all
  std::shared_ptr<BackendRequest> request;
  server::Reply reply;
  std::vector<uint32_t> tried;  // backends sent to, in order
  BackendAnswer last_failure;   // of the last backend tried
  // With backups: the copies' X-Request-Id, the copies in order, the first to start (-1:
  // none yet), the backup's timer, and when the request was first sent.
  std::string request_id;
  std::vector<Copy> copies;
  int first_started = -1;
  std::unique_ptr<boost::asio::steady_timer> backup_timer;
  Clock::time_point sent{};
  bool answered = false;  // the client has its answer; later copies are discarded
  int winner = -1;        // the copy whose answer the client got; -1: none (failed)
  uint32_t cancels_in_flight = 0;
  bool row_kept = false;  // its CopyRow is in Impl::copy_rows
};

// The latencies of a model's last answered requests, for a percentile backup delay.
struct LatencyWindow {
  static constexpr size_t kSize = 512, kMinSamples = 20, kRecomputeEvery = 16;
  std::vector<double> seconds;  // a ring of at most kSize
  size_t next = 0, since_recompute = 0;
  double percentile = -1;  // of the window at the last recompute; -1: too few samples
  void add(double s, double p);
};

struct Forwarder::Impl {
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxIdlePerBackend = 256;
  static constexpr size_t kMaxModelNames = 4096;

  using Executor = boost::asio::strand<boost::asio::io_context::executor_type>;

  explicit Impl(boost::asio::io_context& context) : context(context), ex(context.get_executor()) {}

  ForwarderOptions options;
  boost::asio::io_context& context;  // the transport's; run by its IO threads
  Executor ex;  // every handler of the forwarder runs here, one at a time
  bool running = false, stopped = false;  // by the owning thread: start() ran, stop() ran
  std::atomic<bool> closed{false};  // stop()'s closing of the connections has run
  std::atomic<size_t> held{0};
  std::vector<Backend> backends;
  std::unique_ptr<Router> router;
  std::vector<ServerView> views;  // scratch
  std::unordered_map<std::string, ModelId> model_ids;
  Clock::time_point started = Clock::now();
  uint64_t next_id = 0;
  bool stopping = false;
  uint64_t rejected_full = 0, no_backend = 0, retries = 0, answered = 0, failed = 0;
  // Backups (forwarder_copies.cpp).
  std::string id_prefix;  // of the copies' X-Request-Id: this front end's own
  std::unordered_map<ModelId, LatencyWindow> latencies;
  uint64_t backups_sent = 0, backups_skipped_started = 0, backups_no_host = 0;
  uint64_t cancels_sent = 0, copies_cancelled = 0, cancels_missed = 0, copies_wasted = 0;
  uint64_t cancels_resent = 0;
  std::array<uint64_t, 2> won{};  // by copy: the first sent (or its retry), the backup
  // Per tied request, once its copies are all settled: what its copies did, by request id
  // (Pending::id), until copy_rows() takes them; at most kMaxCopyRows, more are counted.
  static constexpr size_t kMaxCopyRows = size_t(1) << 22;
  std::unordered_map<uint64_t, CopyRow> copy_rows;
  uint64_t copy_rows_dropped = 0, unsettled = 0;

  // forwarder_requests.cpp
  void begin(std::string model, server::HttpRequest req, server::Reply reply);
  void attempt(std::shared_ptr<Pending> p);
  // The backends up, hosting p's model and not yet tried, into `views`.
  void candidates(const Pending& p);
  // Sends copy `c` of p (its backend in p.copies[c]).
  void send_copy(std::shared_ptr<Pending> p, size_t c);
  void on_answer(std::shared_ptr<Pending> p, size_t c,
                 std::shared_ptr<BackendConnection> conn, BackendAnswer a);
  void take_answer(std::shared_ptr<Pending> p, size_t c,
                   std::shared_ptr<BackendConnection> conn, BackendAnswer a);
  void answer(Pending& p, server::HttpResponse r);
  void fail(Pending& p, int status, const std::string& message);
  void mark_down(Backend& b, const std::string& reason);
  void probe(uint32_t b);
  void schedule_probe(uint32_t b);
  std::shared_ptr<BackendConnection> connection(Backend& b);
  ModelId model_id(const std::string& name);

  // forwarder_copies.cpp: backup requests and cross-server cancellation.
  bool backups() const { return options.backup_after_s >= 0 || options.backup_percentile > 0; }
  void tie(Pending& p);  // the copies' headers
  void arm_backup(std::shared_ptr<Pending> p);
  void send_backup(std::shared_ptr<Pending> p);
  void on_started(const std::shared_ptr<Pending>& p, size_t c);
  // DELETE /requests/{id} on copy c's server. A 404 while the copy is still in flight (the
  // cancel overtook the copy on its way into the server) is sent once more, a little later.
  void cancel_copy(const std::shared_ptr<Pending>& p, size_t c, int attempt = 0);
  // A copy's answer after p was answered, or a cancelled copy's 499: true when consumed.
  bool settle_copy(Pending& p, size_t c, const BackendAnswer& a);
  // Counts the win, records the latency, cancels the other copies.
  void won_by(const std::shared_ptr<Pending>& p, size_t c);
  bool other_copy_alive(const Pending& p, size_t c) const;
  // Once p is answered, every copy's answer is in and no cancel is awaited: keeps its row.
  void settle_row(const std::shared_ptr<Pending>& p);
  double since_start() const {
    return std::chrono::duration<double>(Clock::now() - started).count();
  }
  void backup_metrics(std::ostream& o) const;
  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }
};

}  // namespace servelab::route
