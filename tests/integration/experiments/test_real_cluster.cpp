// Real mode's cluster (experiments/real_cluster.h): two `servelab serve` processes with the
// config's placement and a front end before them; requests through it answered by the model's
// hosts only; every server stopped when the cluster goes, also after a failed start, and
// when the process that started them ends without stopping them.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "config/run_config.h"
#include "experiments/experiment.h"
#include "experiments/real_cluster.h"
#include "tests/integration/server/http_client.h"
#include "tests/support/temp_dir.h"
#include "workloads/loadgen/loadgen.h"
#include "workloads/workload.h"

using namespace servelab;
namespace ex = servelab::experiments;
namespace fs = std::filesystem;

namespace {

const std::string kModels = std::string(SERVELAB_SOURCE_DIR) + "/models";

// A run config of `cluster` over tiny_cnn (as "a") and noop (as "b"), written to dir/config.yaml
// with a profile beside it, parsed.
config::RunConfig cluster_config(const fs::path& dir, const std::string& cluster) {
  std::ofstream(dir / "profile.yaml")
      << "models:\n"
         "  tiny_cnn: {size_bytes: 1000, batch_latency_ms: [{batch: 1, mean: 1}],"
         " load_ms: {disk->host: 1}}\n"
         "  noop: {size_bytes: 10, batch_latency_ms: [{batch: 1, mean: 1}],"
         " load_ms: {disk->host: 1}}\n";
  const std::string text = "profile: profile.yaml\n"
                           "models: [{name: a, profile_model: tiny_cnn},"
                           " {name: b, profile_model: noop}]\n"
                           "engine: {workers: 1}\n"
                           "workload: {requests: 4, arrival: {type: closed, concurrency: 1}}\n"
                           "cluster: " + cluster + "\n";
  std::ofstream(dir / "config.yaml") << text;
  return config::parse_run_config(YAML::Load(text), (dir / "config.yaml").string(),
                                  dir.string());
}

ex::RealClusterOptions options(const fs::path& dir) {
  ex::RealClusterOptions o;
  o.binary = std::string(SERVELAB_BINARY_DIR) + "/servelab";
  o.models_dir = kModels;
  o.run_dir = dir.string();
  o.config_file = (dir / "config.yaml").string();
  o.profile = (dir / "profile.yaml").string();
  return o;
}

// Whether the port answers /health (false once nothing listens there).
bool answers(uint16_t port) {
  try {
    return testing::HttpClient(port).get("/health").status == 200;
  } catch (const std::exception&) {
    return false;
  }
}

// The value of the Prometheus line that starts with `name` (0 when there is none).
double metric_value(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name, 0) == 0 && line.size() > name.size() &&
        (line[name.size()] == ' ' || line[name.size()] == '{' || line[name.size()] == '}'))
      return std::stod(line.substr(line.rfind(' ') + 1));
  return 0;
}

}  // namespace

TEST_CASE("a real cluster with backups gives each request its copies' row", "[experiments][real][cluster]") {
  servelab::testutil::TempDir tmp("servelab-real-copies");
  // Backups at once: a request gets one unless its first copy started already; the rows
  // must agree with the front end's own counters, which count the same events elsewhere.
  config::RunConfig rc = cluster_config(tmp.path(), "{servers: 2, router: round-robin,"
                                                    " backup_after_s: 0}");
  rc.workload.requests = 40;
  rc.workload.arrival.concurrency = 4;
  const workloads::Workload w = workloads::generate(rc.workload);
  ex::RealCluster cluster(rc, w, options(tmp.path()));
  loadgen::LoadOptions lo;
  lo.url = cluster.url();
  lo.model_names = {"a", "b"};
  lo.body = testing::read_file(kModels + "/images/gradient.jpg");
  lo.content_type = "image/jpeg";
  loadgen::LoadStats stats;
  results::RunRecords records = loadgen::run_load(lo, w, &stats);
  REQUIRE(records.requests.size() == 40);
  REQUIRE(stats.route_seq.size() == 40);
  cluster.add_copy_rows(records, stats.route_seq);
  CHECK(records.backups);
  const std::string m = cluster.route_metrics();
  uint64_t sent = 0, first = 0, backup = 0, cancelled = 0;
  for (const auto& r : records.requests) {
    CHECK(r.status == RequestStatus::Ok);
    sent += r.backup_sent;
    first += r.won_by == results::RequestRecord::Copy::Primary;
    backup += r.won_by == results::RequestRecord::Copy::Backup;
    cancelled += r.copy_cancelled;
    CHECK(r.wasted >= 0);
  }
  INFO(m);
  CHECK(first + backup == 40);
  CHECK(sent == metric_value(m, "servelab_route_backups_sent_total"));
  CHECK(first == metric_value(m, "servelab_route_won_total{copy=\"first\""));
  CHECK(backup == metric_value(m, "servelab_route_won_total{copy=\"backup\""));
  CHECK(cancelled == metric_value(m, "servelab_route_copies_cancelled_total"));
}

