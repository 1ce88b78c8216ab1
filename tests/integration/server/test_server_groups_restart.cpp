// Model groups across a restart of the real server (the registry keeps them), a group that
// answers with the members left when one cannot answer, and `servelab load` addressing a
// group by name like a model.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/subcommands.h"
#include "engine/server/registry.h"
#include "tests/integration/server/group_fixture.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("groups survive a restart and answer with the members that answered",
          "[server][groups][restore]") {
  TempDir store;
  const std::string image = sample_images()[7];
  {
    TestServer ts(store.path.string());
    HttpClient c(ts.port());
    register_digits(c);
    REQUIRE(c.post_json("/groups", group_body("trio", kDigits).dump()).status == 201);
    REQUIRE(c.post_json("/groups", group_body("solo", {"digits_linear"}).dump()).status == 201);
    REQUIRE(c.post_json("/groups", group_body("gone", {"digits_mlp"}).dump()).status == 201);
    REQUIRE(c.request("DELETE", "/groups/gone").status == 200);
  }
  // digits_linear's stored file no longer matches its checksum: the restarted server keeps
  // its row but cannot serve it, so its groups lose that member.
  std::ofstream(store.path / "digits_linear.pt", std::ios::trunc) << "not a model any more";

  TestServer ts(store.path.string());
  auto restored = ts.restore.groups_restored;
  std::sort(restored.begin(), restored.end());
  CHECK(restored == std::vector<std::string>{"solo", "trio"});
  CHECK(ts.restore.groups_skipped.empty());
  REQUIRE(ts.restore.skipped.size() == 1);
  CHECK(ts.restore.skipped[0].first == "digits_linear");
  HttpClient c(ts.port());
  json list = json::parse(c.get("/groups").body)["groups"];
  REQUIRE(list.size() == 2);
  json trio_def = json::parse(c.get("/groups/trio").body);
  CHECK(trio_def == group_body("trio", kDigits));
  CHECK(c.get("/groups/gone").status == 404);

  const std::vector<std::string> left = {"digits_mlp", "digits_cnn"};
  std::vector<std::string> labels;
  for (const std::string& m : left) labels.push_back(top1(c, m, image));
  auto r = c.request("POST", "/classify/trio", image, "image/png");
  INFO(r.body);
  REQUIRE(r.status == 200);
  json a = json::parse(r.body);
  CHECK(a["partial"] == true);
  CHECK(a["failed"] == json::array({"digits_linear"}));
  CHECK(a["voters"] == json(left));
  CHECK(a["label"] == expected_vote(labels, {manifest_accuracy(left[0]),
                                             manifest_accuracy(left[1])}));
  REQUIRE(a["members"].size() == 3);
  CHECK(a["members"][0]["model"] == "digits_linear");
  CHECK(a["members"][0]["status"] == 404);
  CHECK(a["members"][1]["label"] == labels[0]);

  // No member answered: the group fails, with the member's status and reason.
  auto solo = c.request("POST", "/classify/solo", image, "image/png");
  INFO(solo.body);
  CHECK(solo.status == 404);
  CHECK(json::parse(solo.body)["error"].get<std::string>().find(
            "no member of group 'solo' answered") != std::string::npos);
}

TEST_CASE("a group that cannot be restored says so, and DELETE frees its name",
          "[server][groups][restore]") {
  TempDir store;
  {
    TestServer ts(store.path.string());
    HttpClient c(ts.port());
    register_digits(c);
  }
  {  // A definition that no longer parses (an edit by hand, an older server's format).
    servelab::server::Registry registry((store.path / "registry.sqlite").string());
    REQUIRE(registry.insert_group({"broken", "{\"name\": \"broken\", \"members\": 5}", 0}));
  }
  TestServer ts(store.path.string());
  REQUIRE(ts.restore.groups_skipped.size() == 1);
  HttpClient c(ts.port());
  // Every way to the name tells the same story: in the registry, not serving, and how to
  // free it (once: 409 "exists already" beside GET 404).
  auto got = c.get("/groups/broken");
  INFO(got.body);
  CHECK(got.status == 200);
  CHECK(json::parse(got.body)["state"] == "unavailable");
  json list = json::parse(c.get("/groups").body)["groups"];
  REQUIRE(list.size() == 1);
  CHECK(list[0]["state"] == "unavailable");
  auto classify = c.request("POST", "/classify/broken", sample_images()[0], "image/png");
  CHECK(classify.status == 503);
  CHECK(classify.body.find("DELETE /groups/broken") != std::string::npos);
  auto again = c.post_json("/groups", group_body("broken", kDigits).dump());
  CHECK(again.status == 409);
  CHECK(again.body.find("could not be restored") != std::string::npos);
  REQUIRE(c.request("DELETE", "/groups/broken").status == 200);
  CHECK(c.get("/groups/broken").status == 404);
  CHECK(c.post_json("/groups", group_body("broken", kDigits).dump()).status == 201);
}

TEST_CASE("servelab load sends a workload to a group by name", "[server][groups][loadgen]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  register_digits(c);
  REQUIRE(c.post_json("/groups", group_body("trio", kDigits).dump()).status == 201);

  const fs::path dir = store.path / "load";
  fs::create_directories(dir);
  std::ofstream(dir / "image.png", std::ios::binary) << sample_images()[4];
  std::ofstream(dir / "workload.yaml")
      << "models: [trio, digits_cnn]\n"
         "workload: {requests: 8, arrival: {type: closed, concurrency: 2},"
         " access: {type: sequential}}\n";
  const std::string url = "http://127.0.0.1:" + std::to_string(ts.port());
  std::vector<std::string> args = {"load", "--url", url, (dir / "workload.yaml").string(),
                                   "--out", (dir / "out").string(), "--image",
                                   (dir / "image.png").string()};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  REQUIRE(servelab::cli::load_main(int(argv.size()), argv.data()) == 0);

  json summary;
  std::ifstream(dir / "out" / "summary.json") >> summary;
  INFO(summary.dump());
  CHECK(summary["completed"] == 8);
  REQUIRE(summary["per_model"].contains("trio"));
  CHECK(summary["per_model"]["trio"]["completed"] == 4);
  // The server saw them as group requests: every member ran once per request to the group.
  json m = json::parse(c.get("/models/digits_linear").body);
  CHECK(m["counters"]["completed"] == 4);
}
