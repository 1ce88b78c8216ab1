// Model store (atomic writes, checksums) and the SQLite registry, on a temporary directory.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "engine/server/model_store.h"
#include "engine/server/registry.h"
#include "engine/store/digest.h"
#include "engine/store/shared_files.h"
#include "engine/store/source_digests.h"
#include "tests/integration/server/http_client.h"

using namespace servelab::server;
using servelab::store::Sha256;
namespace fs = std::filesystem;

namespace {
// A fresh directory removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("servelab-server-unit-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

size_t count_files(const fs::path& dir) {
  size_t n = 0;
  for (auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}
}  // namespace

TEST_CASE("model store writes atomically and checksums", "[server][store]") {
  TempDir tmp;
  ModelStore store((tmp.path / "store").string());
  std::string data(100000, 'q');
  StoredFile f = store.put("m1", data);
  CHECK(f.path == store.path_of("m1"));
  CHECK(f.bytes == data.size());
  CHECK(f.sha256 == Sha256::hex(data));
  CHECK(servelab::testing::read_file(f.path) == data);
  CHECK(count_files(store.dir()) == 1);  // no temp file left behind

  // Replacing keeps one file with the new contents.
  store.put("m1", "new");
  CHECK(servelab::testing::read_file(f.path) == "new");
  CHECK(count_files(store.dir()) == 1);

  SECTION("copy from a server-side file") {
    std::string src = (tmp.path / "src.pt").string();
    std::ofstream(src, std::ios::binary) << "SOURCE";
    StoredFile c = store.copy_from("m2", src);
    CHECK(c.sha256 == Sha256::hex("SOURCE"));
    CHECK(Sha256::hex_file(c.path) == c.sha256);
  }
  SECTION("a missing or non-regular source is a StoreError and leaves nothing") {
    CHECK_THROWS_AS(store.copy_from("m3", (tmp.path / "nope.pt").string()), StoreError);
    CHECK_THROWS_AS(store.copy_from("m3", tmp.path.string()), StoreError);
    // A FIFO is refused at once (its open does not wait for a writer).
    const std::string fifo = (tmp.path / "fifo.pt").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(store.copy_from("m3", fifo), Catch::Contains("not a regular file"));
    CHECK_FALSE(fs::exists(store.path_of("m3")));
    CHECK(count_files(store.dir()) == 1);
  }
  SECTION("a written file is made durable; one removed since cannot be") {
    CHECK_NOTHROW(store.make_durable(f));
    store.remove("m1");
    CHECK_THROWS_WITH(store.make_durable(f), Catch::Contains("fsync of '" + f.path));
  }
  store.remove("m1");
  store.remove("never-existed");
  CHECK_FALSE(fs::exists(f.path));
}

TEST_CASE("a file hashed once is copied on its recorded digest until its identity changes",
          "[server][store]") {
  using servelab::store::FileIdentity;
  using servelab::store::SourceDigests;
  TempDir tmp;
  ModelStore store((tmp.path / "store").string());
  SourceDigests digests((tmp.path / "sources").string(), /*settled_ns=*/0);
  const std::string src = (tmp.path / "src.pt").string();
  std::string bytes(300'000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 % 253);
  std::ofstream(src, std::ios::binary) << bytes;

  const StoredFile first = store.copy_from("a", src, &digests);
  CHECK(first.sha256 == Sha256::hex(bytes));
  struct stat st {};
  REQUIRE(::stat(src.c_str(), &st) == 0);
  const FileIdentity id = FileIdentity::of(st);
  REQUIRE(digests.find(id) == first.sha256);

  // A record planted with another digest is what the next copy answers: it was not hashed.
  const std::string planted(64, 'b');
  digests.remember(id, planted, SourceDigests::now_ns());
  const StoredFile second = store.copy_from("b", src, &digests);
  CHECK(second.sha256 == planted);
  CHECK(second.bytes == bytes.size());
  CHECK(servelab::testing::read_file(second.path) == bytes);

  // Written again: another identity, hashed again, and recorded.
  bytes += "more";
  std::ofstream(src, std::ios::binary | std::ios::trunc) << bytes;
  const StoredFile third = store.copy_from("c", src, &digests);
  CHECK(third.sha256 == Sha256::hex(bytes));
  CHECK(servelab::testing::read_file(third.path) == bytes);
  // Without records, the file is hashed.
  CHECK(store.copy_from("d", (tmp.path / "src.pt").string()).sha256 == Sha256::hex(bytes));
}

TEST_CASE("a file whose digest has a shared copy is linked to that copy, not read",
          "[server][store]") {
  using servelab::store::FileIdentity;
  using servelab::store::SharedFiles;
  using servelab::store::SourceDigests;
  TempDir tmp;
  ModelStore first((tmp.path / "first").string()), second((tmp.path / "second").string());
  SourceDigests digests((tmp.path / "sources").string(), /*settled_ns=*/0);
  SharedFiles shared((tmp.path / "files").string());
  const std::string src = (tmp.path / "src.pt").string();
  const std::string bytes(200'000, 'x');
  std::ofstream(src, std::ios::binary) << bytes;

  const StoredFile a = first.copy_from("m", src, &digests, &shared);  // hashed and recorded
  CHECK(a.sha256 == Sha256::hex(bytes));
  first.make_durable(a);
  shared.offer(a.sha256, a.path);  // as the server does once the file is durable
  // The shared copy is what the second store's file is: the same inode, the source unread
  // (a copy of the source would have its bytes; the shared copy was changed to tell them apart).
  std::fstream(a.path, std::ios::binary | std::ios::in | std::ios::out) << "CHANGED";
  const StoredFile b = second.copy_from("m", src, &digests, &shared);
  CHECK(b.sha256 == a.sha256);
  CHECK(b.bytes == bytes.size());
  struct stat sa {}, sb {};
  REQUIRE(::stat(a.path.c_str(), &sa) == 0);
  REQUIRE(::stat(b.path.c_str(), &sb) == 0);
  CHECK(sb.st_ino == sa.st_ino);
  CHECK(servelab::testing::read_file(b.path).substr(0, 7) == "CHANGED");
  // Without the shared copy (no store links it), the source is copied again.
  first.remove("m");
  second.remove("m");
  CHECK(shared.prune() == 1);
  const StoredFile c = second.copy_from("m", src, &digests, &shared);
  CHECK(servelab::testing::read_file(c.path) == bytes);
}

TEST_CASE("registry keeps rows across reopen", "[server][registry]") {
  TempDir tmp;
  std::string db = (tmp.path / "registry.sqlite").string();
  RegistryRow row;
  row.name = "alpha";
  row.file = "/store/alpha.pt";
  row.checksum = "abc";
  row.param_bytes = 1ull << 33;  // beyond 32 bits
  row.workspace_bytes = 7;
  row.size_bytes = (1ull << 33) + 7;
  row.preprocess_json = R"({"input_width":32})";
  row.labels = {"cat", "dog \"quoted\"", "ünïcode"};
  row.registered_at = 1700000000;
  {
    Registry reg(db);
    CHECK(reg.insert(row));
    CHECK_FALSE(reg.insert(row));  // duplicate name
    RegistryRow beta = row;
    beta.name = "beta";
    beta.registered_at = 1700000001;
    CHECK(reg.insert(beta));
    CHECK(reg.all().size() == 2);
  }
  Registry reg(db);
  auto rows = reg.all();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].name == "alpha");
  CHECK(rows[1].name == "beta");
  auto a = reg.find("alpha");
  REQUIRE(a);
  CHECK(a->param_bytes == row.param_bytes);
  CHECK(a->size_bytes == row.size_bytes);
  CHECK(a->labels == row.labels);
  CHECK(a->preprocess_json == row.preprocess_json);
  CHECK(a->registered_at == row.registered_at);
  reg.update_sizes("alpha", 1, 2, 3);
  CHECK(reg.find("alpha")->size_bytes == 3);
  CHECK(reg.remove("alpha"));
  CHECK_FALSE(reg.remove("alpha"));
  CHECK_FALSE(reg.find("alpha"));
  CHECK(reg.all().size() == 1);
}

TEST_CASE("registry keeps group rows across reopen", "[server][registry][groups]") {
  TempDir tmp;
  std::string db = (tmp.path / "registry.sqlite").string();
  {
    Registry reg(db);
    CHECK(reg.insert_group({"g2", R"({"name":"g2"})", 1700000001}));
    CHECK(reg.insert_group({"g1", R"({"name":"g1"})", 1700000000}));
    CHECK_FALSE(reg.insert_group({"g1", "{}", 1}));  // duplicate name
  }
  Registry reg(db);
  auto rows = reg.all_groups();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].name == "g1");  // creation order
  CHECK(rows[0].definition_json == R"({"name":"g1"})");
  CHECK(rows[1].created_at == 1700000001);
  CHECK(reg.remove_group("g1"));
  CHECK_FALSE(reg.remove_group("g1"));
  CHECK(reg.all_groups().size() == 1);
  CHECK(reg.all().empty());  // models and groups are apart
}

TEST_CASE("registry reports an unusable database path", "[server][registry]") {
  TempDir tmp;
  CHECK_THROWS_AS(Registry((tmp.path / "no" / "such" / "dir" / "db").string()), RegistryError);
}
