#include "engine/server/connection_deadline.h"

namespace servelab::server {

void ConnectionDeadline::start(std::shared_ptr<void> owner, std::function<void()> on_expired,
                               std::function<void()> on_tick) {
  on_expired_ = std::move(on_expired);
  on_tick_ = std::move(on_tick);
  tick(std::move(owner));
}

void ConnectionDeadline::stop() {
  if (stopped_) return;
  stopped_ = true;
  timer_.cancel();
  on_expired_ = nullptr;
  on_tick_ = nullptr;
}

// Waits one period, or until the deadline when that comes first, then checks it.
void ConnectionDeadline::tick(std::shared_ptr<void> owner) {
  if (stopped_) return;
  if (on_tick_) on_tick_();
  if (stopped_) return;  // the tick closed the connection
  const Clock::time_point now = Clock::now();
  if (now >= deadline_) {
    auto expired = std::move(on_expired_);
    stop();
    if (expired) expired();
    return;
  }
  const Clock::time_point next = deadline_ - now < period_ ? deadline_ : now + period_;
  timer_.expires_at(next);
  timer_.async_wait([this, owner = std::move(owner)](const boost::system::error_code& ec) mutable {
    if (!ec) tick(std::move(owner));  // aborted: stop() ran; `owner` is released here
  });
}

}  // namespace servelab::server
