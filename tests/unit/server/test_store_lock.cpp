// The store lock (one server per model store) and the quarantine folders of the model store.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>

#include "engine/server/model_store.h"
#include "engine/server/store_lock.h"

using namespace servelab::server;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {
// A fresh directory removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("servelab-store-lock-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};
}  // namespace

TEST_CASE("a store lock is exclusive while it lives and free once it is released",
          "[server][store][lock]") {
  TempDir tmp;
  const std::string dir = tmp.path.string();
  auto first = std::make_unique<StoreLock>(dir);
  // A second holder, even in this process, is refused with the store and the holder named.
  REQUIRE_THROWS_WITH(StoreLock(dir), Contains("model store '" + dir + "'") &&
                                          Contains("in use by another server") &&
                                          Contains("process " + std::to_string(::getpid())));
  first.reset();
  CHECK_NOTHROW(StoreLock(dir));
  CHECK(fs::exists(tmp.path / StoreLock::kFileName));
}

TEST_CASE("a store lock of a directory that does not exist says which store",
          "[server][store][lock]") {
  TempDir tmp;
  const std::string dir = (tmp.path / "missing").string();
  REQUIRE_THROWS_WITH(StoreLock(dir), Contains("model store '" + dir + "'"));
}

TEST_CASE("each quarantine folder of a store is new and empty", "[server][store]") {
  TempDir tmp;
  ModelStore store((tmp.path / "store").string());
  const std::string a = store.make_quarantine_dir();
  const std::string b = store.make_quarantine_dir();  // the same second: a suffix
  CHECK(a != b);
  CHECK(fs::path(a).parent_path() == tmp.path / "store" / "quarantine");
  CHECK(fs::is_directory(a));
  CHECK(fs::is_empty(b));
  // Neither the folders nor the lock file are files of a model.
  StoreLock lock(store.dir());
  CHECK(store.stray_files({}).empty());
}
