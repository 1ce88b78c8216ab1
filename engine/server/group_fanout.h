// One group request in flight in the server: the members' answers as they come in, from any
// thread, and the group's answer (group_answer.h) sent once the last asked member answered.
// Used by both ways a group serves: subset policies (server_groups.cpp) and ensemble
// dispatchers (group_dispatch.h).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/control/ensemble.h"
#include "engine/runtime/engine.h"
#include "engine/server/group_answer.h"
#include "engine/server/group_definition.h"
#include "engine/server/http_message.h"

namespace servelab::server {

struct FanOut {
  std::shared_ptr<const void> owner;  // keeps `def` alive (the group may be deleted meanwhile)
  const GroupDefinition* def = nullptr;
  MemberMask asked = 0;
  Reply reply;
  std::function<void()> finished;  // optional: after the reply, on the last member's thread
  std::mutex mu;
  std::vector<MemberAnswer> answers;  // by member index
  size_t remaining = 0;               // asked members still to answer

  // Member k's answer; the last one replies and calls `finished`.
  void done(size_t k, MemberAnswer a);
};

// A member's engine result as its part of the group's answer. Touches nothing of the server:
// it runs on engine threads, possibly while the server shuts down.
MemberAnswer member_answer(const std::string& model, const runtime::ClassifyResult& r);
// The answer of a member the engine refused at once (its return code).
MemberAnswer member_refused(const std::string& model, int rc);

}  // namespace servelab::server
