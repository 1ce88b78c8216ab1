// Requests in flight that carry a client-chosen id (the X-Request-Id header), so that a cancel
// (DELETE /requests/{id}) can find them, and the cancels counted for /metrics. A request is
// listed from its acceptance until its answer; a cancel never adds anything, so repeated or
// unknown cancels cost no memory. At most `max_ids` ids are in flight at once.
// Thread-safety: every method may be called from any thread; no callback runs under the lock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "engine/server/http_message.h"

namespace servelab::server {

// A request id: 1..kMaxRequestIdBytes of [A-Za-z0-9._:-]. The reason it is not, or nothing.
inline constexpr size_t kMaxRequestIdBytes = 128;
std::optional<std::string> request_id_problem(std::string_view id);

// The X-Request-Id of `req`: nothing when absent; HttpError 400 when it is not a request id.
std::optional<std::string> parse_request_id(const HttpRequest& req);

class RequestIds {
 public:
  // One listed request: whether it left its queue, and how to cancel it.
  class Entry {
   public:
    // The request left its queue (a worker runs it). Any thread, under the engine's lock.
    void started();
    // How to cancel the request; when a cancel came already, `cancel` runs at once.
    void set_cancel(std::function<void()> cancel);

   private:
    friend class RequestIds;
    std::mutex mu;
    bool running = false, cancelled = false;
    std::function<void()> cancel;
  };

  enum class Cancel { Removed, Discarded, Already, Unknown };  // queued, running, twice, none
  static const char* name(Cancel c);

  explicit RequestIds(size_t max_ids) : max_ids_(max_ids) {}

  // Lists `id`. Null when it is in flight already (the caller answers 409) or when max_ids
  // are (503); the reason in *why.
  std::shared_ptr<Entry> add(const std::string& id, int* status, std::string* why);
  // The request answered: unlisted (only this entry: a later request may reuse the id).
  void finished(const std::string& id, const std::shared_ptr<Entry>& entry);
  // Cancels `id`: queued, it leaves its queue; running, its result is discarded. Either way
  // its client is answered 499 by the engine's path. Counted by outcome.
  Cancel cancel(const std::string& id);

  size_t in_flight() const;
  std::string metrics_text() const;  // servelab_request_cancels_total, servelab_request_ids

 private:
  mutable std::mutex mu_;
  size_t max_ids_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> ids_;
  std::array<uint64_t, 4> cancels_{};  // by Cancel
  uint64_t refused_ = 0;               // duplicates and refusals for a full list
};

}  // namespace servelab::server
