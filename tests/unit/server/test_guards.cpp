// Access pieces that need no server: the admin token, the model root, and the route table's
// single place of percent-decoding.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "engine/server/admin_auth.h"
#include "engine/server/model_root.h"
#include "engine/server/model_store.h"
#include "engine/server/route_table.h"

using namespace servelab::server;
namespace fs = std::filesystem;

TEST_CASE("admin tokens compare whole and only as Bearer", "[server][auth]") {
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "abcd"));
  CHECK_FALSE(constant_time_equal("", "a"));
  HttpRequest req;
  CHECK_FALSE(has_bearer_token(req, "tok"));
  req.headers = {{"authorization", "Bearer tok"}};
  CHECK(has_bearer_token(req, "tok"));
  req.headers = {{"authorization", "bearer  tok "}};
  CHECK(has_bearer_token(req, "tok"));
  for (const char* wrong : {"Bearer to", "Bearer tokk", "Basic tok", "tok", "Bearer "}) {
    req.headers = {{"authorization", wrong}};
    CHECK_FALSE(has_bearer_token(req, "tok"));
  }
  CHECK(unauthorized_response().status == 401);
}

TEST_CASE("admin token files hold one printable token", "[server][auth]") {
  fs::path dir = fs::temp_directory_path() / ("servelab-guard-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "token", std::ios::binary) << text;
    return (dir / "token").string();
  };
  CHECK(read_admin_token_file(write("s3cret\n")) == "s3cret");
  CHECK_THROWS_AS(read_admin_token_file(write("\n  \n")), std::runtime_error);
  CHECK_THROWS_AS(read_admin_token_file(write("two words")), std::runtime_error);
  CHECK_THROWS_AS(read_admin_token_file((dir / "missing").string()), std::runtime_error);
  fs::remove_all(dir);
}

TEST_CASE("model root: canonical regular files inside only", "[server][access]") {
  fs::path base = fs::temp_directory_path() / ("servelab-root-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "root" / "sub");
  fs::create_directories(base / "store");
  std::ofstream(base / "root" / "m.pt") << "x";
  std::ofstream(base / "secret") << "x";
  fs::create_symlink(base / "secret", base / "root" / "out.pt");
  std::string root = (base / "root").string(), store = (base / "store").string();
  fs::path canon = fs::canonical(base / "root" / "m.pt");
  CHECK(resolve_model_path(root, store, "m.pt") == canon.string());
  CHECK(resolve_model_path(root, store, root + "/sub/../m.pt") == canon.string());
  for (const std::string& p : {std::string("out.pt"), std::string("../secret"), std::string("sub"),
                               std::string("nope.pt"), std::string(""), std::string("m.pt\0x", 6),
                               (base / "secret").string()}) {
    INFO(p);
    CHECK_THROWS_AS(resolve_model_path(root, store, p), StoreError);
  }
  CHECK_THROWS_AS(resolve_model_path("", store, "m.pt"), StoreError);
  CHECK_THROWS_AS(resolve_model_path(base.string(), (base / "root").string(), "root/m.pt"),
                  StoreError);  // inside the store
  fs::remove_all(base);
}

TEST_CASE("the route table rejects decoded NUL and control bytes once, for every route",
          "[server][routes]") {
  RouteTable r;
  std::string seen;
  r.add("DELETE", "/models/{name}", [&](HttpRequest&, const PathParams& p, Reply reply) {
    seen = p.at("name");
    reply(json_response(200, "{}"));
  });
  r.add("GET", "/models/{name}", [&](HttpRequest&, const PathParams& p, Reply reply) {
    seen = p.at("name");
    reply(json_response(200, "{}"));
  });
  auto status_of = [&](const std::string& method, const std::string& path) {
    HttpRequest req;
    req.method = method;
    req.path = path;
    int status = 0;
    r.dispatch(req, [&](HttpResponse res) { status = res.status; });
    return status;
  };
  for (const char* path : {"/models/tiny_cnn%00", "/models/a.pt%00", "/models/a%0d%0a",
                           "/models/a%1f", "/models/%7f", "/models/a%0"}) {
    seen = "untouched";
    CHECK(status_of("DELETE", path) == 400);
    CHECK(seen == "untouched");
  }
  CHECK(status_of("DELETE", "/models/a%2Eb") == 200);
  CHECK(seen == "a.b");
  CHECK(status_of("HEAD", "/models/x") == 200);  // HEAD runs the GET route
  CHECK(status_of("PUT", "/models/x") == 405);
}
