// Backup requests and cross-server cancellation ("The Tail at Scale"'s tied requests, DLIS's
// backup requests; docs/cluster.md). Every copy of a request carries one X-Request-Id and
// X-Servelab-Notify-Start: 1, so its server answers "102 Processing" when the copy leaves its
// queue. A request neither answered nor started after the backup delay gets a second copy on
// another host of its model. The first copy to start has the others cancelled on their
// servers (DELETE /requests/{id}); the first answer is the request's, and later ones are
// discarded. Runs on the forwarder's thread (forwarder_impl.h).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/route/http/forwarder_impl.h"

namespace servelab::route {

void LatencyWindow::add(double s, double p) {
  if (seconds.size() < kSize) {
    seconds.push_back(s);
  } else {
    seconds[next] = s;
    next = (next + 1) % kSize;
  }
  if (seconds.size() < kMinSamples) return;
  if (percentile >= 0 && ++since_recompute < kRecomputeEvery) return;
  since_recompute = 0;
  std::vector<double> sorted = seconds;
  const size_t rank = size_t(p / 100 * double(sorted.size() - 1));
  std::nth_element(sorted.begin(), sorted.begin() + ptrdiff_t(rank), sorted.end());
  percentile = sorted[rank];
}

void Forwarder::Impl::tie(Pending& p) {
  if (id_prefix.empty()) {  // this front end's own ids, so two front ends never collide
    std::random_device rd;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%08x%08x", rd(), rd());
    id_prefix = std::string("route-") + hex + "-";
  }
  p.request_id = id_prefix + std::to_string(p.id);
  p.request->set("X-Request-Id", p.request_id);
  p.request->set("X-Servelab-Notify-Start", "1");
  ++unsettled;
}

void Forwarder::Impl::arm_backup(std::shared_ptr<Pending> p) {
  double delay = options.backup_after_s;
  if (options.backup_percentile > 0) {
    auto it = latencies.find(p->model);
    if (it != latencies.end() && it->second.percentile >= 0) delay = it->second.percentile;
  }
  if (delay < 0) return;  // a percentile without enough answers yet, and no static delay
  p->backup_timer = std::make_unique<boost::asio::steady_timer>(ex);
  p->backup_timer->expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay)));
  p->backup_timer->async_wait([this, p](boost::system::error_code ec) {
    if (!ec) send_backup(p);
  });
}

void Forwarder::Impl::send_backup(std::shared_ptr<Pending> p) {
  if (p->answered || stopping) return;
  // A tied request whose copy runs already: a backup could only be cancelled at once. A
  // hedged one (no cancellation) goes all the same, as "The Tail at Scale" sends it.
  if (options.cancel_copies && p->first_started >= 0) {
    ++backups_skipped_started;
    return;
  }
  candidates(*p);
  if (views.empty()) {
    ++backups_no_host;
    return;
  }
  const double now = std::chrono::duration<double>(Clock::now() - started).count();
  size_t k = router->route(p->id, p->model, views, now);
  if (k >= views.size()) k = 0;
  p->copies.push_back({views[k].index, true});
  ++backups_sent;
  send_copy(p, p->copies.size() - 1);
}

void Forwarder::Impl::on_started(const std::shared_ptr<Pending>& p, size_t c) {
  p->copies[c].started = true;
  p->copies[c].started_at = since_start();
  if (p->answered || p->first_started >= 0) return;
  p->first_started = int(c);
  if (!options.cancel_copies) return;
  for (size_t i = 0; i < p->copies.size(); ++i)
    if (i != c && !p->copies[i].done && !p->copies[i].cancelled) cancel_copy(p, i);
}

