// RequestIds: the requests in flight with a client-chosen id, and their cancels.
#include "engine/server/request_ids.h"

#include <sstream>
#include <utility>

namespace servelab::server {

std::optional<std::string> request_id_problem(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes)
    return "a request id is 1.." + std::to_string(kMaxRequestIdBytes) + " characters";
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return "a request id has only the characters A-Z a-z 0-9 . _ : -";
  }
  return std::nullopt;
}

std::optional<std::string> parse_request_id(const HttpRequest& req) {
  const std::string* v = req.header("x-request-id");
  if (!v) return std::nullopt;
  if (auto why = request_id_problem(*v))
    throw HttpError(400, "X-Request-Id '" + echo_value(*v, 32) + "' is refused: " + *why);
  return *v;
}

void RequestIds::Entry::started() {
  std::lock_guard<std::mutex> lock(mu);
  running = true;
}

void RequestIds::Entry::set_cancel(std::function<void()> f) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!cancelled) {
      cancel = std::move(f);
      return;
    }
  }
  f();  // a cancel came between the listing and the request's acceptance
}

const char* RequestIds::name(Cancel c) {
  switch (c) {
    case Cancel::Removed: return "removed";
    case Cancel::Discarded: return "discarded";
    case Cancel::Already: return "already_cancelled";
    case Cancel::Unknown: return "unknown";
  }
  return "unknown";
}

std::shared_ptr<RequestIds::Entry> RequestIds::add(const std::string& id, int* status,
                                                   std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ids_.count(id)) {
    ++refused_;
    *status = 409;
    *why = "a request with X-Request-Id '" + id + "' is in flight already";
    return nullptr;
  }
  if (ids_.size() >= max_ids_) {
    ++refused_;
    *status = 503;
    *why = "the server holds " + std::to_string(max_ids_) +
           " requests with an X-Request-Id already";
    return nullptr;
  }
  auto entry = std::make_shared<Entry>();
  ids_.emplace(id, entry);
  return entry;
}

void RequestIds::finished(const std::string& id, const std::shared_ptr<Entry>& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(id);
  if (it != ids_.end() && it->second == entry) ids_.erase(it);
}

RequestIds::Cancel RequestIds::cancel(const std::string& id) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(id);
    if (it == ids_.end()) {
      ++cancels_[size_t(Cancel::Unknown)];
      return Cancel::Unknown;
    }
    entry = it->second;
  }
  Cancel outcome;
  std::function<void()> f;
  {
    std::lock_guard<std::mutex> lock(entry->mu);
    if (entry->cancelled) {
      outcome = Cancel::Already;
    } else {
      entry->cancelled = true;
      outcome = entry->running ? Cancel::Discarded : Cancel::Removed;
      f = std::move(entry->cancel);
    }
  }
  if (f) f();  // the engine's cancel: off every lock of ours
  std::lock_guard<std::mutex> lock(mu_);
  ++cancels_[size_t(outcome)];
  return outcome;
}

size_t RequestIds::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ids_.size();
}

std::string RequestIds::metrics_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream o;
  o << "# HELP servelab_request_cancels_total DELETE /requests/{id} by outcome: removed "
       "(queued), discarded (running), already_cancelled, unknown (or answered already)\n"
       "# TYPE servelab_request_cancels_total counter\n";
  for (size_t c = 0; c < cancels_.size(); ++c)
    o << "servelab_request_cancels_total{result=\"" << name(Cancel(c)) << "\"} " << cancels_[c]
      << "\n";
  o << "# TYPE servelab_request_ids gauge\nservelab_request_ids " << ids_.size() << "\n";
  o << "# TYPE servelab_request_ids_refused_total counter\nservelab_request_ids_refused_total "
    << refused_ << "\n";
  return o.str();
}

}  // namespace servelab::server
