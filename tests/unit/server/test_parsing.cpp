// Pure parsing pieces of the server: SHA-256, model names, multipart, register bodies, routes.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/server/model_store.h"
#include "engine/server/multipart.h"
#include "engine/server/register_request.h"
#include "engine/server/route_table.h"
#include "engine/store/digest.h"
#include "tests/integration/server/http_client.h"

using namespace servelab::server;
using servelab::store::Sha256;

TEST_CASE("sha256 matches the FIPS 180-4 test vectors", "[server][sha256]") {
  CHECK(Sha256::hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256::hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  CHECK(Sha256::hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Chunked updates across block boundaries give the same digest.
  Sha256 s;
  for (size_t i = 0; i < million.size(); i += 997) s.update(std::string_view(million).substr(i, 997));
  CHECK(s.hex_digest() == Sha256::hex(million));
}

TEST_CASE("model names are file names without separators", "[server][names]") {
  CHECK(model_name_problem("resnet50").empty());
  CHECK(model_name_problem("tiny_cnn-v1.2").empty());
  CHECK_FALSE(model_name_problem("").empty());
  CHECK_FALSE(model_name_problem("a/b").empty());
  CHECK_FALSE(model_name_problem("..").empty());
  CHECK_FALSE(model_name_problem("a\\b").empty());
  CHECK_FALSE(model_name_problem("with space").empty());
  CHECK_FALSE(model_name_problem(std::string(65, 'x')).empty());
  CHECK(model_name_problem(std::string(64, 'x')).empty());
}

TEST_CASE("multipart bodies split into named parts", "[server][multipart]") {
  const char raw[] = "\x00\r\n--not-the-boundary\r\n\xff";
  std::string binary(raw, sizeof(raw) - 1);
  std::string type;
  std::string body = servelab::testing::multipart_body(
      {{"name", "m1", ""}, {"model", binary, "m.pt"}, {"labels", "a\nb\n", ""}}, &type);
  auto parts = parse_multipart(type, body);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].name == "name");
  CHECK(parts[0].data == "m1");
  CHECK(parts[1].filename == "m.pt");
  CHECK(parts[1].data == binary);
  CHECK(find_part(parts, "labels")->data == "a\nb\n");
  CHECK(find_part(parts, "missing") == nullptr);

  SECTION("a preamble before the first boundary is skipped") {
    auto p = parse_multipart(type, "preamble text\r\n" + body);
    CHECK(p.size() == 3);
  }
  SECTION("malformed bodies are rejected") {
    CHECK_THROWS_AS(parse_multipart("multipart/form-data", body), MultipartError);
    CHECK_THROWS_AS(parse_multipart("application/json", body), MultipartError);
    CHECK_THROWS_AS(parse_multipart(type, body.substr(0, body.size() / 2)), MultipartError);
    CHECK_THROWS_AS(parse_multipart(type, "garbage"), MultipartError);
    std::string no_name = "--servelab-test-boundary-7f3a9c\r\nContent-Type: text/plain\r\n\r\n"
                          "x\r\n--servelab-test-boundary-7f3a9c--\r\n";
    CHECK_THROWS_WITH(parse_multipart(type, no_name), Catch::Contains("Content-Disposition"));
  }
  CHECK(multipart_boundary("multipart/form-data; boundary=\"q b\"") == std::string("q b"));
}

namespace {
HttpRequest post(std::string type, std::string body) {
  HttpRequest r;
  r.method = "POST";
  r.path = r.target = "/register";
  if (!type.empty()) r.headers.emplace_back("content-type", type);
  r.body = std::move(body);
  return r;
}
int status_of(HttpRequest req) {
  try {
    parse_register_request(req);
  } catch (const HttpError& e) {
    return e.status;
  }
  return 200;
}
}  // namespace

