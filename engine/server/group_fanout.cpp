// A group request's members' answers and the group's answer (group_fanout.h).
#include "engine/server/group_fanout.h"

#include <nlohmann/json.hpp>

#include "engine/server/server_impl.h"

namespace servelab::server {
using nlohmann::json;

namespace {

MemberAnswer failure(int status, std::string why) {
  MemberAnswer a;
  a.status = status;
  a.error = std::move(why);
  return a;
}

}  // namespace

void FanOut::done(size_t k, MemberAnswer a) {
  {
    std::lock_guard<std::mutex> lock(mu);
    answers[k] = std::move(a);
    if (--remaining > 0) return;
  }
  reply(group_answer(*def, asked, answers));
  if (finished) finished();
}

MemberAnswer member_answer(const std::string& model, const runtime::ClassifyResult& r) {
  if (r.status == RequestStatus::Ok && !r.top.empty()) {
    MemberAnswer a;
    a.ok = true;
    a.label = r.top.front().first;
    a.score = r.top.front().second;
    return a;
  }
  if (auto f = request_failure(model, r)) {
    json body = json::parse(f->body, nullptr, false);
    bool has_error = body.is_object() && body.contains("error") && body["error"].is_string();
    return failure(f->status, has_error ? body["error"].get<std::string>() : "failed");
  }
  return failure(500, "model '" + model + "' gave no label");
}

MemberAnswer member_refused(const std::string& model, int rc) {
  switch (rc) {
    case 404: return failure(404, "model '" + model + "' is not loaded");
    case 400: return failure(400, "cannot decode the request body as an image");
    case 413: return failure(413, "image is larger than the engine's limit");
    default: return failure(rc, "model '" + model + "' cannot take requests now");
  }
}

}  // namespace servelab::server
