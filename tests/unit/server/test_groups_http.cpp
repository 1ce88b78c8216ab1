// The HTTP layer of model groups without an engine: POST /groups bodies (group_definition.h)
// and the answer of a group request from its members' answers (group_answer.h).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/server/group_answer.h"
#include "engine/server/group_definition.h"

using namespace servelab::server;
using nlohmann::json;

namespace {

int status_of(const std::string& body) {
  try {
    parse_group_definition(body);
  } catch (const HttpError& e) {
    return e.status;
  }
  return 0;
}

MemberAnswer said(const std::string& label, double score = 0.5) {
  MemberAnswer a;
  a.ok = true;
  a.label = label;
  a.score = score;
  return a;
}

MemberAnswer failed(int status, const std::string& why) {
  MemberAnswer a;
  a.status = status;
  a.error = why;
  return a;
}

}  // namespace

TEST_CASE("group definitions parse and round-trip", "[server][groups]") {
  GroupDefinition d = parse_group_definition(
      R"({"name": "g", "members": ["a", "b", "c"], "accuracy": {"c": 0.9, "a": 0.5, "b": 0.7},
          "subset": {"name": "fixed", "members": ["c", "a"]}})");
  CHECK(d.name == "g");
  CHECK(d.members == std::vector<std::string>{"a", "b", "c"});
  CHECK(d.accuracy == std::vector<double>{0.5, 0.7, 0.9});
  CHECK(d.subset.name == "fixed");
  CHECK(d.subset.params.get_string("members", "") == "c,a");
  const json j = group_definition_json(d);
  CHECK(j["subset"]["members"] == json::array({"c", "a"}));
  GroupDefinition back = parse_group_definition(j.dump());
  CHECK(group_definition_json(back) == j);

  GroupDefinition plain = parse_group_definition(R"({"name": "p", "members": ["x"]})");
  CHECK(plain.subset.name == "all");
  CHECK(plain.accuracy.empty());
  CHECK(plain.accuracy_of(0) == 0.0);
  GroupDefinition k = parse_group_definition(
      R"({"name": "k", "members": ["x", "y"], "subset": {"name": "least-loaded", "k": 2}})");
  CHECK(group_definition_json(k)["subset"]["k"] == 2);
}

TEST_CASE("a group with an ensemble dispatcher parses and round-trips", "[server][groups]") {
  GroupDefinition d = parse_group_definition(
      R"({"name": "g", "members": ["a", "b"],
          "dispatch": {"name": "greedy", "batch_sizes": [2, 4], "delta": 0.25,
                       "members": "one", "partial": true}})");
  CHECK(d.dispatch.name == "greedy");
  CHECK(d.dispatch.params.get_string("batch_sizes", "") == "2,4");
  CHECK(d.dispatch.params.get_double("delta", 0) == 0.25);
  CHECK(d.dispatch.params.get_bool("partial", false));
  CHECK(d.subset.name == "all");  // unused: the dispatcher picks members
  const json j = group_definition_json(d);
  CHECK(!j.contains("subset"));
  CHECK(group_definition_json(parse_group_definition(j.dump())) == j);
  // A weights file is only named here (the server confines and reads it).
  GroupDefinition rl = parse_group_definition(
      R"({"name": "r", "members": ["a", "b", "c"],
          "dispatch": {"name": "clipper", "batch_size": 8}})");
  CHECK(rl.dispatch.params.get_int("batch_size", 0) == 8);
}

