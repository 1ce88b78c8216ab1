// RealCluster: the servers as child processes, their models registered over HTTP as the
// placement says, and the front end in-process.
#include "experiments/real_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/profile_yaml.h"
#include "engine/route/http/route_server.h"
#include "engine/route/placement.h"
#include "experiments/experiment.h"

namespace servelab::experiments {
namespace {
namespace fs = std::filesystem;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// One `servelab serve` child: its output in `log`.out and .err, killed when the starting
// thread ends (PR_SET_PDEATHSIG).
struct Child {
  pid_t pid = -1;
  fs::path log;
  uint16_t port = 0;

  void spawn(const std::string& binary, const std::vector<std::string>& args) {
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string out = log.string() + ".out", err = log.string() + ".err";
    const pid_t parent = ::getpid();
    pid = ::fork();
    if (pid < 0) throw ExperimentError("real mode: cannot start a server (fork failed)");
    if (pid > 0) return;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent went already
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) ::_exit(127);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }

  // Its `listening on 127.0.0.1:PORT` line within `limit`; throws when it exits or is late.
  void wait_port(std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    const std::string mark = "listening on 127.0.0.1:";
    while (std::chrono::steady_clock::now() < until) {
      const std::string text = slurp(log.string() + ".out");
      const size_t at = text.find(mark);
      if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
        port = uint16_t(std::stoul(text.substr(at + mark.size())));
        return;
      }
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        throw ExperimentError("real mode: server " + log.filename().string() + " exited: " +
                              slurp(log.string() + ".err").substr(0, 2000));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw ExperimentError("real mode: server " + log.filename().string() +
                          " printed no port within " + std::to_string(limit.count()) + " s");
  }

  // SIGTERM, up to 10 s for it to exit, then SIGKILL. Idempotent.
  void stop() {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 200; ++i) {
      if (::waitpid(pid, nullptr, WNOHANG) == pid) return void(pid = -1);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

// One exchange with 127.0.0.1:port (a JSON body when not empty): the answer's status and body.
// A server that takes over 5 minutes (a registration loads the model) fails it.
std::pair<unsigned, std::string> exchange(uint16_t port, http::verb verb,
                                          const std::string& target, const std::string& body) {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  http::request<http::string_body> req(verb, target, 11);
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  boost::system::error_code failure;
  stream.expires_after(std::chrono::minutes(5));
  stream.async_connect(
      tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port), [&](auto ec) {
        if (ec) return void(failure = ec);
        http::async_write(stream, req, [&](auto ec, size_t) {
          if (ec) return void(failure = ec);
          http::async_read(stream, buffer, res, [&](auto ec, size_t) { failure = ec; });
        });
      });
  io.run();
  if (failure)
    throw ExperimentError("real mode: " + target + " on 127.0.0.1:" + std::to_string(port) +
                          " failed: " + failure.message());
  return {res.result_int(), res.body()};
}

}  // namespace

struct RealCluster::Impl {
  std::vector<Child> servers;
  std::unique_ptr<route::RouteServer> front;

  ~Impl() {
    if (front) front->stop();
    for (Child& c : servers) {
      c.stop();
      std::error_code ignored;  // the stores hold copies of the model files
      fs::remove_all(c.log.string() + "-store", ignored);
    }
  }

  void start_servers(uint32_t n, const RealClusterOptions& o) {
    servers.resize(n);
    for (uint32_t k = 0; k < n; ++k) {
      Child& c = servers[k];
      c.log = fs::path(o.run_dir) / ("server-" + std::to_string(k));
      c.spawn(o.binary, {"serve", "--port", "0", "--store", c.log.string() + "-store",
                         "--model-root", fs::absolute(o.models_dir).string(), "--config",
                         o.config_file});
    }
    for (Child& c : servers) c.wait_port(std::chrono::seconds(120));
  }

  // Each model on the hosts the placement gives it; returns them by model name.
  std::map<std::string, std::vector<uint32_t>> place(const config::RunConfig& rc,
                                                     const workloads::Workload& w,
                                                     const RealClusterOptions& o) {
    const CostProfile profile = config::load_profile(o.profile);
    std::vector<route::PlacedModel> models;
    for (const config::ModelEntry& m : rc.models) {
      const ModelProfile* p = profile.find(m.profile_model);
      models.push_back({m.name, p ? p->size_bytes : 0, 0});
    }
    for (uint32_t i : w.models)
      if (i < models.size()) models[i].load += 1;
    const route::Placement placement =
        route::make_placement(rc.cluster.placement, models, uint32_t(servers.size()));
    std::map<std::string, std::vector<uint32_t>> hosts;
    for (size_t i = 0; i < rc.models.size(); ++i) {
      const config::ModelEntry& m = rc.models[i];
      nlohmann::json j = {{"name", m.name}, {"path", m.profile_model + ".pt"}};
      if (m.slo) j["slo_ms"] = *m.slo * 1e3;
      if (uint32_t c = rc.contexts_of(m)) j["contexts"] = c;
      for (uint32_t k : placement.hosts[i]) {
        const auto [status, body] =
            exchange(servers[k].port, http::verb::post, "/register", j.dump());
        if (status != 201)
          throw ExperimentError("real mode: registering '" + m.name + "' on server " +
                                std::to_string(k) + " answered " + std::to_string(status) +
                                ": " + body.substr(0, 500));
      }
      hosts[m.name] = placement.hosts[i];
    }
    return hosts;
  }

  void start_front(const config::RunConfig& rc,
                   std::map<std::string, std::vector<uint32_t>> hosts, bool verbose) {
    route::RouteServerOptions ro;
    std::string list;
    for (const Child& c : servers)
      list += (list.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(c.port));
    route::ForwarderOptions& f = ro.forwarder;
    f.backends = route::parse_backends(list);
    f.router = rc.cluster.router;
    f.hosts = std::move(hosts);
    f.backup_after_s = std::isfinite(rc.cluster.backup_after) ? rc.cluster.backup_after : -1;
    if (!std::isnan(rc.cluster.backup_percentile))
      f.backup_percentile = rc.cluster.backup_percentile;
    f.cancel_copies = rc.cluster.cancel_copies;
    f.max_held = 1u << 20;  // the load generator bounds what is in flight
    if (verbose)
      f.log = [](const std::string& line) { std::fprintf(stderr, "route: %s\n", line.c_str()); };
    front = std::make_unique<route::RouteServer>(ro);
    for (const auto& [backend, why] : front->start())
      throw ExperimentError("real mode: server " + backend + " is down: " + why);
  }
};

RealCluster::RealCluster(const config::RunConfig& rc, const workloads::Workload& w,
                         RealClusterOptions o)
    : impl_(std::make_unique<Impl>()) {
  if (!rc.groups.empty())
    throw ExperimentError("real mode: a cluster run cannot have model groups");
  impl_->start_servers(rc.cluster.servers, o);
  impl_->start_front(rc, impl_->place(rc, w, o), o.verbose);
}

RealCluster::~RealCluster() = default;

std::string RealCluster::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->front->port());
}

std::vector<uint16_t> RealCluster::server_ports() const {
  std::vector<uint16_t> ports;
  for (const Child& c : impl_->servers) ports.push_back(c.port);
  return ports;
}

std::string RealCluster::route_metrics() const {
  return exchange(impl_->front->port(), http::verb::get, "/metrics", "").second;
}

}  // namespace servelab::experiments
