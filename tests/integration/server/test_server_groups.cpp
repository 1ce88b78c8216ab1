// Model groups (ensembles) on the real server over 127.0.0.1: three real digits models
// (scripts/digits_models.py, measured accuracy in their manifests) in a group; the group's
// vote is checked against the majority of the members' own answers, each asked directly
// (the ground truth comes from outside the group code). Also: definitions refused, a member
// that cannot be deleted, restart persistence, a group answering with the members left.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <nlohmann/json.hpp>

#include "tests/integration/server/group_fixture.h"
#include "tests/integration/server/server_fixture.h"
#include "tests/integration/server/test_images.h"

using namespace servelab::testing;
using nlohmann::json;

namespace {

// Classifies `image` through group `group` of `members` and checks the answer against the
// members asked directly. Returns the number of distinct member labels (disagreement seen).
size_t check_group_vote(HttpClient& c, const std::string& group,
                        const std::vector<std::string>& members, const std::string& image) {
  std::vector<std::string> labels;
  std::vector<double> acc;
  for (const std::string& m : members) {
    labels.push_back(top1(c, m, image));
    acc.push_back(manifest_accuracy(m));
  }
  auto r = c.request("POST", "/classify/" + group, image, "image/png");
  INFO(r.body);
  REQUIRE(r.status == 200);
  json a = json::parse(r.body);
  CHECK(a["group"] == group);
  CHECK(a["label"] == expected_vote(labels, acc));
  CHECK(a["voters"] == json(members));
  CHECK(a["partial"] == false);
  CHECK(a["failed"].empty());
  REQUIRE(a["members"].size() == members.size());
  for (size_t k = 0; k < members.size(); ++k) {
    CHECK(a["members"][k]["model"] == members[k]);
    CHECK(a["members"][k]["label"] == labels[k]);
  }
  CHECK(a["votes"] == std::count(labels.begin(), labels.end(), a["label"].get<std::string>()));
  return std::set<std::string>(labels.begin(), labels.end()).size();
}

}  // namespace

TEST_CASE("a group's vote is the majority of its members' own answers", "[server][groups]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  register_digits(c);

  auto def = c.post_json("/groups", group_body("trio", kDigits).dump());
  INFO(def.body);
  REQUIRE(def.status == 201);
  CHECK(json::parse(def.body)["members"] == json(kDigits));
  // Two members that may tie: the more accurate one's label must win a split.
  const std::vector<std::string> pair = {"digits_linear", "digits_cnn"};
  REQUIRE(c.post_json("/groups", group_body("pair", kDigits, {{"name", "fixed"},
                                                              {"members", pair}})
                                     .dump())
              .status == 201);

  // The images must split the members at least once, or the vote (and the pair's tie-break
  // by accuracy) was never exercised.
  size_t trio_splits = 0, pair_splits = 0;
  for (const std::string& image : sample_images()) {
    trio_splits += check_group_vote(c, "trio", kDigits, image) > 1;
    pair_splits += check_group_vote(c, "pair", pair, image) > 1;
  }
  CHECK(trio_splits > 0);
  CHECK(pair_splits > 0);

  json list = json::parse(c.get("/groups").body)["groups"];
  REQUIRE(list.size() == 2);
  json pair_def = json::parse(c.get("/groups/pair").body);
  CHECK(pair_def["subset"]["name"] == "fixed");
  CHECK(pair_def["subset"]["members"] == json(pair));
  CHECK(pair_def["accuracy"]["digits_cnn"] == manifest_accuracy("digits_cnn"));
  CHECK(c.get("/groups/none").status == 404);

  // least-loaded with k = 2 on an idle server: the first two members (ties: member order).
  REQUIRE(c.post_json("/groups", group_body("two", kDigits, {{"name", "least-loaded"}, {"k", 2}})
                                     .dump())
              .status == 201);
  auto two = json::parse(c.request("POST", "/classify/two", sample_images()[3], "image/png").body);
  CHECK(two["voters"] == json({"digits_linear", "digits_mlp"}));
}

TEST_CASE("a group request decodes its image once for the members that prepare it alike",
          "[server][groups]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  register_digits(c);  // all three: 8x8, mean 0, std 1
  json shifted = json::parse(register_json("mlp_shifted", "digits_mlp"));
  shifted["preprocess"]["mean"] = {0.1, 0.1, 0.1};  // the same model, prepared differently
  REQUIRE(c.post_json("/register", shifted.dump()).status == 201);
  REQUIRE(c.post_json("/groups", group_body("trio", kDigits).dump()).status == 201);
  json mixed = group_body("mixed", {"digits_linear", "digits_mlp"});
  mixed["members"].push_back("mlp_shifted");
  mixed["accuracy"]["mlp_shifted"] = manifest_accuracy("digits_mlp");
  auto defined = c.post_json("/groups", mixed.dump());
  INFO(defined.body);
  REQUIRE(defined.status == 201);
  auto decoded = [&] { return metric_sum(c.get("/metrics").body, "servelab_images_decoded_total"); };

  const std::string image = sample_images()[3];
  const double before = decoded();
  auto trio = c.request("POST", "/classify/trio", image, "image/png");
  REQUIRE(trio.status == 200);
  CHECK(json::parse(trio.body)["voters"].size() == 3);
  CHECK(decoded() - before == 1);  // three members, one preprocessing
  auto mix = c.request("POST", "/classify/mixed", image, "image/png");
  REQUIRE(mix.status == 200);
  CHECK(json::parse(mix.body)["voters"].size() == 3);
  CHECK(decoded() - before == 3);  // two preprocessings: two more
  REQUIRE(c.request("POST", "/classify/digits_mlp", image, "image/png").status == 200);
  CHECK(decoded() - before == 4);  // a model's own request: one

  // Bytes that are no image are refused for the group (400) from their header, before any
  // member decodes them.
  auto bad = c.request("POST", "/classify/trio", std::string(64, 'x'), "image/png");
  CHECK(bad.status == 400);
  CHECK(decoded() - before == 4);
}

