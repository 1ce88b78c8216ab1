// The time limit of one HTTP connection's current phase (reading a request, writing a
// response, draining), checked by one timer that ticks while the connection lives.
//
// Why not Beast's tcp_stream expiry: it arms and cancels a timer around every read_some and
// write_some (several per request: reactor lock, timer heap, and a cancelled handler run each
// time), which cost ~3 us of CPU per request, about a tenth of the whole server's. Here a
// phase change only stores a time point; the cost is one tick per connection per period.
// A limit is enforced within `period` after it passes.
//
// Thread-safety: every method and the expiry callback run on the connection's strand (the
// timer is built on its executor); none may be called from another thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace servelab::server {

class ConnectionDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  ConnectionDeadline(const boost::asio::any_io_executor& strand, Clock::duration period)
      : timer_(strand), period_(period) {}

  // Starts ticking; `on_expired` runs (on the strand) once a set limit has passed, and the
  // ticking stops; `on_tick` (optional) runs at every tick before the check. Call once. The
  // pending tick holds `owner` (the connection, which holds this object) until stop() or the
  // io_context's end, so no tick outlives its object.
  void start(std::shared_ptr<void> owner, std::function<void()> on_expired,
             std::function<void()> on_tick = nullptr);
  // The current phase must end within `limit` from now.
  void expires_after(Clock::duration limit) { deadline_ = Clock::now() + limit; }
  // The current phase has no limit (e.g. the engine bounds the wait).
  void expires_never() { deadline_ = Clock::time_point::max(); }
  // Stops ticking (the connection closes). Idempotent.
  void stop();

 private:
  void tick(std::shared_ptr<void> owner);

  boost::asio::steady_timer timer_;
  Clock::duration period_;
  Clock::time_point deadline_ = Clock::time_point::max();
  std::function<void()> on_expired_;
  std::function<void()> on_tick_;
  bool stopped_ = false;
};

}  // namespace servelab::server
