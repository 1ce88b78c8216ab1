// The answer of a group request (POST /classify/{group}) from its members' answers: Rafiki's
// majority vote (majority_vote, engine/control/ensemble.h) over the top-1 labels of the
// members that answered, and which members voted. No engine, no I/O: the server fills one
// MemberAnswer per member it asked and calls group_answer() once all of them are in.
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>

#include "engine/control/ensemble.h"
#include "engine/server/group_definition.h"
#include "engine/server/http_message.h"

namespace servelab::server {

// One member's answer to its part of a group request.
struct MemberAnswer {
  bool ok = false;
  std::string label;   // top-1 label (ok)
  double score = 0;    // its probability (ok)
  int status = 0;      // the HTTP status the member's own request would have answered (!ok)
  std::string error;   // why it did not answer (!ok)
};

// `answers[k]` is member k's answer; only members in `asked` (bit k: member k) are read.
// 200 when at least one asked member answered:
//   {"group", "label" (the vote), "votes" (how many voters gave it), "voters" (members that
//    answered, member order), "members": [{"model", "label", "score"} or
//    {"model", "status", "error"}] for each asked member, "partial" (some asked member
//    failed), "failed": [names]}
// Otherwise the status of the first asked member's failure (member order) with
//   {"error": "no member of group 'g' answered: a: why; b: why", "group", "members"}.
HttpResponse group_answer(const GroupDefinition& group, MemberMask asked,
                          std::span<const MemberAnswer> answers);

}  // namespace servelab::server