TEST_CASE("group definitions that are refused and members that cannot be deleted",
          "[server][groups]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  register_digits(c);
  auto refused = [&](const std::string& body, int status, const std::string& says) {
    auto r = c.post_json("/groups", body);
    INFO(body << " -> " << r.body);
    CHECK(r.status == status);
    CHECK(json::parse(r.body)["error"].get<std::string>().find(says) != std::string::npos);
  };
  refused(json{{"name", "g"}, {"members", json::array({"digits_mlp", "nope"})}}.dump(), 400,
          "'nope' is not a registered model");
  refused(json{{"name", "g"}, {"members", json::array({"digits_mlp", "digits_mlp"})}}.dump(), 400,
          "listed twice");
  refused(json{{"name", "g"}, {"members", json::array()}}.dump(), 400, "1..8");
  std::vector<std::string> nine(9);
  for (size_t i = 0; i < nine.size(); ++i) nine[i] = "m" + std::to_string(i);
  refused(json{{"name", "g"}, {"members", nine}}.dump(), 400, "1..8");
  refused(json{{"name", "digits_mlp"}, {"members", json::array({"digits_cnn"})}}.dump(), 400,
          "name of a registered model");
  refused(json{{"name", "../x"}, {"members", json::array({"digits_cnn"})}}.dump(), 400, "name");
  refused(json{{"name", "g"}, {"members", json::array({"a\nb"})}}.dump(), 400, "members[0]");
  refused(json{{"name", "g"}, {"members", json::array({"digits_cnn"})}, {"subset", {{"name", "magic"}}}}.dump(),
          400, "unknown subset policy");
  refused(json{{"name", "g"}, {"members", json::array({"digits_cnn"})}, {"subset", {{"name", "fixed"},
          {"members", json::array({"digits_mlp"})}}}}.dump(), 400, "not a member");
  refused(json{{"name", "g"}, {"members", json::array({"digits_cnn"})}, {"accuracy", {{"digits_cnn", 2}}}}.dump(),
          400, "[0, 1]");
  refused(json{{"name", "g"}, {"members", json::array({"digits_cnn"})}, {"extra", 1}}.dump(), 400, "unknown key");
  refused("{\"name\": \"g\", \"members\": [", 400, "JSON object");
  refused(std::string(20000, ' '), 413, "larger than");

  REQUIRE(c.post_json("/groups", group_body("trio", kDigits).dump()).status == 201);
  refused(group_body("trio", kDigits).dump(), 409, "exists already");
  refused(json{{"name", "g"}, {"members", json::array({"trio"})}}.dump(), 400, "is a group");
  // A model cannot take a group's name, nor leave while a group needs it.
  auto reg = c.post_json("/register", register_json("trio", "digits_mlp"));
  CHECK(reg.status == 409);
  auto del = c.request("DELETE", "/models/digits_mlp");
  INFO(del.body);
  CHECK(del.status == 409);
  CHECK(del.body.find("group 'trio'") != std::string::npos);
  CHECK(c.request("POST", "/classify/digits_mlp", sample_images()[0], "image/png").status == 200);
  CHECK(c.request("DELETE", "/groups/trio").status == 200);
  CHECK(c.request("DELETE", "/groups/trio").status == 404);
  CHECK(c.request("POST", "/classify/trio", sample_images()[0], "image/png").status == 404);
  CHECK(c.request("DELETE", "/models/digits_mlp").status == 200);
}

TEST_CASE("defining and deleting groups needs the admin token", "[server][groups][access]") {
  TempDir store;
  TestServer ts(store.path.string(), [](auto&, servelab::server::ServerOptions& so) {
    so.admin_token = "group-secret";
  });
  HttpClient c(ts.port());
  c.set_header("Authorization", "Bearer group-secret");
  register_digits(c);
  HttpClient anon(ts.port());
  CHECK(anon.post_json("/groups", group_body("trio", kDigits).dump()).status == 401);
  REQUIRE(c.post_json("/groups", group_body("trio", kDigits).dump()).status == 201);
  CHECK(anon.request("DELETE", "/groups/trio").status == 401);
  CHECK(anon.get("/groups/trio").status == 200);  // reads and classify stay open
  CHECK(anon.request("POST", "/classify/trio", sample_images()[1], "image/png").status == 200);
}
