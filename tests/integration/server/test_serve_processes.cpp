// `servelab serve --processes N` (issue 53): N servers forked from one start-up. Each replica
// is a server of its own (port, store, registry); the runtime's start-up memory is shared
// among them; the first process stops them all, a dead replica leaves the others serving, and
// replicas do not outlive the first process.
#include <catch2/catch.hpp>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/server/serve_process.h"
#include "tests/integration/server/server_fixture.h"
#include "tests/support/thread_count.h"

using namespace servelab::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The ports of the replicas' `listening on ... (replica k of N)` lines, by k; waits for all.
std::vector<uint16_t> replica_ports(ServeProcess& p, unsigned n) {
  static const std::regex line(R"(listening on 127\.0\.0\.1:(\d+) \(replica (\d+) of \d+\))");
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  for (;;) {
    std::vector<uint16_t> ports(n, 0);
    unsigned found = 0;
    const std::string text = p.out();
    for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
      const unsigned k = std::stoul((*it)[2]);
      if (k < n && ports[k] == 0) ++found;
      if (k < n) ports[k] = static_cast<uint16_t>(std::stoi((*it)[1]));
    }
    if (found == n || std::chrono::steady_clock::now() > deadline) return ports;
    std::this_thread::sleep_for(20ms);
  }
}

std::vector<pid_t> children_of(pid_t parent) {
  std::ifstream f("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) +
                  "/children");
  std::vector<pid_t> pids;
  for (pid_t pid; f >> pid;) pids.push_back(pid);
  return pids;
}

// A field of /proc/PID/smaps_rollup in KiB (0 when absent).
long rollup_kb(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/smaps_rollup");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream in(line.substr(field.size() + 1));
    long kb = 0;
    in >> kb;
    return kb;
  }
  return 0;
}

bool gone(pid_t pid) { return !fs::exists("/proc/" + std::to_string(pid)); }

bool wait_gone(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!gone(pid) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  return gone(pid);
}

std::vector<std::string> args_for(const fs::path& store) {
  return {"--port", "0", "--store", store.string(), "--model-root", models_dir(),
          "--processes", "2"};
}

}  // namespace

TEST_CASE("serve --processes: each replica is a server of its own and shares the start-up",
          "[server][processes]") {
  TempDir dir;
  const fs::path store = dir.path / "store";
  ServeProcess p(args_for(store), dir.path / "group");
  const std::vector<uint16_t> ports = replica_ports(p, 2);
  INFO("stdout: " << p.out() << "\nstderr: " << p.err());
  REQUIRE(ports[0] != 0);
  REQUIRE(ports[1] != 0);
  CHECK(ports[0] != ports[1]);

  // Its own store and registry: a model registered on replica 0 is not on replica 1.
  HttpClient first(ports[0]), second(ports[1]);
  CHECK(first.post_json("/register", register_json("noop", "noop")).status == 201);
  CHECK(first.get("/models/noop").status == 200);
  CHECK(second.get("/models/noop").status == 404);
  CHECK(second.get("/health").status == 200);
  CHECK(fs::exists(store / "replica-0" / "noop.pt"));
  CHECK_FALSE(fs::exists(store / "replica-1" / "noop.pt"));

  // The start-up is shared copy-on-write: an idle replica's dirty pages are mostly its
  // siblings' too (a server started alone holds them all privately).
  const std::vector<pid_t> replicas = children_of(p.pid());
  REQUIRE(replicas.size() == 2);
  const long shared = rollup_kb(replicas[1], "Shared_Dirty");
  const long own = rollup_kb(replicas[1], "Private_Dirty");
  INFO("replica 1: Shared_Dirty " << shared << " KiB, Private_Dirty " << own << " KiB");
  CHECK(shared > own);

  // The first process, which only waits for the replicas, has unmapped the pages of the
  // libraries' files its start-up touched (LibTorch's static initializers) and no replica
  // maps (cli/supervisor_pages.h): it holds fewer file pages than a replica that serves.
  const auto file_kb = [](pid_t pid) { return rollup_kb(pid, "Rss") - rollup_kb(pid, "Anonymous"); };
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (file_kb(p.pid()) >= file_kb(replicas[1]) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50ms);
  INFO("file pages resident: first process " << file_kb(p.pid()) << " KiB, replica 1 "
                                             << file_kb(replicas[1]) << " KiB");
  CHECK(file_kb(p.pid()) < file_kb(replicas[1]));

  // SIGTERM to the first process stops both replicas; all ended with 0.
  REQUIRE(p.stop(60s));
  for (pid_t r : replicas) CHECK(wait_gone(r, 10s));
}

