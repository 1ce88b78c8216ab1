#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "engine/store/blob_store.h"
#include "tests/support/temp_dir.h"

using servelab::store::BlobError;
using servelab::store::BlobRef;
using servelab::store::BlobStore;
namespace fs = std::filesystem;

namespace {

std::vector<float> weights(size_t n, float seed) {
  std::vector<float> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = seed + 0.001f * static_cast<float>(i);
  return w;
}

BlobRef put_floats(BlobStore& store, const std::vector<float>& w) {
  const size_t n = w.size() * sizeof(float);
  return store.put(BlobStore::content_id("Float " + std::to_string(w.size()), w.data(), n),
                   w.data(), n);
}

size_t files_in(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

}  // namespace

TEST_CASE("a blob put and mapped again reads back its bytes", "[store][blob]") {
  servelab::testutil::TempDir dir;
  BlobStore store((dir / "blobs").string());
  auto w = weights(4096, 1.0f);
  BlobRef ref = put_floats(store, w);
  CHECK(ref.bytes == w.size() * sizeof(float));
  CHECK(BlobStore::valid_id(ref.id));
  auto blob = store.map(ref);
  REQUIRE(blob->size() == ref.bytes);
  CHECK(std::memcmp(blob->data(), w.data(), ref.bytes) == 0);
  CHECK(fs::file_size(store.path_of(ref.id)) == ref.bytes);
}

TEST_CASE("equal tensors are one blob and one mapping, different ones are two",
          "[store][blob]") {
  servelab::testutil::TempDir dir;
  BlobStore store((dir / "blobs").string());
  BlobRef a = put_floats(store, weights(2048, 1.0f));
  BlobRef again = put_floats(store, weights(2048, 1.0f));
  BlobRef b = put_floats(store, weights(2048, 2.0f));
  CHECK(a.id == again.id);
  CHECK(a.id != b.id);
  CHECK(files_in(dir / "blobs") == 2);
  auto m1 = store.map(a);
  auto m2 = store.map(again);
  CHECK(m1.get() == m2.get());  // one mapping per process
  CHECK(store.mapped_bytes() == a.bytes);
  auto m3 = store.map(b);
  CHECK(store.mapped_bytes() == a.bytes + b.bytes);
  m1.reset();
  m2.reset();
  CHECK(store.mapped_bytes() == b.bytes);  // unmapped with its last holder
}

TEST_CASE("the same shape and bytes under another description is another blob",
          "[store][blob]") {
  // Ids cover the description: float bytes read as int32 are not the same tensor.
  auto w = weights(1024, 1.0f);
  const size_t n = w.size() * sizeof(float);
  CHECK(BlobStore::content_id("Float 1024", w.data(), n) !=
        BlobStore::content_id("Int 1024", w.data(), n));
  CHECK(BlobStore::content_id("Float 1024", w.data(), n) !=
        BlobStore::content_id("Float 32 32", w.data(), n));
}

TEST_CASE("threads and processes putting one blob at once leave one intact blob",
          "[store][blob]") {
  servelab::testutil::TempDir dir;
  const std::string root = (dir / "blobs").string();
  auto w = weights(64 * 1024, 3.0f);
  std::vector<pid_t> children;
  for (int p = 0; p < 3; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      BlobStore mine(root);
      for (int i = 0; i < 20; ++i) put_floats(mine, w);
      _exit(0);
    }
    children.push_back(pid);
  }
  BlobStore store(root);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] { for (int i = 0; i < 20; ++i) put_floats(store, w); });
  for (auto& t : threads) t.join();
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  BlobRef ref = put_floats(store, w);
  CHECK(files_in(root) == 1);  // no temp file left behind
  auto blob = store.map(ref);
  CHECK(std::memcmp(blob->data(), w.data(), ref.bytes) == 0);
}

TEST_CASE("ids that are not 64 hex digits are refused before any path is built",
          "[store][blob]") {
  servelab::testutil::TempDir dir;
  BlobStore store((dir / "blobs").string());
  const std::vector<std::string> bad_ids = {"", "../../etc/passwd", std::string(64, 'g'),
                                            std::string(63, 'a'), std::string(64, 'A')};
  for (const std::string& bad : bad_ids) {
    CAPTURE(bad);
    CHECK_FALSE(BlobStore::valid_id(bad));
    CHECK_THROWS_AS(store.path_of(bad), BlobError);
    CHECK_THROWS_AS(store.map(BlobRef{bad, 4, 0}), BlobError);
  }
}
