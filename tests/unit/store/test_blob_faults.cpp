// Blobs damaged, deleted or unwritable: refused with a clear error, the rest still served.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "engine/store/blob_store.h"
#include "tests/support/temp_dir.h"

using servelab::store::BlobError;
using servelab::store::BlobRef;
using servelab::store::BlobStore;
namespace fs = std::filesystem;

namespace {

BlobRef put_bytes(BlobStore& store, const std::vector<char>& b) {
  return store.put(BlobStore::content_id("Char " + std::to_string(b.size()), b.data(), b.size()),
                   b.data(), b.size());
}

std::vector<char> bytes(size_t n, char first) {
  std::vector<char> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<char>(first + i % 97);
  return b;
}

// Opens a blob file for writing although the store made it read-only.
void rewrite(const std::string& path, const std::function<void(std::fstream&)>& change) {
  fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  change(f);
}

}  // namespace

TEST_CASE("a truncated blob is refused and the others still map", "[store][blob][faults]") {
  servelab::testutil::TempDir dir;
  BlobStore store((dir / "blobs").string());
  BlobRef hurt = put_bytes(store, bytes(10'000, 'a'));
  BlobRef fine = put_bytes(store, bytes(10'000, 'b'));
  fs::resize_file(store.path_of(hurt.id), 4'000);
  CHECK_THROWS_WITH(store.map(hurt), Catch::Contains("truncated") && Catch::Contains(hurt.id));
  CHECK(store.map(fine)->size() == fine.bytes);
}

TEST_CASE("a blob changed on disk fails its checksum", "[store][blob][faults]") {
  servelab::testutil::TempDir dir;
  BlobStore store((dir / "blobs").string());
  BlobRef ref = put_bytes(store, bytes(10'000, 'c'));
  rewrite(store.path_of(ref.id), [](std::fstream& f) {
    f.seekp(5'000);
    f.put('!');
  });
  CHECK_THROWS_WITH(store.map(ref), Catch::Contains("checksum"));
  // Putting the tensor again repairs the blob: the damaged file is replaced.
  BlobRef again = put_bytes(store, bytes(10'000, 'c'));
  CHECK(again.id == ref.id);
  CHECK(store.map(again)->size() == ref.bytes);
}

TEST_CASE("a missing blob is named in the error", "[store][blob][faults]") {
  servelab::testutil::TempDir dir;
  BlobStore store((dir / "blobs").string());
  BlobRef ref = put_bytes(store, bytes(5'000, 'd'));
  fs::remove(store.path_of(ref.id));
  CHECK_THROWS_AS(store.map(ref), BlobError);
  CHECK_THROWS_WITH(store.map(ref), Catch::Contains("missing") && Catch::Contains(ref.id));
}

TEST_CASE("a blob deleted while mapped stays readable by its holder", "[store][blob][faults]") {
  servelab::testutil::TempDir dir;
  BlobStore store((dir / "blobs").string());
  auto data = bytes(50'000, 'e');
  BlobRef gone = put_bytes(store, data);
  BlobRef kept = put_bytes(store, bytes(50'000, 'f'));
  auto held = store.map(gone);
  CHECK(store.remove_except({kept.id}) == 1);
  CHECK_FALSE(fs::exists(store.path_of(gone.id)));
  CHECK(fs::exists(store.path_of(kept.id)));
  CHECK(std::memcmp(held->data(), data.data(), data.size()) == 0);
  // A holder keeps its mapping; a new map of the deleted blob reuses it while it lives.
  CHECK(store.map(gone).get() == held.get());
  held.reset();
  CHECK_THROWS_AS(store.map(gone), BlobError);
}

TEST_CASE("a full disk fails the put with a clear error and leaves no partial file",
          "[store][blob][faults]") {
  servelab::testutil::TempDir dir;
  const std::string root = (dir / "blobs").string();
  pid_t pid = fork();
  if (pid == 0) {
    // In the child: files may not grow past 64 KiB, as on a disk with that much room left.
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{64 << 10, 64 << 10};
    setrlimit(RLIMIT_FSIZE, &lim);
    BlobStore store(root);
    try {
      put_bytes(store, bytes(1 << 20, 'g'));
      _exit(1);  // the write should have failed
    } catch (const std::runtime_error& e) {
      _exit(std::strstr(e.what(), "cannot write blob") ? 0 : 2);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) files += e.is_regular_file();
  CHECK(files == 0);
  BlobStore store(root);  // the store still takes blobs once there is room
  BlobRef ref = put_bytes(store, bytes(1 << 20, 'g'));
  CHECK(store.map(ref)->size() == ref.bytes);
}
