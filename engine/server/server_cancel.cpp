// Requests with a client-chosen id (X-Request-Id) and their cancellation:
//   DELETE /requests/{id}   200 {"id", "cancelled": true, "was": "queued"|"running"}
//                           200 {"id", "cancelled": false, "was": "cancelled"} (a second cancel)
//                           404 unknown, or answered already
// A cancelled request's client is answered 499. A request that also carries
// X-Servelab-Notify-Start: 1 gets "102 Processing" with X-Servelab-Started: {id} when it
// leaves its queue: how `servelab route` learns which copy of a tied request started
// (docs/cluster.md).
#include <nlohmann/json.hpp>

#include "engine/server/server_impl.h"

namespace servelab::server {

HttpServer::Impl::Tracked HttpServer::Impl::track_request(const HttpRequest& req, Reply reply) {
  Tracked t;
  const std::optional<std::string> id = parse_request_id(req);
  const std::string* notify = req.header("x-servelab-notify-start");
  if (notify && *notify != "1")
    throw HttpError(400, "X-Servelab-Notify-Start must be 1 (got '" + echo_value(*notify, 16) +
                             "')");
  if (!id) {
    if (notify) throw HttpError(400, "X-Servelab-Notify-Start needs an X-Request-Id");
    t.reply = std::move(reply);
    return t;
  }
  int status = 0;
  std::string why;
  t.entry = request_ids.add(*id, &status, &why);
  if (!t.entry) throw HttpError(status, why);
  t.id = *id;
  t.reply = [this, id = *id, entry = t.entry, reply = std::move(reply)](HttpResponse r) {
    if (r.status >= 0) request_ids.finished(id, entry);  // -1: the answer comes later
    reply(std::move(r));
  };
  std::function<void(const HttpResponse&)> interim = notify ? req.interim : nullptr;
  t.on_dispatch = [entry = t.entry, id = *id, interim] {
    entry->started();
    if (!interim) return;
    HttpResponse started;
    started.status = 102;
    started.headers.emplace_back("X-Servelab-Started", id);
    interim(started);
  };
  return t;
}

void HttpServer::Impl::add_cancel_routes() {
  routes.add("DELETE", "/requests/{id}", [this](HttpRequest&, const PathParams& p, Reply reply) {
    const std::string& id = p.at("id");
    if (auto why = request_id_problem(id))
      return reply(error_response(400, "'" + echo_value(id, 32) + "' is not a request id: " +
                                           *why));
    const RequestIds::Cancel c = request_ids.cancel(id);
    if (c == RequestIds::Cancel::Unknown)
      return reply(error_response(404, "no request with X-Request-Id '" + id +
                                           "' is in flight (unknown, or answered already); "
                                           "nothing was cancelled"));
    const char* was = c == RequestIds::Cancel::Removed     ? "queued"
                      : c == RequestIds::Cancel::Discarded ? "running"
                                                           : "cancelled";
    const nlohmann::json j = {
        {"id", id}, {"cancelled", c != RequestIds::Cancel::Already}, {"was", was}};
    reply(json_response(200, j.dump()));
  });
}

}  // namespace servelab::server