TEST_CASE("register bodies: JSON path form and multipart upload form", "[server][register]") {
  auto req = post("application/json",
                  R"({"name":"m","path":"/x/m.pt","labels":["cat","dog"],
                      "preprocess":{"input_size":[64,48],"resize":0,"mean":[0,0,0],"std":[1,1,1]}})");
  RegisterRequest r = parse_register_request(req);
  CHECK(r.name == "m");
  CHECK(r.source_path == "/x/m.pt");
  CHECK_FALSE(r.model_bytes);
  CHECK(r.labels == std::vector<std::string>{"cat", "dog"});
  CHECK(r.preprocess.input_width == 64);
  CHECK(r.preprocess.input_height == 48);
  CHECK(r.preprocess.resize == 0);
  CHECK(r.preprocess.std[2] == 1.0f);

  std::string type;
  std::string body = servelab::testing::multipart_body(
      {{"name", "up", ""}, {"model", "BYTES", "up.pt"}, {"labels", "x\r\n\r\ny\r\n", "l.txt"},
       {"preprocess", R"({"input_size": 32})", ""}},
      &type);
  auto up = post(type, body);
  r = parse_register_request(up);
  CHECK(r.name == "up");
  REQUIRE(r.model_bytes);
  CHECK(*r.model_bytes == "BYTES");
  CHECK(r.labels == std::vector<std::string>{"x", "y"});
  CHECK(r.preprocess.input_width == 32);
  CHECK(r.preprocess.input_height == 32);
  CHECK(r.preprocess.resize == 256);  // default kept

  SECTION("malformed or incomplete bodies are 400") {
    CHECK(status_of(post("application/json", "{not json")) == 400);
    CHECK(status_of(post("application/json", "[1,2]")) == 400);
    CHECK(status_of(post("application/json", R"({"name":"m"})")) == 400);
    CHECK(status_of(post("application/json", R"({"name":"m","path":"/p","extra":1})")) == 400);
    CHECK(status_of(post("application/json",
                         R"({"name":"m","path":"/p","preprocess":{"std":[1,0,1]}})")) == 400);
    CHECK(status_of(post("application/json",
                         R"({"name":"m","path":"/p","preprocess":{"input_size":-3}})")) == 400);
    CHECK(status_of(post("application/json",
                         R"({"name":"m","path":"/p","preprocess":{"sizes":3}})")) == 400);
    CHECK(status_of(post("text/plain", "x")) == 400);
    CHECK(status_of(post("multipart/form-data; boundary=zz", "--zz\r\nbroken")) == 400);
    std::string t;
    std::string no_model = servelab::testing::multipart_body({{"name", "m", ""}}, &t);
    CHECK(status_of(post(t, no_model)) == 400);
  }
}

TEST_CASE("preprocess JSON round-trips", "[server][register]") {
  servelab::runtime::Preprocess p;
  p.input_width = 100;
  p.mean[1] = 0.25f;
  auto q = preprocess_from_json(preprocess_to_json(p));
  CHECK(q.input_width == 100);
  CHECK(q.input_height == p.input_height);
  CHECK(q.mean[1] == 0.25f);
}

TEST_CASE("route table: params, 404 and 405", "[server][routes]") {
  RouteTable routes;
  std::string seen;
  routes.add("GET", "/models/{name}", [&](HttpRequest&, const PathParams& p, Reply reply) {
    seen = p.at("name");
    reply(json_response(200, "{}"));
  });
  routes.add("DELETE", "/models/{name}", [&](HttpRequest&, const PathParams&, Reply reply) {
    reply(json_response(200, "{}"));
  });
  auto run = [&](const std::string& method, const std::string& target, std::string* route) {
    const std::string* matched = nullptr;
    HttpRequest req;
    req.method = method;
    req.target = target;
    split_target(target, &req.path, &req.query);
    HttpResponse out;
    routes.dispatch(req, [&](HttpResponse r) { out = std::move(r); }, &matched);
    REQUIRE(matched != nullptr);
    *route = *matched;
    return out;
  };
  std::string route;
  CHECK(run("GET", "/models/res%2Dnet?x=1", &route).status == 200);
  CHECK(seen == "res-net");
  CHECK(route == "/models/{name}");
  auto r405 = run("POST", "/models/x", &route);
  CHECK(r405.status == 405);
  CHECK(r405.headers.at(0).second == "GET, HEAD, DELETE");
  CHECK(nlohmann::json::parse(r405.body).contains("error"));
  CHECK(run("GET", "/nothing/here", &route).status == 404);
  CHECK(route == "unmatched");
  CHECK(run("GET", "/models/bad%zzescape", &route).status == 400);
  CHECK(run("GET", "/models", &route).status == 404);
}

TEST_CASE("query strings are decoded", "[server][routes]") {
  std::string path;
  std::map<std::string, std::string> q;
  split_target("/classify/m?top_k=3&x=a%20b&flag", &path, &q);
  CHECK(path == "/classify/m");
  CHECK(q["top_k"] == "3");
  CHECK(q["x"] == "a b");
  CHECK(q.count("flag") == 1);
}
