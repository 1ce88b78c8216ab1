// A weight store shared by `servelab serve` processes after a kill -9: the others keep
// serving from the blobs the killed one shared, nothing it still held is deleted, and its
// restart serves its models again and removes only what the crash left behind (a mark of a
// model it no longer has, with the skeleton and blob only that mark kept; half-written files).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "engine/store/blob_store.h"
#include "engine/store/holders.h"
#include "tests/integration/server/http_client.h"
#include "tests/integration/server/serve_process.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
namespace fs = std::filesystem;
namespace store = servelab::store;

namespace {

std::vector<std::string> serve_args(const fs::path& dir, const std::string& name) {
  return {"--port", "0", "--store", (dir / name).string(), "--weight-store",
          (dir / "weights").string()};
}

void register_model(uint16_t port, const std::string& model) {
  auto up = HttpClient(port).post_form("/register", register_form(model, model));
  INFO(up.body);
  REQUIRE(up.status == 201);
}

int classify(uint16_t port, const std::string& model) {
  return HttpClient(port)
      .request("POST", "/classify/" + model, read_file(image_file("gradient.jpg")), "image/jpeg")
      .status;
}

std::set<fs::path> files_under(const fs::path& dir) {
  std::set<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.insert(e.path());
  return files;
}

// The holder name under which the server of `store_dir` marked its models: its one mark's
// file name less the 17-character "-<name hash>".
std::string holder_of(const fs::path& weights) {
  for (const auto& e : fs::recursive_directory_iterator(weights / "holders"))
    if (e.is_regular_file()) {
      const std::string f = e.path().filename().string();
      return f.substr(0, f.size() - 17);
    }
  FAIL("no mark in " << weights);
  return "";
}

}  // namespace

TEST_CASE("kill -9 of one server on a shared weight store: the other serves on, the restart "
          "serves again and removes only the crash's leftovers", "[server][weights][kill]") {
  TempDir dir;
  const fs::path weights = dir.path / "weights";
  auto a = std::make_unique<ServeProcess>(serve_args(dir.path, "store-a"), dir.path / "a");
  const uint16_t port_a = a->wait_port(std::chrono::seconds(120));
  INFO(a->err());
  REQUIRE(port_a != 0);
  for (const char* m : {"tiny_variant_0", "tiny_variant_1"}) register_model(port_a, m);
  const std::string holder_a = holder_of(weights);

  ServeProcess b(serve_args(dir.path, "store-b"), dir.path / "b");
  const uint16_t port_b = b.wait_port(std::chrono::seconds(120));
  REQUIRE(port_b != 0);
  register_model(port_b, "tiny_variant_0");
  REQUIRE(classify(port_a, "tiny_variant_1") == 200);
  a->kill9();

  // B serves on, and deleting its model keeps every blob A's models hold.
  const std::set<fs::path> before = files_under(weights / "blobs");
  CHECK(classify(port_b, "tiny_variant_0") == 200);
  REQUIRE(HttpClient(port_b).request("DELETE", "/models/tiny_variant_0", "", "").status == 200);
  CHECK(files_under(weights / "blobs") == before);

  // What a crash of A could have left: a mark of a model A no longer has (its skeleton and
  // blob kept by nothing else) and half-written skeleton and blob files.
  const std::string ghost(64, 'e');
  const std::vector<char> bytes(4096, 7);
  store::BlobStore blobs((weights / "blobs").string());
  const store::BlobRef ghost_blob = blobs.put(std::string(64, 'f'), bytes.data(), bytes.size());
  {
    store::Holders h(weights.string(), holder_a);
    store::Holders::Lock lock(h);
    std::ofstream(weights / "skeletons" / (ghost + ".pt")) << "skeleton";
    h.hold(ghost, "deleted_model", {ghost_blob});
  }
  const fs::path half_skeleton = weights / "skeletons" / (ghost + ".pt.tmp-999999");
  const fs::path half_blob = fs::path(blobs.path_of(ghost_blob.id)).parent_path() / ".tmp-x-999999-1";
  std::ofstream(half_skeleton) << "partial";
  std::ofstream(half_blob) << "partial";

  a = std::make_unique<ServeProcess>(serve_args(dir.path, "store-a"), dir.path / "a2");
  const uint16_t port_a2 = a->wait_port(std::chrono::seconds(120));
  INFO(a->err());
  REQUIRE(port_a2 != 0);
  CHECK(classify(port_a2, "tiny_variant_0") == 200);
  CHECK(classify(port_a2, "tiny_variant_1") == 200);
  CHECK(a->err().find("released 1 mark(s)") != std::string::npos);
  CHECK_FALSE(fs::exists(blobs.path_of(ghost_blob.id)));
  CHECK_FALSE(fs::exists(weights / "skeletons" / (ghost + ".pt")));
  CHECK_FALSE(fs::exists(half_skeleton));
  CHECK_FALSE(fs::exists(half_blob));
  CHECK(files_under(weights / "blobs") == before);  // A's models' blobs, all still there
}