TEST_CASE("hostile group definitions are refused with their status", "[server][groups]") {
  for (const char* body :
       {"", "[]", "null", R"({"name": "g"})", R"({"members": ["a"]})",
        R"({"name": "g", "members": "a"})", R"({"name": "g", "members": []})",
        R"({"name": "g", "members": ["a", "a"]})",
        R"({"name": "g", "members": ["a","b","c","d","e","f","g2","h","i"]})",
        R"({"name": "", "members": ["a"]})", R"({"name": ".g", "members": ["a"]})",
        R"({"name": "g", "members": ["a/b"]})", R"({"name": "g", "members": [1]})",
        R"({"name": "g\u0000x", "members": ["a"]})", R"({"name": "g", "members": ["a"], "x": 1})",
        R"({"name": "g", "members": ["a"], "accuracy": {"a": -0.1}})",
        R"({"name": "g", "members": ["a", "b"], "accuracy": {"a": 0.5}})",
        R"({"name": "g", "members": ["a"], "accuracy": {"z": 0.5}})",
        R"({"name": "g", "members": ["a"], "accuracy": [0.5]})",
        R"({"name": "g", "members": ["a"], "subset": "all"})",
        R"({"name": "g", "members": ["a"], "subset": {}})",
        R"({"name": "g", "members": ["a"], "subset": {"name": "nope"}})",
        R"({"name": "g", "members": ["a"], "subset": {"name": "all", "k": 1}})",
        R"({"name": "g", "members": ["a"], "subset": {"name": "least-loaded", "k": 2}})",
        R"({"name": "g", "members": ["a"], "subset": {"name": "least-loaded", "k": 1.5}})",
        R"({"name": "g", "members": ["a"], "subset": {"name": "fixed"}})",
        R"({"name": "g", "members": ["a"], "subset": {"name": "fixed", "members": ["a,b"]}})",
        R"({"name": "g", "members": ["a"], "subset": {"name": "fixed", "members": {"a": 1}}})",
        R"({"name": "g", "members": ["a"], "subset": {"name": "all"}, "dispatch": {"name": "greedy"}})",
        R"({"name": "g", "members": ["a"], "dispatch": {"name": "nope"}})",
        R"({"name": "g", "members": ["a"], "dispatch": {"name": "greedy", "x": 1}})",
        R"({"name": "g", "members": ["a"], "dispatch": {"name": "greedy", "members": "some"}})",
        R"({"name": "g", "members": ["a"], "dispatch": {"name": "greedy", "batch_sizes": [0]}})",
        R"({"name": "g", "members": ["a"], "dispatch": {"name": "clipper", "batch_size": -1}})",
        R"({"name": "g", "members": ["a"], "dispatch": {"name": "greedy", "delta": {"a": 1}}})",
        R"({"name": "g", "members": ["a"], "dispatch": "greedy"})"}) {
    CAPTURE(body);
    CHECK(status_of(body) == 400);
  }
  CHECK(status_of(std::string(kMaxGroupBodyBytes + 1, ' ')) == 413);
  std::string deep(5000, '[');
  CHECK(status_of(deep) == 400);
}

TEST_CASE("a group answer is Rafiki's vote over the members that answered", "[server][groups]") {
  GroupDefinition g = parse_group_definition(
      R"({"name": "g", "members": ["a", "b", "c"], "accuracy": {"a": 0.6, "b": 0.8, "c": 0.7}})");
  auto answer = [&](servelab::MemberMask asked, std::vector<MemberAnswer> answers) {
    HttpResponse r = group_answer(g, asked, answers);
    json j = json::parse(r.body);
    j["http_status"] = r.status;
    return j;
  };
  json two_to_one = answer(0b111, {said("x"), said("y"), said("x")});
  CHECK(two_to_one["label"] == "x");
  CHECK(two_to_one["votes"] == 2);
  CHECK(two_to_one["voters"] == json::array({"a", "b", "c"}));
  CHECK(two_to_one["partial"] == false);
  CHECK(two_to_one["members"][1] == json({{"model", "b"}, {"label", "y"}, {"score", 0.5}}));
  // A split goes to the most accurate voter's label.
  CHECK(answer(0b101, {said("x"), said("unused"), said("z")})["label"] == "z");
  json partial = answer(0b111, {said("x"), failed(503, "queue full"), said("z")});
  CHECK(partial["label"] == "z");
  CHECK(partial["partial"] == true);
  CHECK(partial["failed"] == json::array({"b"}));
  CHECK(partial["voters"] == json::array({"a", "c"}));
  CHECK(partial["members"][1]["status"] == 503);
  json none = answer(0b110, {said("ignored"), failed(504, "late"), failed(500, "broke")});
  CHECK(none["http_status"] == 504);
  CHECK(none["error"] == "no member of group 'g' answered: b: late; c: broke");

  // Without accuracies a split goes to the earliest member's label.
  GroupDefinition even = parse_group_definition(R"({"name": "e", "members": ["a", "b"]})");
  for (auto labels : {std::pair{"p", "q"}, std::pair{"q", "p"}}) {
    json j = json::parse(group_answer(even, 0b11, std::vector{said(labels.first),
                                                           said(labels.second)}).body);
    CHECK(j["label"] == labels.first);
  }
}
