// Whether the client of a request in flight is still there. The transport fires it when the
// connection closes before the answer is written (the peer closed or reset it); a handler that
// queued work for the request registers what to undo then (a v2 batch cancels its items, so
// that a request whose client is gone is dropped before it runs).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <functional>
#include <mutex>
#include <utility>

namespace servelab::server {

class ClientGone {
 public:
  // Runs `f` once when the client goes: at once (on this thread) when it is gone already,
  // else on the thread that notices. One callback; a second replaces the first.
  void on_gone(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!gone_) {
        f_ = std::move(f);
        return;
      }
    }
    f();
  }

  // The transport: the client has gone. Runs the callback, once.
  void fire() {
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (gone_) return;
      gone_ = true;
      f = std::move(f_);
    }
    if (f) f();
  }

  bool gone() const {
    std::lock_guard<std::mutex> lock(mu_);
    return gone_;
  }

 private:
  mutable std::mutex mu_;
  bool gone_ = false;
  std::function<void()> f_;
};

}  // namespace servelab::server
