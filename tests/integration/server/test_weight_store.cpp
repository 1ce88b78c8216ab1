// `servelab serve --weight-store DIR`: variants of one backbone report what they share, and
// servers on one machine that name the same DIR hold its weights in memory once (TrIMS's
// sharing across processes), shown by the proportional set size (PSS) of their mappings.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/server/registry.h"
#include "engine/store/digest.h"
#include "engine/store/source_digests.h"
#include "tests/integration/server/http_client.h"
#include "tests/integration/server/serve_process.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// TinyVariant (scripts/make-models), by hand: its blobs are conv2.weight (64x32x3x3 floats,
// the shared backbone), head.weight (100x64 floats) and the pack of its small tensors (4,240
// bytes: see tests/integration/runtime/test_shared_weights.cpp), each variant's own.
constexpr uint64_t kBackboneBytes = 64 * 32 * 3 * 3 * 4;
constexpr uint64_t kHeadBytes = 100 * 64 * 4 + 4240;

struct MappedKb {
  long rss = 0, pss = 0;
};

// Rss and Pss (kB) of process `pid`'s mappings of files under `dir`, from /proc/PID/smaps.
MappedKb mapped_under(pid_t pid, const fs::path& dir) {
  std::ifstream smaps("/proc/" + std::to_string(pid) + "/smaps");
  REQUIRE(smaps);
  MappedKb kb;
  bool inside = false;
  const std::string prefix = fs::canonical(dir).string() + "/";
  for (std::string line; std::getline(smaps, line);) {
    std::istringstream s(line);
    std::string first;
    s >> first;
    if (first.find('-') != std::string::npos && first.back() != ':') {  // a mapping's header
      std::string perms, offset, dev, inode, path;
      s >> perms >> offset >> dev >> inode >> path;
      inside = path.rfind(prefix, 0) == 0;
    } else if (inside && first == "Rss:") {
      long v;
      s >> v;
      kb.rss += v;
    } else if (inside && first == "Pss:") {
      long v;
      s >> v;
      kb.pss += v;
    }
  }
  return kb;
}

void register_and_classify(uint16_t port, const std::string& model) {
  HttpClient c(port);
  auto up = c.post_json("/register", register_json(model, model));  // the file, by its path
  INFO(up.body);
  REQUIRE(up.status == 201);
  auto r = c.request("POST", "/classify/" + model, read_file(image_file("gradient.jpg")),
                     "image/jpeg");
  INFO(r.body);
  REQUIRE(r.status == 200);
}

}  // namespace

TEST_CASE("models and metrics report the logical, unique and shared bytes of their weights",
          "[server][weights]") {
  TempDir dir;
  TestServer ts((dir.path / "store").string(), [&](auto& eo, auto&) {
    eo.weight_store = (dir.path / "weights").string();
  });
  HttpClient c(ts.port());
  for (const char* m : {"tiny_variant_0", "tiny_variant_1"})
    REQUIRE(c.post_form("/register", register_form(m, m)).status == 201);
  json j = json::parse(c.get("/models/tiny_variant_0").body);
  CHECK(j["weights"]["logical_bytes"] == kBackboneBytes + kHeadBytes);
  CHECK(j["weights"]["unique_bytes"] == kHeadBytes);
  CHECK(j["weights"]["shared_bytes"] == kBackboneBytes);
  const std::string metrics = c.get("/metrics").body;
  CHECK(metric_sum(metrics, "servelab_model_weight_bytes{model=\"tiny_variant_1\",kind=\"unique\"") ==
        kHeadBytes);
  CHECK(metric_sum(metrics, "servelab_model_weight_bytes{model=\"tiny_variant_1\",kind=\"shared\"") ==
        kBackboneBytes);
}

TEST_CASE("two servers on one weight store hold its weights in memory once",
          "[server][weights][processes]") {
  TempDir dir;
  const fs::path weights = dir.path / "weights";
  auto args = [&](const std::string& store) {
    return std::vector<std::string>{"--port", "0", "--store", (dir.path / store).string(),
                                    "--weight-store", weights.string(), "--model-root",
                                    models_dir()};
  };
  ServeProcess first(args("store-a"), dir.path / "a");
  const uint16_t port_a = first.wait_port(std::chrono::seconds(120));
  INFO(first.err());
  REQUIRE(port_a != 0);
  const int64_t registered_from = servelab::store::SourceDigests::now_ns();
  register_and_classify(port_a, "tiny_variant_0");
  // The file's digest is recorded under its identity, for the second server to take, when the
  // file had settled (as a file exported before the tests has).
  struct stat st {};
  REQUIRE(::stat(model_file("tiny_variant_0").c_str(), &st) == 0);
  const auto id = servelab::store::FileIdentity::of(st);
  const bool settled = std::max(id.modified_ns, id.changed_ns) +
                           servelab::store::SourceDigests::kSettledNs <
                       registered_from;
  if (settled) {
    CHECK(servelab::store::SourceDigests((weights / "sources").string()).find(id) ==
          servelab::store::Sha256::hex_file(model_file("tiny_variant_0")));
  }
  const MappedKb alone = mapped_under(first.pid(), weights);
  // Alone, the first server's mappings of the store are its weights, all resident.
  CHECK(alone.rss * 1024 >= static_cast<long>(kBackboneBytes + kHeadBytes));
  CHECK(alone.pss == alone.rss);

  ServeProcess second(args("store-b"), dir.path / "b");
  const uint16_t port_b = second.wait_port(std::chrono::seconds(120));
  INFO(second.err());
  REQUIRE(port_b != 0);
  register_and_classify(port_b, "tiny_variant_0");
  if (settled) {  // the second store's file is a link to the first's: one file on the disk
    struct stat in_a {}, in_b {};
    REQUIRE(::stat((dir.path / "store-a" / "tiny_variant_0.pt").c_str(), &in_a) == 0);
    REQUIRE(::stat((dir.path / "store-b" / "tiny_variant_0.pt").c_str(), &in_b) == 0);
    CHECK(in_a.st_ino == in_b.st_ino);
  }
  const MappedKb a = mapped_under(first.pid(), weights);
  const MappedKb b = mapped_under(second.pid(), weights);
  CHECK(b.rss == alone.rss);           // the second maps the same weights...
  CHECK(a.pss + b.pss <= alone.rss + 4);  // ...and the two together hold them once (+ rounding)
  CHECK(a.pss < alone.pss);
  // The first registration ran the check's forwards; the second took their record.
  CHECK(json::parse(HttpClient(port_a).get("/models/tiny_variant_0").body)["check"] == "forward");
  CHECK(json::parse(HttpClient(port_b).get("/models/tiny_variant_0").body)["check"] == "recorded");
  // The model file's shared copy stays while a store links it, and goes with the last one.
  auto shared_copies = [&] {
    return std::distance(fs::directory_iterator(weights / "files"), fs::directory_iterator{});
  };
  CHECK(shared_copies() == 1);
  REQUIRE(HttpClient(port_a).request("DELETE", "/models/tiny_variant_0").status == 200);
  CHECK(shared_copies() == 1);
  REQUIRE(HttpClient(port_b).request("DELETE", "/models/tiny_variant_0").status == 200);
  CHECK(shared_copies() == 0);
}

