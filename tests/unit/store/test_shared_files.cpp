#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/store/shared_files.h"
#include "tests/support/temp_dir.h"

using servelab::store::SharedFiles;
namespace fs = std::filesystem;

namespace {

const std::string kSharedDigest(64, 'c');

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st;
}

}  // namespace

TEST_CASE("a model file offered for its digest is linked, not copied, by the next store",
          "[store][shared_files]") {
  servelab::testutil::TempDir dir;
  SharedFiles shared((dir.path() / "files").string());
  const fs::path a = dir.path() / "a.pt", b = dir.path() / "b.pt";
  write_bytes(a, "BYTES");
  // Nothing offered yet: nothing to link, and no name left behind.
  CHECK_FALSE(shared.link_copy(kSharedDigest, 5, b.string()));
  CHECK_FALSE(fs::exists(b));

  shared.offer(kSharedDigest, a.string());
  CHECK((stat_of(a).st_mode & 0777) == 0444);  // read-only: never written in place
  REQUIRE(shared.link_copy(kSharedDigest, 5, b.string()));
  CHECK(stat_of(b).st_ino == stat_of(a).st_ino);  // one file, three names
  CHECK(stat_of(a).st_nlink == 3);
  // Another size than the caller knows for the digest: not that copy.
  CHECK_FALSE(shared.link_copy(kSharedDigest, 6, (dir.path() / "c.pt").string()));
  CHECK_FALSE(fs::exists(dir.path() / "c.pt"));
  // A second offer of the digest keeps the first copy.
  write_bytes(dir.path() / "other.pt", "OTHER");
  shared.offer(kSharedDigest, (dir.path() / "other.pt").string());
  CHECK(stat_of(dir.path() / "files" / kSharedDigest).st_ino == stat_of(a).st_ino);
  // Names that are not digests are never paths.
  CHECK_FALSE(shared.link_copy("../a.pt", 5, (dir.path() / "d.pt").string()));
  CHECK_FALSE(shared.release("../a.pt"));
}

TEST_CASE("a shared copy goes when no store links it any more", "[store][shared_files]") {
  servelab::testutil::TempDir dir;
  SharedFiles shared((dir.path() / "files").string());
  const fs::path a = dir.path() / "a.pt", b = dir.path() / "b.pt";
  write_bytes(a, "BYTES");
  shared.offer(kSharedDigest, a.string());
  REQUIRE(shared.link_copy(kSharedDigest, 5, b.string()));
  fs::remove(a);
  CHECK_FALSE(shared.release(kSharedDigest));  // b still links it
  CHECK(shared.prune() == 0);
  fs::remove(b);
  CHECK(shared.prune() == 1);
  CHECK_FALSE(fs::exists(dir.path() / "files" / kSharedDigest));
  CHECK_FALSE(shared.link_copy(kSharedDigest, 5, b.string()));
  CHECK_FALSE(shared.release(kSharedDigest));  // gone already
}
