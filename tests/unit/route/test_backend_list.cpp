// `--backends host:port,...`: what parses and the message for each bad list.
#include <catch2/catch.hpp>

#include "engine/route/http/backend_list.h"

using servelab::route::parse_backends;

TEST_CASE("a backend list parses hosts and ports in order, IPv6 in brackets",
          "[route][backends]") {
  auto b = parse_backends("127.0.0.1:8080,localhost:9,[::1]:65535");
  REQUIRE(b.size() == 3);
  CHECK(b[0].host == "127.0.0.1");
  CHECK(b[0].port == 8080);
  CHECK(b[1].text() == "localhost:9");
  CHECK(b[2].host == "::1");
  CHECK(b[2].text() == "[::1]:65535");
}

TEST_CASE("bad backend lists are refused with the entry named", "[route][backends]") {
  CHECK_THROWS_WITH(parse_backends(""), Catch::Contains("empty"));
  CHECK_THROWS_WITH(parse_backends("a:1,,b:2"), Catch::Contains("empty entry"));
  CHECK_THROWS_WITH(parse_backends("a:1,"), Catch::Contains("empty entry"));
  CHECK_THROWS_WITH(parse_backends("hostonly"), Catch::Contains("'hostonly'") &&
                                                    Catch::Contains("host:port"));
  CHECK_THROWS_WITH(parse_backends("a:0"), Catch::Contains("1..65535"));
  CHECK_THROWS_WITH(parse_backends("a:65536"), Catch::Contains("1..65535"));
  CHECK_THROWS_WITH(parse_backends("a:12x"), Catch::Contains("1..65535"));
  CHECK_THROWS_WITH(parse_backends("a:-1"), Catch::Contains("1..65535"));
  CHECK_THROWS_WITH(parse_backends(":80"), Catch::Contains("1..253"));
  CHECK_THROWS_WITH(parse_backends("::1:80"), Catch::Contains("brackets"));
  CHECK_THROWS_WITH(parse_backends("[::1]80"), Catch::Contains("[address]:port"));
  CHECK_THROWS_WITH(parse_backends("a b:80"), Catch::Contains("bad character"));
  CHECK_THROWS_WITH(parse_backends("127.0.0.1:80,127.0.0.1:80"),
                    Catch::Contains("127.0.0.1:80 is listed twice"));
  CHECK_THROWS_WITH(parse_backends(std::string(300, 'h') + ":1"), Catch::Contains("1..253"));
}

TEST_CASE("a backend list is bounded", "[route][backends]") {
  std::string list;
  for (int i = 0; i < 1025; ++i) list += (i ? "," : "") + std::string("h:") + std::to_string(i + 1);
  CHECK_THROWS_WITH(parse_backends(list), Catch::Contains("more than 1024"));
}