// On a connection of its own: the copy's is busy waiting for the copy's answer.
void Forwarder::Impl::cancel_copy(const std::shared_ptr<Pending>& p, size_t c, int attempt) {
  p->copies[c].cancelled = true;
  ++p->cancels_in_flight;
  if (attempt == 0) ++cancels_sent;
  const uint32_t bi = p->copies[c].backend;
  Backend& b = backends[bi];
  auto req = std::make_shared<BackendRequest>(beast_http::verb::delete_,
                                              "/requests/" + p->request_id, 11);
  req->set(beast_http::field::host, b.name);
  req->keep_alive(true);
  req->prepare_payload();
  auto conn = connection(b);
  b.in_use.insert(conn);
  const auto timeout = std::chrono::duration<double>(options.backend_timeout_s);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  conn->send(req, deadline, [this, p, c, attempt, bi, conn](BackendAnswer a) mutable {
    Backend& b = backends[bi];
    b.in_use.erase(conn);
    if (a.failure == BackendFailure::None && conn->connected() && b.up && !stopping &&
        b.idle.size() < kMaxIdlePerBackend)
      b.idle.push_back(std::move(conn));
    --p->cancels_in_flight;
    bool cancelled = false;
    if (a.failure == BackendFailure::None && a.status == 200) {
      const auto j = nlohmann::json::parse(a.body, nullptr, false);
      cancelled = j.is_object() && j.value("cancelled", false);
    }
    if (!cancelled && a.status == 404 && !p->copies[c].done && attempt == 0 && !stopping) {
      ++cancels_resent;  // the copy is on its way into the server still: ask again soon
      ++p->cancels_in_flight;  // the second ask is awaited from now
      auto timer = std::make_shared<boost::asio::steady_timer>(ex, std::chrono::milliseconds(20));
      timer->async_wait([this, p, c, timer](boost::system::error_code ec) {
        --p->cancels_in_flight;
        if (ec || p->copies[c].done || stopping) {
          if (!ec) ++cancels_missed;
          return settle_row(p);
        }
        cancel_copy(p, c, 1);
      });
      return;
    }
    ++(cancelled ? copies_cancelled : cancels_missed);  // missed: it had answered already
    p->copies[c].cancel_found = p->copies[c].cancel_found || cancelled;
    settle_row(p);
  });
}

bool Forwarder::Impl::other_copy_alive(const Pending& p, size_t c) const {
  for (size_t i = 0; i < p.copies.size(); ++i)
    if (i != c && !p.copies[i].done && !p.copies[i].cancelled) return true;
  return false;
}

bool Forwarder::Impl::settle_copy(Pending& p, size_t c, const BackendAnswer& a) {
  const bool answered_by_server = a.failure == BackendFailure::None;
  if (p.answered) {  // a loser: what it ran was for nothing
    if (p.copies[c].started || (answered_by_server && a.status != 499)) ++copies_wasted;
    return true;
  }
  // The 499 of a copy this front end cancelled: another copy is the request's.
  return answered_by_server && a.status == 499 && p.copies[c].cancelled &&
         other_copy_alive(p, c);
}

void Forwarder::Impl::won_by(const std::shared_ptr<Pending>& p, size_t c) {
  p->winner = int(c);
  if (p->request_id.empty()) return;  // no backups: nothing tied
  ++won[p->copies[c].backup ? 1 : 0];
  const double latency = std::chrono::duration<double>(Clock::now() - p->sent).count();
  if (options.backup_percentile > 0)
    latencies[p->model].add(latency, options.backup_percentile);
  for (size_t i = 0; i < p->copies.size(); ++i)  // the first answer wins: drop the rest
    if (i != c && !p->copies[i].done && !p->copies[i].cancelled && options.cancel_copies)
      cancel_copy(p, i);
}

void Forwarder::Impl::settle_row(const std::shared_ptr<Pending>& p) {
  if (p->request_id.empty() || p->row_kept || !p->answered || p->cancels_in_flight > 0) return;
  for (const Copy& c : p->copies)
    if (!c.done) return;
  p->row_kept = true;
  --unsettled;
  CopyRow row;
  for (size_t i = 0; i < p->copies.size(); ++i) {
    const Copy& c = p->copies[i];
    row.backup_sent = row.backup_sent || c.backup;
    row.copy_cancelled = row.copy_cancelled || c.cancel_found;
    if (int(i) != p->winner && c.started_at >= 0) row.wasted_s += c.ended_at - c.started_at;
  }
  if (p->winner >= 0) row.won_by = p->copies[size_t(p->winner)].backup ? 2 : 1;
  if (copy_rows.size() >= kMaxCopyRows) return void(++copy_rows_dropped);
  copy_rows.emplace(p->id, row);
}

void Forwarder::Impl::backup_metrics(std::ostream& o) const {
  auto counter = [&o](const char* name, uint64_t v) {
    o << "# TYPE " << name << " counter\n" << name << " " << v << "\n";
  };
  counter("servelab_route_backups_sent_total", backups_sent);
  o << "# TYPE servelab_route_backups_skipped_total counter\n"
    << "servelab_route_backups_skipped_total{reason=\"started\"} " << backups_skipped_started
    << "\nservelab_route_backups_skipped_total{reason=\"no_host\"} " << backups_no_host << "\n";
  counter("servelab_route_cancels_sent_total", cancels_sent);
  counter("servelab_route_copies_cancelled_total", copies_cancelled);
  counter("servelab_route_cancels_missed_total", cancels_missed);
  counter("servelab_route_cancels_resent_total", cancels_resent);
  counter("servelab_route_copies_wasted_total", copies_wasted);
  o << "# TYPE servelab_route_won_total counter\nservelab_route_won_total{copy=\"first\"} "
    << won[0] << "\nservelab_route_won_total{copy=\"backup\"} " << won[1] << "\n";
}

}  // namespace servelab::route
