// Start-up never destroys what could be a user's data (issue 51): model files without a
// registry row are moved to quarantine, never deleted; a registry without models beside
// model files is refused unless told to quarantine them; one server at a time per store.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/integration/server/serve_process.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// A folder as a user has it: models exported from PyTorch, no registry.
void export_models(const fs::path& dir) {
  fs::create_directories(dir);
  fs::copy_file(model_file("tiny_cnn"), dir / "resnet_exported.pt");
  fs::copy_file(model_file("noop"), dir / "mine.pt");
}

// Every file under `dir`/quarantine, by name.
std::vector<fs::path> quarantined(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::exists(dir / "quarantine")) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir / "quarantine"))
    if (e.is_regular_file()) files.push_back(e.path());
  return files;
}

auto quarantine_on = [](servelab::runtime::EngineOptions&, servelab::server::ServerOptions& so) {
  so.quarantine_orphans = true;
};

}  // namespace

TEST_CASE("a store of exported models without a registry is refused and keeps every file",
          "[server][store][data-loss]") {
  TempDir dir;
  const fs::path store = dir.path / "exported";
  export_models(store);
  const std::string expected = "model store '" + store.string() + "' holds 2 model file(s)";
  REQUIRE_THROWS_WITH(TestServer(store.string()),
                      Contains(expected) && Contains("--quarantine-orphans"));
  CHECK(read_file((store / "resnet_exported.pt").string()) == read_file(model_file("tiny_cnn")));
  CHECK(fs::exists(store / "mine.pt"));
  CHECK(quarantined(store).empty());
  // Told to, the server starts and sets them aside: moved whole, never deleted.
  TestServer ts(store.string(), quarantine_on);
  CHECK(ts.restore.orphans_quarantined.size() == 2);
  CHECK_FALSE(fs::exists(store / "mine.pt"));
  const auto files = quarantined(store);
  REQUIRE(files.size() == 2);
  for (const auto& f : files) {
    const std::string source = f.filename() == "mine.pt" ? "noop" : "tiny_cnn";
    CHECK(read_file(f.string()) == read_file(model_file(source)));
  }
  CHECK(HttpClient(ts.port()).get("/health").status == 200);
}

TEST_CASE("a registry lost or emptied beside model files is refused, not acted on",
          "[server][store][data-loss]") {
  TempDir dir;
  const fs::path store = dir.path / "store";
  {
    TestServer ts(store.string());
    REQUIRE(HttpClient(ts.port()).post_json("/register", register_json("kept", "tiny_cnn"))
                .status == 201);
  }
  const fs::path db = store / "registry.sqlite";
  SECTION("missing (a restore in progress)") { fs::remove(db); }
  SECTION("truncated to nothing") { fs::resize_file(db, 0); }
  REQUIRE_THROWS_WITH(TestServer(store.string()), Contains("has no models"));
  CHECK(fs::exists(store / "kept.pt"));
}

TEST_CASE("beside a registry with models, files without a row are quarantined, not deleted",
          "[server][store][data-loss]") {
  TempDir dir;
  const fs::path store = dir.path / "store";
  {
    TestServer ts(store.string());
    REQUIRE(HttpClient(ts.port()).post_json("/register", register_json("kept", "tiny_cnn"))
                .status == 201);
  }
  fs::copy_file(model_file("noop"), store / "users_model.pt");
  TestServer ts(store.string());  // no flag needed: the registry is there
  REQUIRE(ts.restore.orphans_quarantined.size() == 1);
  CHECK(ts.restore.orphans_quarantined[0].first == (store / "users_model.pt").string());
  CHECK(read_file(ts.restore.orphans_quarantined[0].second) == read_file(model_file("noop")));
  CHECK(ts.restore.restored == std::vector<std::string>{"kept"});
}

TEST_CASE("a second server on the same store refuses to start", "[server][store][lock]") {
  TempDir dir;
  const fs::path store = dir.path / "store";
  auto first = std::make_unique<TestServer>(store.string());
  REQUIRE(HttpClient(first->port()).post_json("/register", register_json("m", "tiny_cnn"))
              .status == 201);
  REQUIRE_THROWS_WITH(TestServer(store.string()),
                      Contains("model store '" + store.string() + "' is in use by another "
                               "server"));
  // The first one is untouched and still serves its model.
  CHECK(HttpClient(first->port()).get("/models/m").status == 200);
  CHECK(fs::exists(store / "m.pt"));
  first.reset();
  TestServer again(store.string());  // the lock went with the first server
  CHECK(again.restore.restored == std::vector<std::string>{"m"});
}

TEST_CASE("servelab serve on a folder of exported models exits 1 and deletes nothing",
          "[server][store][data-loss]") {
  TempDir dir;
  const fs::path store = dir.path / "exported";
  export_models(store);
  ServeProcess p({"--port", "0", "--store", store.string()}, dir.path / "refused");
  auto rc = p.wait_exit(std::chrono::seconds(60));
  INFO("stderr: " << p.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 1);
  CHECK_THAT(p.err(), Contains("refusing to start") && Contains("--quarantine-orphans"));
  CHECK(fs::exists(store / "resnet_exported.pt"));
  CHECK(fs::exists(store / "mine.pt"));

  ServeProcess q({"--port", "0", "--store", store.string(), "--quarantine-orphans"},
                 dir.path / "quarantined");
  INFO("stderr: " << q.err());
  REQUIRE(q.wait_port(std::chrono::seconds(60)) != 0);
  CHECK_THAT(q.err(), Contains("moved orphan file '" + (store / "mine.pt").string() + "'"));
  CHECK(quarantined(store).size() == 2);
  CHECK(q.stop(std::chrono::seconds(30)));
}

TEST_CASE("servelab serve on a store another server holds exits 1 naming the store",
          "[server][store][lock]") {
  TempDir dir;
  const fs::path store = dir.path / "store";
  const std::vector<std::string> args = {"--port", "0", "--store", store.string()};
  ServeProcess first(args, dir.path / "first");
  const uint16_t port = first.wait_port(std::chrono::seconds(60));
  INFO("first stderr: " << first.err());
  REQUIRE(port != 0);
  ServeProcess second(args, dir.path / "second");
  auto rc = second.wait_exit(std::chrono::seconds(60));
  INFO("second stderr: " << second.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 1);
  CHECK_THAT(second.err(), Contains("model store '" + store.string() + "' is in use by another "
                                    "server"));
  CHECK(HttpClient(port).get("/health").status == 200);
  CHECK(first.stop(std::chrono::seconds(30)));
}