TEST_CASE("serve --processes: a replica killed leaves the other serving; the first process's "
          "death ends the replicas", "[server][processes]") {
  TempDir dir;
  ServeProcess p(args_for(dir.path / "store"), dir.path / "group");
  const std::vector<uint16_t> ports = replica_ports(p, 2);
  INFO("stdout: " << p.out() << "\nstderr: " << p.err());
  REQUIRE(ports[1] != 0);
  std::vector<pid_t> replicas = children_of(p.pid());
  REQUIRE(replicas.size() == 2);

  // kill -9 of one replica: logged by the first process, the other replica goes on serving.
  ::kill(replicas[0], SIGKILL);
  REQUIRE(wait_gone(replicas[0], 10s));  // reaped by the first process
  CHECK(HttpClient(ports[1]).get("/health").status == 200);
  CHECK_FALSE(p.wait_exit(0ms));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (p.err().find("replica 0 (pid " + std::to_string(replicas[0]) +
                      ") was killed by signal 9") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  CHECK(p.err().find("replica 0 (pid " + std::to_string(replicas[0]) +
                     ") was killed by signal 9") != std::string::npos);

  // kill -9 of the first process: the remaining replica ends by itself (SIGTERM from the
  // kernel, a clean shutdown).
  p.kill9();
  CHECK(wait_gone(replicas[1], 30s));
}

TEST_CASE("serve --processes: the weight store's architectures are imported and warmed before "
          "the fork, and the replicas serve their variants", "[server][processes][weights]") {
  TempDir dir;
  const fs::path weights = dir.path / "weights";
  {  // a server alone puts a variant into the weight store, then stops
    ServeProcess alone({"--port", "0", "--store", (dir.path / "alone").string(), "--weight-store",
                        weights.string()},
                       dir.path / "alone-log");
    const uint16_t port = alone.wait_port(120s);
    INFO(alone.err());
    REQUIRE(port != 0);
    REQUIRE(HttpClient(port).post_form("/register", register_form("tiny_variant_0",
                                                                   "tiny_variant_0")).status == 201);
    REQUIRE(alone.stop(60s));
  }
  std::vector<std::string> args = args_for(dir.path / "store");
  args.insert(args.end(), {"--weight-store", weights.string()});
  ServeProcess p(args, dir.path / "group");
  const std::vector<uint16_t> ports = replica_ports(p, 2);
  INFO("stdout: " << p.out() << "\nstderr: " << p.err());
  REQUIRE(ports[1] != 0);
  CHECK(p.err().find("1 architecture(s) of the 1 skeleton(s) in the weight store imported, 1 "
                     "warmed") != std::string::npos);
  CHECK(servelab::testutil::thread_count(p.pid()) == 1);  // the first process forked with no other thread
  // Each replica ran the pass again (its own pages, before its first request).
  for (int k = 0; k < 2; ++k)
    CHECK(p.err().find("replica " + std::to_string(k) + ": 1 warm-up pass(es) run again") !=
          std::string::npos);

  // A replica serves the stored variant and another of its architecture.
  HttpClient second(ports[1]);
  for (int i = 0; i < 2; ++i) {
    const std::string name = "tiny_variant_" + std::to_string(i);
    REQUIRE(second.post_form("/register", register_form(name, name)).status == 201);
    auto r = second.request("POST", "/classify/" + name, read_file(image_file("gradient.jpg")),
                            "image/jpeg");
    INFO(r.body);
    CHECK(r.status == 200);
  }
  REQUIRE(p.stop(60s));
}

TEST_CASE("serve --processes: a weight store that cannot be opened is refused by the replicas",
          "[server][processes][weights]") {
  TempDir dir;
  std::ofstream(dir.path / "a-file") << "not a directory";
  std::vector<std::string> args = args_for(dir.path / "store");
  args.insert(args.end(), {"--weight-store", (dir.path / "a-file" / "weights").string()});
  ServeProcess p(args, dir.path / "group");
  const std::optional<int> rc = p.wait_exit(120s);
  INFO("stderr: " << p.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 1);
  CHECK(p.err().find("nothing of the weight store shared ahead") != std::string::npos);
  CHECK(p.err().find("replica 1 (pid") != std::string::npos);  // each replica said no itself
  CHECK(p.err().find("cannot create the weight store") != std::string::npos);
}
