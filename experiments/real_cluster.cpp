// RealCluster: the servers as child processes, their models registered over HTTP as the
// placement says, and the front end in-process.
#include "experiments/real_cluster.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/profile_yaml.h"
#include "engine/route/http/route_server.h"
#include "engine/route/placement.h"
#include "engine/server/model_manifest.h"
#include "engine/server/register_request.h"
#include "experiments/child_process.h"
#include "experiments/experiment.h"
#include "experiments/proxy_front.h"

namespace servelab::experiments {
namespace {
namespace fs = std::filesystem;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

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

// One `servelab serve` of the cluster.
struct Server {
  ChildProcess process;
  uint16_t port = 0;
};

struct RealCluster::Impl {
  std::vector<Server> servers;
  std::unique_ptr<route::RouteServer> front;  // cluster.front servelab
  std::unique_ptr<ProxyFront> proxy;          // the others
  bool ties = false;                          // the front end sends backups (tied copies)

  ~Impl() {
    if (front) front->stop();
    proxy.reset();
    for (Server& s : servers) {
      s.process.stop();
      std::error_code ignored;  // the stores hold copies of the model files
      fs::remove_all(s.process.log() + "-store", ignored);
    }
  }

  uint16_t port() const { return front ? front->port() : proxy->port(); }

  void start_servers(uint32_t n, const RealClusterOptions& o) {
    servers.resize(n);
    for (uint32_t k = 0; k < n; ++k) {
      const std::string log = (fs::path(o.run_dir) / ("server-" + std::to_string(k))).string();
      servers[k].process.spawn(o.binary,
                               {"serve", "--port", "0", "--store", log + "-store", "--model-root",
                                fs::absolute(o.models_dir).string(), "--config", o.config_file,
                                "--idle-trim-ms", "0"},  // the profile's regime, as real mode
                               log);
    }
    for (uint32_t k = 0; k < n; ++k)
      servers[k].port = servers[k].process.wait_port("server server-" + std::to_string(k),
                                                     std::chrono::seconds(120));
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
      // The manifest's preprocessing and labels, as the profile was measured with.
      runtime::ModelSpec spec;
      try {
        server::apply_manifest(spec,
                               (fs::path(o.models_dir) / (m.profile_model + ".json")).string());
      } catch (const std::exception& e) {
        throw ExperimentError(std::string("real mode: ") + e.what());
      }
      j["preprocess"] = server::preprocess_to_json(spec.preprocess);
      if (!spec.labels.empty()) j["labels"] = spec.labels;
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

  // cluster.front nginx or haproxy: every model is on every server (the config's parser
  // refuses another placement), so the proxy needs only the servers.
  void start_proxy(const config::RunConfig& rc, const RealClusterOptions& o) {
    ProxyFrontOptions po;
    po.kind = rc.cluster.front;
    for (const Server& s : servers) po.servers.push_back(s.port);
    po.run_dir = o.run_dir;
    po.search_path = o.proxy_search_path.empty() ? default_proxy_search_path()
                                                 : o.proxy_search_path;
    proxy = std::make_unique<ProxyFront>(po);
  }

  void start_front(const config::RunConfig& rc,
                   std::map<std::string, std::vector<uint32_t>> hosts, bool verbose) {
    route::RouteServerOptions ro;
    std::string list;
    for (const Server& c : servers)
      list += (list.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(c.port));
    route::ForwarderOptions& f = ro.forwarder;
    f.backends = route::parse_backends(list);
    f.router = rc.cluster.router;
    f.hosts = std::move(hosts);
    f.backup_after_s = std::isfinite(rc.cluster.backup_after) ? rc.cluster.backup_after : -1;
    if (!std::isnan(rc.cluster.backup_percentile))
      f.backup_percentile = rc.cluster.backup_percentile;
    f.cancel_copies = rc.cluster.cancel_copies;
    ties = f.backup_after_s >= 0 || f.backup_percentile > 0;
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
  const bool proxy = rc.cluster.front != "servelab";
  if (proxy)  // before any server starts: a missing program is the user's first error
    find_proxy(rc.cluster.front, o.proxy_search_path.empty() ? default_proxy_search_path()
                                                             : o.proxy_search_path);
  impl_->start_servers(rc.cluster.servers, o);
  auto hosts = impl_->place(rc, w, o);
  if (proxy) impl_->start_proxy(rc, o);
  else impl_->start_front(rc, std::move(hosts), o.verbose);
}

RealCluster::~RealCluster() = default;

std::string RealCluster::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port());
}

std::vector<uint16_t> RealCluster::server_ports() const {
  std::vector<uint16_t> ports;
  for (const Server& s : impl_->servers) ports.push_back(s.port);
  return ports;
}

route::CopyRows RealCluster::copy_rows(double wait_s) const {
  route::CopyRows all;
  if (!impl_->front) return all;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    std::promise<route::CopyRows> taken;
    impl_->front->forwarder().copy_rows(
        [&taken](route::CopyRows r) { taken.set_value(std::move(r)); });
    route::CopyRows r = taken.get_future().get();
    all.rows.merge(r.rows);
    all.unsettled = r.unsettled;
    all.dropped = r.dropped;
    if (r.unsettled == 0 || std::chrono::steady_clock::now() >= until) return all;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void RealCluster::add_copy_rows(results::RunRecords& records,
                                const std::vector<int64_t>& route_seq) const {
  if (!impl_->front || !impl_->ties) return;
  records.backups = true;
  const route::CopyRows copies = copy_rows();
  for (size_t i = 0; i < route_seq.size() && i < records.requests.size(); ++i) {
    if (route_seq[i] < 0) continue;
    auto it = copies.rows.find(uint64_t(route_seq[i]));
    if (it == copies.rows.end()) continue;  // a losing copy still ran after the wait
    results::RequestRecord& r = records.requests[i];
    r.backup_sent = it->second.backup_sent;
    r.won_by = results::RequestRecord::Copy(it->second.won_by);
    r.copy_cancelled = it->second.copy_cancelled;
    r.wasted = it->second.wasted_s;
  }
}

std::string RealCluster::route_metrics() const {
  if (!impl_->front) return "";
  return exchange(impl_->front->port(), http::verb::get, "/metrics", "").second;
}

}  // namespace servelab::experiments
