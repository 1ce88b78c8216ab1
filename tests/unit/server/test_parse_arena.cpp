// ParseArena: json documents parsed into the thread's arena stay intact until the outermost
// scope ends, bodies larger than its first block parse alike, and the arena is reused.
#include <catch2/catch.hpp>
#include <string>

#include "engine/server/parse_arena.h"
#include "engine/server/v2_protocol.h"

using namespace servelab::server;

TEST_CASE("parse arena: an inner scope's end frees nothing of the outer scope", "[server][v2]") {
  ParseArena::Scope outer;
  ArenaJson first = ArenaJson::parse(R"({"name":"first","values":[1,2,3]})");
  {
    ParseArena::Scope inner;
    ArenaJson tmp = ArenaJson::parse(R"({"name":"inner"})");
    CHECK(tmp["name"] == "inner");
  }
  // Had the inner scope released the arena, this would reuse (overwrite) first's nodes.
  ArenaJson second = ArenaJson::parse(R"({"name":"second","values":[7,8,9,10,11,12]})");
  CHECK(first["name"] == "first");
  CHECK(first["values"] == ArenaJson::array({1, 2, 3}));
  CHECK(second["values"].size() == 6);
}

TEST_CASE("parse arena: large JSON tensors parse the same, again and again", "[server][v2]") {
  const TensorSpec input = v2_input_spec(32, 32);
  const TensorSpec output = v2_output_spec(10);
  std::string data;  // 2 x 3 x 32 x 32 values: a document far over the arena's first block
  for (int i = 0; i < 2 * 3 * 32 * 32; ++i) data += (i ? "," : "") + std::to_string(i % 251);
  const std::string body = R"({"inputs":[{"name":"INPUT__0","datatype":"FP32","shape":[2,3,32,32],"data":[)" +
                           data + "]}]}";
  for (int round = 0; round < 3; ++round) {
    V2InferRequest r = parse_v2_infer(body, nullptr, input, output, 8);
    REQUIRE(r.items.size() == 2);
    REQUIRE(r.items[1].size() == 3 * 32 * 32);
    CHECK(r.items[0][5] == 5.0f);
    CHECK(r.items[1][0] == float((3 * 32 * 32) % 251));
  }
}
