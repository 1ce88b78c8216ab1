// Data loss and file access (issue 14): encoded NUL/control bytes in a model name remove
// nothing, server-side paths only under --model-root, the admin token, orphan cleanup.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string path_body(const std::string& name, const std::string& path) {
  return json{{"name", name}, {"path", path}}.dump();
}

std::string error_of(const ClientResponse& r) {
  json j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"].get<std::string>() : "";
}

std::set<std::string> model_names(HttpClient& c) {
  std::set<std::string> names;
  json list = json::parse(c.get("/models").body);
  for (const auto& m : list["models"]) names.insert(m["name"].get<std::string>());
  return names;
}

}  // namespace

TEST_CASE("encoded NUL and control bytes in a model name remove nothing", "[server][access]") {
  TempDir store;
  std::set<std::string> all = {"tiny_cnn", "a", "a.pt"};
  {
    TestServer ts(store.path.string());
    HttpClient c(ts.port());
    for (const auto& name : all) {
      REQUIRE(c.post_json("/register", register_json(name, "tiny_cnn")).status == 201);
    }
    for (const char* target : {"/models/tiny_cnn%00", "/models/a.pt%00", "/models/a%00.pt",
                               "/models/a%01", "/models/a%0a", "/models/a%7f"}) {
      INFO(target);
      auto del = c.request("DELETE", target);
      CHECK(del.status == 400);
      CHECK(c.get(target).status == 400);
    }
    CHECK(c.request("DELETE", "/models/a%20b").status == 400);  // printable but not a name
    CHECK(model_names(c) == all);
    for (const auto& name : all) CHECK(fs::exists(store.path / (name + ".pt")));
    std::string jpg = read_file(image_file("gradient.jpg"));
    CHECK(c.request("POST", "/classify/tiny_cnn", jpg).status == 200);
  }
  TestServer again(store.path.string());  // nothing was lost across a restart either
  CHECK(again.restore.restored.size() == all.size());
  CHECK(again.restore.skipped.empty());
}

TEST_CASE("server-side paths are refused without a model root", "[server][access]") {
  TempDir store;
  TestServer ts(store.path.string(), [](auto&, auto& so) { so.model_root.clear(); });
  HttpClient c(ts.port());
  for (const std::string& path : {model_file("tiny_cnn"), std::string("/etc/passwd"),
                                  std::string("/no/such/file.pt")}) {
    auto r = c.post_json("/register", path_body("m", path));
    CHECK(r.status == 403);
    CHECK(error_of(r).find("--model-root") != std::string::npos);
  }
  CHECK(c.post_form("/register", register_form("m", "tiny_cnn")).status == 201);  // uploads work
}

TEST_CASE("server-side paths must be regular files inside the model root", "[server][access]") {
  TempDir store, root, outside;
  fs::copy_file(model_file("tiny_cnn"), root.path / "inside.pt");
  fs::copy_file(model_file("tiny_cnn"), outside.path / "outside.pt");
  fs::create_directory(root.path / "sub");
  fs::create_symlink(outside.path / "outside.pt", root.path / "link-out.pt");
  fs::create_symlink(root.path / "inside.pt", root.path / "sub" / "link-in.pt");
  std::string root_dir = root.path.string();
  TestServer ts(store.path.string(), [&](auto&, auto& so) { so.model_root = root_dir; });
  HttpClient c(ts.port());

  CHECK(c.post_json("/register", path_body("abs", (root.path / "inside.pt").string())).status == 201);
  CHECK(c.post_json("/register", path_body("rel", "inside.pt")).status == 201);
  CHECK(c.post_json("/register", path_body("lnk", "sub/link-in.pt")).status == 201);

  const std::string reference =
      error_of(c.post_json("/register", path_body("x", (root.path / "missing.pt").string())));
  REQUIRE_FALSE(reference.empty());
  std::vector<std::string> refused = {
      (outside.path / "outside.pt").string(),             // outside
      (root.path / "link-out.pt").string(),               // symlink leading outside
      root_dir + "/../" + outside.path.filename().string() + "/outside.pt",  // dot-dot
      "/etc/passwd", "/proc/self/environ",
      (store.path / "registry.sqlite").string(),          // the registry itself
      (store.path / "abs.pt").string(),                   // the store
      root_dir,                                           // a directory
      (root.path / "sub").string(),
      std::string("inside.pt\0/../../etc/passwd", 27),    // NUL
  };
  for (const auto& path : refused) {
    INFO("path " << path);
    auto r = c.post_json("/register", path_body("x", path));
    CHECK(r.status == 400);
    CHECK(error_of(r) == reference);  // missing and outside look the same
  }
  CHECK(model_names(c) == std::set<std::string>{"abs", "rel", "lnk"});
}