namespace {

// Registers and classifies tiny variants 0..n-1 on `port`; returns /metrics afterwards.
std::string serve_variants(uint16_t port, int n) {
  for (int i = 0; i < n; ++i) register_and_classify(port, "tiny_variant_" + std::to_string(i));
  return HttpClient(port).get("/metrics").body;
}

}  // namespace

TEST_CASE("the host budget counts a shared backbone once and evicts nothing that fits shared",
          "[server][weights]") {
  TempDir dir;
  uint64_t size = 0;  // one variant's accounted size: its weights and workspace
  {
    TestServer probe((dir.path / "probe").string());
    HttpClient c(probe.port());
    REQUIRE(c.post_form("/register", register_form("tiny_variant_0", "tiny_variant_0")).status == 201);
    size = json::parse(c.get("/models/tiny_variant_0").body)["size_bytes"].get<uint64_t>();
  }
  REQUIRE(size > kBackboneBytes);
  // Three variants shared: one backbone and three of everything else; not shared: 3x size. The
  // budget lies halfway, a backbone from each (a margin for the workspace a process measures).
  const uint64_t budget = 3 * size - kBackboneBytes;
  auto with_budget = [&](bool store) {
    return [&, store](servelab::runtime::EngineOptions& eo, auto&) {
      eo.control.budgets[int(servelab::Tier::Host)].bytes = budget;
      if (store) eo.weight_store = (dir.path / "weights").string();
    };
  };
  TestServer shared((dir.path / "shared").string(), with_budget(true));
  const std::string m = serve_variants(shared.port(), 3);
  const uint64_t own_size =
      json::parse(HttpClient(shared.port()).get("/models/tiny_variant_0").body)["size_bytes"]
          .get<uint64_t>();
  CHECK(metric_sum(m, "servelab_resident_bytes{tier=\"host\"}") == 3 * own_size - 2 * kBackboneBytes);
  CHECK(metric_sum(m, "servelab_resident_models{tier=\"host\"}") == 3);
  CHECK(metric_sum(m, "servelab_model_evictions_total") == 0);
  // Evicting one variant from host memory would free all but the backbone the others share.
  const json frees = json::parse(HttpClient(shared.port()).get("/models/tiny_variant_1").body)
                         ["weights"]["evict_frees_bytes"];
  CHECK(frees["host"].get<uint64_t>() == own_size - kBackboneBytes);
  CHECK(frees["device"].get<uint64_t>() == 0);  // a CPU server has no device copy

  TestServer unshared((dir.path / "unshared").string(), with_budget(false));
  const std::string u = serve_variants(unshared.port(), 3);
  CHECK(metric_sum(u, "servelab_resident_models{tier=\"host\"}") < 3);
}

TEST_CASE("the registry records each model's weight bytes and updates them as others come and go",
          "[server][weights][registry]") {
  TempDir dir;
  const fs::path store = dir.path / "store";
  TestServer ts(store.string(), [&](servelab::runtime::EngineOptions& eo, auto&) {
    eo.weight_store = (dir.path / "weights").string();
  });
  HttpClient c(ts.port());
  for (const char* m : {"tiny_variant_0", "tiny_variant_1"})
    REQUIRE(c.post_form("/register", register_form(m, m)).status == 201);
  servelab::server::Registry registry((store / "registry.sqlite").string());
  auto row = registry.find("tiny_variant_0");
  REQUIRE(row);
  CHECK(row->weights.logical == kBackboneBytes + kHeadBytes);
  CHECK(row->weights.unique == kHeadBytes);  // updated when tiny_variant_1 came
  CHECK(row->weights.shared == kBackboneBytes);
  REQUIRE(c.request("DELETE", "/models/tiny_variant_1").status == 200);
  row = registry.find("tiny_variant_0");
  REQUIRE(row);
  CHECK(row->weights.unique == kBackboneBytes + kHeadBytes);  // alone again: all its own
  CHECK(row->weights.shared == 0);
}
