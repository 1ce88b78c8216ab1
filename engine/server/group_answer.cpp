// The vote of a group request and its JSON answer (group_answer.h).
#include "engine/server/group_answer.h"

#include <algorithm>
#include <cassert>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/server/json_text.h"

namespace servelab::server {
using nlohmann::json;

namespace {

json member_json(const std::string& model, const MemberAnswer& a) {
  if (a.ok) return {{"model", model}, {"label", a.label}, {"score", a.score}};
  return {{"model", model}, {"status", a.status}, {"error", a.error}};
}

// Nobody answered: the first failure's status, and every member's reason.
HttpResponse none_answered(const GroupDefinition& g, MemberMask asked,
                           std::span<const MemberAnswer> answers) {
  int status = 0;
  std::string why;
  json members = json::array();
  for (size_t k = 0; k < g.members.size(); ++k) {
    if (!(asked >> k & 1)) continue;
    const MemberAnswer& a = answers[k];
    if (status == 0) status = a.status;
    why += (why.empty() ? "" : "; ") + g.members[k] + ": " + a.error;
    members.push_back(member_json(g.members[k], a));
  }
  if (status < 400 || status > 599) status = 500;
  json j = {{"error", "no member of group '" + g.name + "' answered: " + why},
            {"group", g.name},
            {"members", std::move(members)}};
  return json_response(status, json_text(j));
}

}  // namespace

HttpResponse group_answer(const GroupDefinition& g, MemberMask asked,
                          std::span<const MemberAnswer> answers) {
  assert(answers.size() == g.members.size());
  // Labels become small integers in the order members first gave them, so that without
  // accuracies a tie goes to the earliest member's label (majority_vote keeps the lowest).
  std::vector<std::string> distinct;
  std::vector<int> ids(g.members.size(), -1);
  std::vector<double> accuracy(g.members.size(), 0.0);
  MemberMask voters = 0;
  for (size_t k = 0; k < g.members.size(); ++k) {
    accuracy[k] = g.accuracy_of(k);
    if (!(asked >> k & 1) || !answers[k].ok) continue;
    voters |= MemberMask(1) << k;
    auto it = std::find(distinct.begin(), distinct.end(), answers[k].label);
    ids[k] = int(it - distinct.begin());
    if (it == distinct.end()) distinct.push_back(answers[k].label);
  }
  if (voters == 0) return none_answered(g, asked, answers);
  const int winner = majority_vote(ids, accuracy, voters);
  assert(winner >= 0 && size_t(winner) < distinct.size());

  json voter_names = json::array(), members = json::array(), failed = json::array();
  int votes = 0;
  for (size_t k = 0; k < g.members.size(); ++k) {
    if (!(asked >> k & 1)) continue;
    members.push_back(member_json(g.members[k], answers[k]));
    if (!answers[k].ok) {
      failed.push_back(g.members[k]);
      continue;
    }
    voter_names.push_back(g.members[k]);
    if (ids[k] == winner) ++votes;
  }
  json j = {{"group", g.name},
            {"label", distinct[size_t(winner)]},
            {"votes", votes},
            {"voters", std::move(voter_names)},
            {"members", std::move(members)},
            {"partial", !failed.empty()},
            {"failed", std::move(failed)}};
  return json_response(200, json_text(j));
}

}  // namespace servelab::server
