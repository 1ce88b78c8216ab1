// Model groups (ensembles, Rafiki section 5) in the HTTP server: define, list, delete and
// restore groups, and classify through one. A group request fans out to the members its
// subset policy picks; each member runs as an ordinary request of that model (its own queue
// and batching in the engine), and the members that answered vote (group_answer.h).
// A model that is a member of a group cannot be deleted (409 naming the group); a group's
// name is never a model's name, so /classify/{name} means one or the other.
#include <nlohmann/json.hpp>
#include <span>

#include "engine/server/group_answer.h"
#include "engine/server/group_definition.h"
#include "engine/server/group_dispatch.h"
#include "engine/server/group_fanout.h"
#include "engine/server/json_text.h"
#include "engine/server/server_impl.h"

namespace servelab::server {
using nlohmann::json;

// A defined group and its subset policy, or its queue and dispatcher. The policy keeps
// scratch state and is not thread-safe: select() takes `mu`. Shared by the map and by
// requests in flight.
struct LiveGroup {
  GroupDefinition def;
  std::mutex mu;
  std::unique_ptr<SubsetPolicy> policy;
  std::shared_ptr<GroupDispatch> dispatch;  // with a dispatcher (def.dispatch)

  explicit LiveGroup(GroupDefinition d)
      : def(std::move(d)), policy(make_subset_policy(def.subset, def.members)) {}
  MemberMask select(std::span<const MemberView> views) {
    std::lock_guard<std::mutex> lock(mu);
    return policy->select(views);
  }
};

std::shared_ptr<LiveGroup> HttpServer::Impl::find_group(const std::string& name) {
  std::lock_guard<std::mutex> lock(groups_mu);
  auto it = groups.find(name);
  return it == groups.end() ? nullptr : it->second;
}

std::optional<std::string> HttpServer::Impl::unavailable_group(const std::string& name) {
  std::lock_guard<std::mutex> lock(groups_mu);
  auto it = unavailable_groups.find(name);
  if (it == unavailable_groups.end()) return std::nullopt;
  return it->second;
}

// The answer to a request naming a group that could not be restored.
HttpError group_not_restored(const std::string& name, const std::string& why, int status) {
  return HttpError(status, "group '" + name + "' is in the registry but could not be restored (" +
                               why + "): DELETE /groups/" + name + " frees its name");
}

std::string HttpServer::Impl::group_with_member(const std::string& model) {
  std::lock_guard<std::mutex> lock(groups_mu);
  for (const auto& [name, g] : groups) {
    for (const std::string& m : g->def.members)
      if (m == model) return name;
  }
  return "";
}

std::shared_ptr<LiveGroup> HttpServer::Impl::make_live_group(GroupDefinition def) {
  auto live = std::make_shared<LiveGroup>(def);
  if (def.dispatch.name.empty()) return live;
  PolicySpec spec = def.dispatch;
  if (spec.params.has("weights")) {  // a server-side file: only under --model-root
    try {
      spec.params.set("weights", server_side_path(spec.params.get_string("weights", "")));
    } catch (const StoreError& e) {  // one message whatever the reason (no probing)
      throw HttpError(400, "group '" + def.name + "': dispatch weights: " + e.what());
    }
  }
  const std::string name = def.name;
  try {
    live->dispatch =
        GroupDispatch::make(std::move(def), spec, *engine, group_pool, group_queue_limit,
                            group_expiry);
  } catch (const std::exception& e) {  // ConfigError, or an unreadable weights file
    throw HttpError(400, "group '" + name + "': dispatch: " + e.what());
  }
  return live;
}

// A group with a dispatcher: the image is prepared for every member now and waits in the
// group's queue until the dispatcher releases it.
static void queue_for_dispatch(runtime::Engine& engine, LiveGroup& group, const std::string& image,
                               const runtime::RequestOptions& ro, const Reply& reply,
                               const std::shared_ptr<ClientGone>& client) {
  runtime::Engine::Prepared prepared = engine.prepare_each(group.def.members, image);
  for (size_t k = 0; k < prepared.rc.size(); ++k) {
    if (prepared.rc[k] == 0) continue;
    const MemberAnswer a = member_refused(group.def.members[k], prepared.rc[k]);
    return reply(error_response(a.status, a.error));
  }
  const std::optional<double> slo = ro.slo ? ro.slo : engine.default_slo();
  const RequestId id = group.dispatch->arrive(std::move(prepared), slo, reply);
  if (id == 0) {
    return reply(
        error_response(503, "group '" + group.def.name + "' has too many queued requests"));
  }
  if (client)  // a client gone takes its queued group request with it
    client->on_gone([d = std::weak_ptr<GroupDispatch>(group.dispatch), id] {
      if (auto dispatch = d.lock()) dispatch->cancel(id);
    });
}

void HttpServer::Impl::classify_group(const std::shared_ptr<LiveGroup>& group,
                                      std::string image,
                                      const runtime::RequestOptions& ro, const Reply& reply,
                                      const std::shared_ptr<ClientGone>& client) {
  if (group->dispatch) return queue_for_dispatch(*engine, *group, image, ro, reply, client);
  const std::vector<std::string>& members = group->def.members;
  std::vector<MemberView> views(members.size());
  for (size_t k = 0; k < members.size(); ++k) {
    views[k].model = ModelId(k);
    if (auto st = engine->model(members[k])) views[k].queued = st->queued;
  }
  auto fan = std::make_shared<FanOut>();
  fan->owner = group;
  fan->def = &group->def;
  fan->asked = group->select(views);
  fan->reply = reply;
  fan->answers.resize(members.size());
  // The asked members, in member order; the engine decodes the image once for those that
  // prepare it alike.
  std::vector<std::string> asked;
  std::vector<size_t> member_of;  // asked[i] is members[member_of[i]]
  for (size_t k = 0; k < members.size(); ++k) {
    if (!(fan->asked >> k & 1)) continue;
    asked.push_back(members[k]);
    member_of.push_back(k);
  }
  fan->remaining = asked.size();
  std::vector<RequestId> ids;  // the members' queued requests, 0 for a refused one
  const std::vector<int> rc = engine->classify_each(
      asked, std::move(image), /*top_k=*/1,
      [fan, asked, member_of](size_t i, runtime::ClassifyResult r) {
        fan->done(member_of[i], member_answer(asked[i], r));
      },
      ro, &ids);
  for (size_t i = 0; i < asked.size(); ++i)
    if (rc[i] != 0) fan->done(member_of[i], member_refused(asked[i], rc[i]));
  std::erase(ids, RequestId(0));
  if (client && !ids.empty())  // a client gone takes its members' queued requests with it
    client->on_gone([this, ids] {
      for (RequestId id : ids) engine->cancel(id);
    });
}

HttpResponse HttpServer::Impl::create_group(const HttpRequest& req) {
  GroupDefinition def = parse_group_definition(req.body);
  std::lock_guard<std::mutex> lock(admin_mu);
  if (registry.find(def.name) || engine->model(def.name))
    throw HttpError(400, "group name '" + def.name + "' is the name of a registered model");
  if (find_group(def.name)) throw HttpError(409, "group '" + def.name + "' exists already");
  if (auto why = unavailable_group(def.name)) throw group_not_restored(def.name, *why, 409);
  for (const std::string& m : def.members) {
    if (find_group(m)) throw HttpError(400, "member '" + m + "' is a group, not a model");
    if (!registry.find(m) && !engine->model(m))
      throw HttpError(400, "member '" + m + "' is not a registered model");
  }
  json stored = group_definition_json(def);
  auto live = make_live_group(std::move(def));
  if (!registry.insert_group({live->def.name, json_text(stored), unix_seconds_now()}))
    throw HttpError(409, "group '" + live->def.name + "' exists already");
  {
    std::lock_guard<std::mutex> groups_lock(groups_mu);
    groups[live->def.name] = live;
  }
  log("defined group '" + live->def.name + "' (" + std::to_string(live->def.members.size()) +
      " members, " + (live->dispatch ? "dispatch " + live->def.dispatch.name
                                     : "subset " + live->def.subset.name) + ")");
  return json_response(201, json_text(stored));
}

HttpResponse HttpServer::Impl::delete_group(const std::string& name) {
  check_name(name);
  std::lock_guard<std::mutex> lock(admin_mu);
  bool in_registry = registry.remove_group(name);
  std::shared_ptr<LiveGroup> erased;
  {
    std::lock_guard<std::mutex> groups_lock(groups_mu);
    auto it = groups.find(name);
    if (it != groups.end()) {  // requests in flight keep their LiveGroup
      erased = it->second;
      groups.erase(it);
    }
    unavailable_groups.erase(name);
  }
  if (erased && erased->dispatch) erased->dispatch->close();  // its queue answers 404
  if (!in_registry && !erased) throw HttpError(404, "unknown group '" + name + "'");
  log("deleted group '" + name + "'");
  return json_response(200, json_text(json{{"deleted", name}}));
}

HttpResponse HttpServer::Impl::list_groups() {
  json list = json::array();
  std::lock_guard<std::mutex> lock(groups_mu);
  for (const auto& [name, g] : groups) list.push_back(group_definition_json(g->def));
  for (const auto& [name, why] : unavailable_groups)
    list.push_back({{"name", name}, {"state", "unavailable"}, {"error", why}});
  return json_response(200, json_text(json{{"groups", std::move(list)}}));
}

HttpResponse HttpServer::Impl::get_group(const std::string& name) {
  check_name(name);
  auto g = find_group(name);
  if (auto why = g ? std::nullopt : unavailable_group(name)) {
    return json_response(200,
                         json_text(json{{"name", name}, {"state", "unavailable"}, {"error", *why}}));
  }
  if (!g) throw HttpError(404, "unknown group '" + name + "'");
  json j = group_definition_json(g->def);
  if (g->dispatch) j["queued"] = g->dispatch->queued();  // requests waiting in its queue
  return json_response(200, json_text(j));
}

void HttpServer::Impl::restore_groups(RestoreReport* report) {
  for (const GroupRow& row : registry.all_groups()) {
    try {
      auto live = make_live_group(parse_group_definition(row.definition_json));
      if (live->def.name != row.name) throw std::runtime_error("its definition names another group");
      for (const std::string& m : live->def.members) {
        if (!registry.find(m)) throw std::runtime_error("member '" + m + "' is not registered");
      }
      std::lock_guard<std::mutex> lock(groups_mu);
      groups[row.name] = std::move(live);
      report->groups_restored.push_back(row.name);
    } catch (const std::exception& e) {
      log("cannot restore group '" + row.name + "' (kept in the registry): " + e.what());
      report->groups_skipped.emplace_back(row.name, e.what());
      std::lock_guard<std::mutex> lock(groups_mu);
      unavailable_groups[row.name] = e.what();
    }
  }
}

void HttpServer::Impl::add_group_routes() {
  routes.add("POST", "/groups", admin_route([](Impl* s, HttpRequest& req, const PathParams&) {
               return s->create_group(req);
             }));
  routes.add("DELETE", "/groups/{name}",
             admin_route([](Impl* s, HttpRequest&, const PathParams& p) {
               return s->delete_group(p.at("name"));
             }));
  routes.add("GET", "/groups", listing_route([](Impl* s, HttpRequest&, const PathParams&) {
               return s->list_groups();
             }));
  routes.add("GET", "/groups/{name}", [this](HttpRequest&, const PathParams& p, Reply reply) {
    reply_with_result(reply, [&] { return get_group(p.at("name")); });
  });
}

}  // namespace servelab::server
