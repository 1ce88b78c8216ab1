#include <catch2/catch.hpp>

#include "engine/store/blob_usage.h"

using servelab::store::BlobRef;
using servelab::store::BlobUsage;

namespace {
BlobRef blob(char c, uint64_t bytes) { return BlobRef{std::string(64, c), bytes, 0}; }
}  // namespace

TEST_CASE("unique and shared bytes of variants of one backbone, by hand", "[store][usage]") {
  // Backbone blobs a (1000 B) and b (500 B); heads h1 (10 B), h2 (20 B), h3 (30 B).
  BlobUsage usage;
  usage.set("v1", {blob('a', 1000), blob('b', 500), blob('1', 10)});
  auto one = usage.bytes_of("v1");
  CHECK(one.logical == 1510);
  CHECK(one.unique == 1510);  // alone, everything it has is its own
  CHECK(one.shared == 0);
  usage.set("v2", {blob('a', 1000), blob('b', 500), blob('2', 20)});
  usage.set("v3", {blob('a', 1000), blob('b', 500), blob('3', 30)});
  CHECK(usage.bytes_of("v1").unique == 10);
  CHECK(usage.bytes_of("v2").unique == 20);
  CHECK(usage.bytes_of("v3").shared == 1500);
  CHECK(usage.total_bytes() == 1500 + 60);  // one backbone plus three heads
}

TEST_CASE("a blob is freed when its last user goes, not before", "[store][usage]") {
  BlobUsage usage;
  usage.set("v1", {blob('a', 1000), blob('1', 10)});
  usage.set("v2", {blob('a', 1000), blob('2', 20)});
  auto freed = usage.remove("v1");
  CHECK(freed == std::vector<std::string>{std::string(64, '1')});
  CHECK(usage.bytes_of("v2").unique == 1020);  // now the backbone is v2's alone
  freed = usage.remove("v2");
  CHECK(freed.size() == 2);
  CHECK(usage.total_bytes() == 0);
  CHECK(usage.remove("nobody").empty());
}

TEST_CASE("tied weights count once for their model", "[store][usage]") {
  BlobUsage usage;
  usage.set("tied", {blob('e', 400), blob('e', 400), blob('x', 5)});
  CHECK(usage.bytes_of("tied").logical == 405);
  CHECK(usage.bytes_of("tied").unique == 405);
  CHECK(usage.remove("tied").size() == 2);
}