TEST_CASE("with an admin token, register and delete need it and reads stay open", "[server][access]") {
  TempDir store;
  TestServer ts(store.path.string(), [](auto&, auto& so) { so.admin_token = "s3cret-token"; });
  HttpClient anon(ts.port()), wrong(ts.port()), admin(ts.port());
  wrong.set_header("Authorization", "Bearer s3cret-tokeX");
  admin.set_header("Authorization", "Bearer s3cret-token");

  auto r = anon.post_json("/register", register_json("cnn", "tiny_cnn"));
  CHECK(r.status == 401);
  CHECK(r.headers["www-authenticate"] == "Bearer");
  CHECK(wrong.post_json("/register", register_json("cnn", "tiny_cnn")).status == 401);
  CHECK(wrong.post_form("/register", register_form("cnn", "tiny_cnn")).status == 401);
  CHECK(anon.get("/models").body.find("cnn") == std::string::npos);
  REQUIRE(admin.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);

  CHECK(anon.request("DELETE", "/models/cnn").status == 401);
  CHECK(wrong.request("DELETE", "/models/cnn").status == 401);
  CHECK(anon.get("/models/cnn").status == 200);
  CHECK(anon.get("/models").status == 200);
  CHECK(anon.get("/health").status == 200);
  CHECK(anon.request("POST", "/classify/cnn", read_file(image_file("gradient.jpg"))).status == 200);
  CHECK(admin.request("DELETE", "/models/cnn").status == 200);
  CHECK(anon.get("/models/cnn").status == 404);
}

TEST_CASE("start-up quarantines store files without a row and reports rows without a file",
          "[server][access]") {
  TempDir store;
  {
    TestServer ts(store.path.string());
    HttpClient c(ts.port());
    REQUIRE(c.post_json("/register", register_json("kept", "tiny_cnn")).status == 201);
    REQUIRE(c.post_json("/register", register_json("lost", "tiny_cnn")).status == 201);
  }
  // What a kill -9 leaves: a file renamed into the store before its row, a temp file.
  fs::copy_file(model_file("tiny_cnn"), store.path / "orphan.pt");
  std::ofstream(store.path / ".tmp-half-1234-0") << "partial";
  fs::remove(store.path / "lost.pt");
  std::ofstream(store.path / "notes.txt") << "not ours to remove";

  TestServer ts(store.path.string());
  CHECK(ts.restore.restored == std::vector<std::string>{"kept"});
  REQUIRE(ts.restore.skipped.size() == 1);
  CHECK(ts.restore.skipped[0].first == "lost");
  REQUIRE(ts.restore.orphans_quarantined.size() == 2);
  CHECK_FALSE(fs::exists(store.path / "orphan.pt"));
  CHECK_FALSE(fs::exists(store.path / ".tmp-half-1234-0"));
  for (const auto& [from, to] : ts.restore.orphans_quarantined) {  // moved, not deleted
    CHECK(fs::path(to).parent_path().parent_path() == store.path / "quarantine");
    CHECK(fs::path(to).filename() == fs::path(from).filename());
    CHECK(fs::exists(to));
  }
  CHECK(fs::exists(store.path / "kept.pt"));
  CHECK(fs::exists(store.path / "notes.txt"));
  CHECK(fs::exists(store.path / "registry.sqlite"));
}