TEST_CASE("a real cluster places the models, routes through its front end and stops its "
          "servers", "[experiments][real][cluster]") {
  servelab::testutil::TempDir tmp("servelab-real-cluster");
  const config::RunConfig rc = cluster_config(
      tmp.path(), "{servers: 2, router: round-robin, placement: {name: memory-balanced,"
                  " replicas: 1}, backup_after_s: 5}");
  std::vector<uint16_t> ports;
  {
    ex::RealCluster cluster(rc, workloads::generate(rc.workload), options(tmp.path()));
    const std::string url = cluster.url();
    const uint16_t front = uint16_t(std::stoul(url.substr(url.rfind(':') + 1)));
    const std::string image = testing::read_file(kModels + "/images/gradient.jpg");
    testing::HttpClient c(front);
    for (int i = 0; i < 2; ++i) {
      const auto a = c.request("POST", "/classify/a", image, "image/jpeg");
      INFO(a.body);
      CHECK(a.status == 200);
      ports.push_back(uint16_t(std::stoul(a.headers.at("x-servelab-backend").substr(10))));
      const auto b = c.request("POST", "/classify/b", image, "image/jpeg");
      CHECK(b.status == 200);
      ports.push_back(uint16_t(std::stoul(b.headers.at("x-servelab-backend").substr(10))));
    }
    CHECK(ports[0] == ports[2]);  // the larger a on server 0, b on server 1
    CHECK(ports[1] == ports[3]);
    CHECK(ports[0] != ports[1]);
    // Registered with its manifest's preprocessing, as the profile is measured (tiny_cnn is
    // 32x32, not the engine's default 224x224).
    const nlohmann::json manifest = nlohmann::json::parse(testing::read_file(kModels + "/tiny_cnn.json"));
    const nlohmann::json served = nlohmann::json::parse(testing::HttpClient(ports[0]).get("/models/a").body);
    CHECK(served["preprocess"]["input_width"] == manifest["input_width"]);
    CHECK(served["preprocess"]["input_height"] == manifest["input_height"]);
    CHECK(served["preprocess"]["resize"] == manifest["resize"]);
    CHECK(cluster.route_metrics().find("servelab_route_backups_sent_total 0") !=
          std::string::npos);
  }
  CHECK_FALSE(answers(ports[0]));  // stopped with the cluster
  CHECK_FALSE(answers(ports[1]));
}

TEST_CASE("a real cluster that cannot start stops the servers it started", "[experiments][real]"
          "[cluster]") {
  servelab::testutil::TempDir tmp("servelab-real-cluster-bad");
  const config::RunConfig rc = cluster_config(tmp.path(), "{servers: 2}");
  ex::RealClusterOptions o = options(tmp.path());
  o.models_dir = (tmp.path() / "no-models").string();  // registration fails
  fs::create_directories(o.models_dir);
  CHECK_THROWS_WITH(ex::RealCluster(rc, workloads::generate(rc.workload), o),
                    Catch::Contains("registering 'a' on server 0"));
  for (int k = 0; k < 2; ++k) {  // their ports are in their logs
    std::ifstream out(tmp.path() / ("server-" + std::to_string(k) + ".out"));
    const std::string text(std::istreambuf_iterator<char>(out), {});
    const size_t at = text.find("listening on 127.0.0.1:");
    REQUIRE(at != std::string::npos);
    CHECK_FALSE(answers(uint16_t(std::stoul(text.substr(at + 23)))));
  }
}

TEST_CASE("a real cluster's servers end with the process that started them",
          "[experiments][real][cluster]") {
  servelab::testutil::TempDir tmp("servelab-real-cluster-orphan");
  const config::RunConfig rc = cluster_config(tmp.path(), "{servers: 2}");
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t run = ::fork();
  REQUIRE(run >= 0);
  if (run == 0) {  // a run that dies without stopping its cluster (no destructor runs)
    ::close(fds[0]);
    try {
      ex::RealCluster cluster(rc, workloads::generate(rc.workload), options(tmp.path()));
      std::string ports;
      for (uint16_t p : cluster.server_ports()) ports += std::to_string(p) + " ";
      ports += "\n";
      (void)!::write(fds[1], ports.data(), ports.size());
    } catch (...) {
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[256];
  pollfd p{fds[0], POLLIN, 0};
  while (text.find('\n') == std::string::npos && ::poll(&p, 1, 120000) > 0) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, size_t(n));
  }
  ::close(fds[0]);
  ::waitpid(run, nullptr, 0);
  std::istringstream in(text);
  std::vector<uint16_t> ports;
  for (unsigned port; in >> port;) ports.push_back(uint16_t(port));
  REQUIRE(ports.size() == 2);
  for (uint16_t port : ports) {  // killed by the kernel (PR_SET_PDEATHSIG): soon gone
    bool up = true;
    for (int i = 0; i < 100 && up; ++i) {
      up = answers(port);
      if (up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK_FALSE(up);
  }
}
