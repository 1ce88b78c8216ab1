// Forwarder's state, shared by forwarder.cpp (start, stop, reports) and
// forwarder_requests.cpp (forwarding, failures, probes). Everything below but `held` is used
// on the forwarder's thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
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

// One client request while the forwarder holds it.
struct Pending {
  uint64_t id = 0;
  ModelId model = 0;
  std::string model_name;
  const std::vector<uint32_t>* hosts = nullptr;  // its model's backends; null: all
  std::shared_ptr<BackendRequest> request;
  server::Reply reply;
  std::vector<uint32_t> tried;  // backends sent to, in order
  BackendAnswer last_failure;   // of the last backend tried
};

struct Forwarder::Impl {
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxIdlePerBackend = 256;
  static constexpr size_t kMaxModelNames = 4096;

  ForwarderOptions options;
  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::thread thread;
  std::atomic<size_t> held{0};
  std::vector<Backend> backends;
  std::unique_ptr<Router> router;
  std::vector<ServerView> views;  // scratch
  std::unordered_map<std::string, ModelId> model_ids;
  Clock::time_point started = Clock::now();
  uint64_t next_id = 0;
  bool stopping = false;
  uint64_t rejected_full = 0, no_backend = 0, retries = 0, answered = 0, failed = 0;

  // forwarder_requests.cpp
  void begin(std::string model, server::HttpRequest req, server::Reply reply);
  void attempt(std::shared_ptr<Pending> p);
  void on_answer(std::shared_ptr<Pending> p, uint32_t b,
                 std::shared_ptr<BackendConnection> conn, BackendAnswer a);
  void answer(Pending& p, server::HttpResponse r);
  void fail(Pending& p, int status, const std::string& message);
  void mark_down(Backend& b, const std::string& reason);
  void probe(uint32_t b);
  void schedule_probe(uint32_t b);
  std::shared_ptr<BackendConnection> connection(Backend& b);
  ModelId model_id(const std::string& name);
  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }
};

}  // namespace servelab::route
