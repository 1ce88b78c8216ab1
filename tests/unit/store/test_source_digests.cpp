#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/store/source_digests.h"
#include "tests/support/temp_dir.h"

using servelab::store::FileIdentity;
using servelab::store::SourceDigests;

namespace {

constexpr int64_t kSecond = 1'000'000'000;
const std::string kDigest(64, 'a');

// A file last changed at `changed_s` seconds (modified a second before).
FileIdentity identity(uint64_t inode, uint64_t size, int64_t changed_s) {
  return FileIdentity{7, inode, size, (changed_s - 1) * kSecond, changed_s * kSecond};
}

}  // namespace

TEST_CASE("a digest recorded for a settled file is found by its identity only",
          "[store][source_digests]") {
  servelab::testutil::TempDir dir;
  SourceDigests digests((dir / "sources").string());
  const FileIdentity id = identity(42, 1000, 100);
  digests.remember(id, kDigest, 100 * kSecond + SourceDigests::kSettledNs);
  CHECK(digests.find(id) == kDigest);
  // Another process on the same folder sees it.
  CHECK(SourceDigests((dir / "sources").string()).find(id) == kDigest);
  // Any part of the identity changed: not this file's bytes any more.
  FileIdentity other = id;
  other.size = 999;
  CHECK_FALSE(digests.find(other));
  other = id;
  other.changed_ns += 1;
  CHECK_FALSE(digests.find(other));
  other = id;
  other.modified_ns += 1;
  CHECK_FALSE(digests.find(other));
  CHECK_FALSE(digests.find(identity(43, 1000, 100)));
}

TEST_CASE("a file that changed within the settling time of its hashing is not recorded",
          "[store][source_digests]") {
  servelab::testutil::TempDir dir;
  SourceDigests digests((dir / "sources").string());
  const FileIdentity id = identity(42, 1000, 100);
  // Hashed 1.9 s after its last change: a write in the same tick could have kept its times.
  digests.remember(id, kDigest, 100 * kSecond + SourceDigests::kSettledNs - kSecond / 10);
  CHECK_FALSE(digests.find(id));
  // Modified (not changed) late is as unsettled.
  FileIdentity late = id;
  late.modified_ns = 101 * kSecond;
  digests.remember(late, kDigest, 102 * kSecond);
  CHECK_FALSE(digests.find(late));
}

TEST_CASE("damaged or malformed digest records are passed over", "[store][source_digests]") {
  servelab::testutil::TempDir dir;
  SourceDigests digests((dir / "sources").string());
  const FileIdentity id = identity(42, 1000, 100);
  const int64_t hashed = 200 * kSecond;
  SECTION("not a digest") {
    digests.remember(id, std::string(64, 'A'), hashed);  // upper case: not ours
    digests.remember(id, std::string(63, 'a'), hashed);
    CHECK_FALSE(digests.find(id));
  }
  SECTION("a record cut short or filled with other text") {
    digests.remember(id, kDigest, hashed);
    REQUIRE(digests.find(id));
    const auto record = dir / "sources" / "7-42";
    REQUIRE(std::filesystem::exists(record));
    std::filesystem::resize_file(record, 40);
    CHECK_FALSE(digests.find(id));
    std::ofstream(record, std::ios::trunc) << "1000 x y z " << kDigest << "\n";
    CHECK_FALSE(digests.find(id));
  }
}
