// A real cluster behind Debian's nginx (least_conn) or HAProxy (leastconn) as its front end
// (cluster.front, experiments/proxy_front.h): two `servelab serve` processes, a load through
// the proxy answered in full by both servers, the proxy's own paths, the proxy stopped with
// the cluster, and a clear error naming the package when the program is not installed.
// A case whose proxy is not installed here prints "skipped" and passes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "config/run_config.h"
#include "experiments/experiment.h"
#include "experiments/proxy_front.h"
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

// tiny_cnn (as "a") and noop (as "b") on two servers behind `front`, 40 requests from 4
// closed-loop clients, written to dir/config.yaml with a profile beside it, parsed.
config::RunConfig front_config(const fs::path& dir, const std::string& front) {
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
                           "workload: {requests: 40, arrival: {type: closed, concurrency: 4}}\n"
                           "cluster: {servers: 2, front: " + front + "}\n";
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

uint16_t port_of(const std::string& url) {
  return uint16_t(std::stoul(url.substr(url.rfind(':') + 1)));
}

// The classify requests a server answered 200, from its /metrics.
uint64_t classified(uint16_t port) {
  std::istringstream lines(testing::HttpClient(port).get("/metrics").body);
  uint64_t n = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("servelab_http_requests_total{", 0) == 0 &&
        line.find("classify") != std::string::npos &&
        line.find("code=\"200\"") != std::string::npos)
      n += std::stoull(line.substr(line.rfind(' ') + 1));
  return n;
}

bool answers(uint16_t port) {
  try {
    testing::HttpClient(port).get("/classify/a");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// The run of front_config through `front`: every request answered 200, both servers used,
// the proxy's other paths 404, and the proxy gone with the cluster.
void run_through(const std::string& front) {
  try {
    ex::find_proxy(front, ex::default_proxy_search_path());
  } catch (const ex::ExperimentError& e) {
    WARN("skipped: " << e.what());
    return;
  }
  servelab::testutil::TempDir tmp("servelab-real-front");
  const config::RunConfig rc = front_config(tmp.path(), front);
  const workloads::Workload w = workloads::generate(rc.workload);
  uint16_t port = 0;
  {
    ex::RealCluster cluster(rc, w, options(tmp.path()));
    port = port_of(cluster.url());
    loadgen::LoadOptions lo;
    lo.url = cluster.url();
    lo.model_names = {"a", "b"};
    lo.body = testing::read_file(kModels + "/images/gradient.jpg");
    lo.content_type = "image/jpeg";
    const results::RunRecords records = loadgen::run_load(lo, w);
    REQUIRE(records.requests.size() == 40);
    for (const auto& r : records.requests) CHECK(r.status == RequestStatus::Ok);
    uint64_t total = 0;
    for (uint16_t p : cluster.server_ports()) {
      const uint64_t n = classified(p);
      CHECK(n > 0);  // ties go round: even one client at a time reaches both
      total += n;
    }
    CHECK(total == 40);
    CHECK(testing::HttpClient(port).get("/health").status == 404);  // only classify and v2
    CHECK(cluster.route_metrics().empty());
  }
  CHECK_FALSE(answers(port));
}

}  // namespace

TEST_CASE("a real cluster behind nginx answers every request", "[experiments][real][cluster]") {
  run_through("nginx");
}

TEST_CASE("a real cluster behind haproxy answers every request",
          "[experiments][real][cluster]") {
  run_through("haproxy");
}

TEST_CASE("a proxy front end that is not installed is named with its package before any "
          "server starts", "[experiments][real][cluster]") {
  servelab::testutil::TempDir tmp("servelab-real-front-missing");
  for (const std::string front : {"nginx", "haproxy"}) {
    const config::RunConfig rc = front_config(tmp.path(), front);
    ex::RealClusterOptions o = options(tmp.path());
    o.proxy_search_path = (tmp.path() / "empty").string();
    CHECK_THROWS_WITH(ex::RealCluster(rc, workloads::generate(rc.workload), o),
                      Catch::Contains(front + " is not installed") &&
                          Catch::Contains("apt-get install " + front));
    CHECK_FALSE(fs::exists(tmp.path() / "server-0.out"));
  }
}
