// `servelab route`: the cluster's front end (engine/route/http/route_server.h). Forwards
// classify and KServe v2 infer requests to N `servelab serve` backends, choosing with a router
// of the registry the simulator uses.
#include <pthread.h>
#include <signal.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "cli/serve_option_checks.h"
#include "cli/subcommands.h"
#include "engine/route/http/route_server.h"
#include "engine/route/placement.h"
#include "engine/route/router.h"

namespace po = boost::program_options;

namespace servelab::cli {
namespace {

po::options_description route_options() {
  std::string routers;
  for (const route::RouterInfo& r : route::routers())
    routers += "\n  " + r.name + ": " + r.help;
  po::options_description d(
      "servelab route --backends HOST:PORT,... [options]\n\nForwards POST /classify/{name} and "
      "POST /v2/models/{name}[/versions/{v}]/infer to the backends (`servelab serve` "
      "processes),\nwith their headers (X-SLO-Ms among them); answers GET /health, "
      "GET /backends, GET /metrics itself.\nRouters:" + routers + "\n\nOptions");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("backends", po::value<std::string>(), "the backends, host:port,... (an IPv6 host in "
                                           "brackets)")
    ("router", po::value<std::string>()->default_value("least-outstanding"), "router name")
    ("router-param", po::value<std::vector<std::string>>()->composing(),
                     "a router parameter key=value (repeatable), e.g. choices=3")
    ("hosts", po::value<std::vector<std::string>>()->composing(),
              "MODEL=I,J,...: the backends (0-based, in --backends order) that host MODEL "
              "(repeatable; a static placement). Requests for a model go only to its hosts, "
              "for a model not listed 404. None given: every model on every backend")
    ("seed", po::value<uint64_t>()->default_value(1), "the router's random seed")
    ("bind", po::value<std::string>()->default_value("127.0.0.1"), "listen address")
    ("port", po::value<unsigned>()->default_value(8090), "listen port; 0 picks a free one. The "
                                  "bound address is printed as `listening on ADDR:PORT`")
    ("io-threads", po::value<unsigned>()->default_value(1), "threads running the front end: the "
                   "clients' connections and the backends' (one carries a request's whole way "
                   "through, with no hand-off between threads)")
    ("max-held", po::value<size_t>()->default_value(1024), "requests held at once (forwarded, "
                 "not yet answered); one more is answered 503 without being forwarded")
    ("backend-timeout-s", po::value<double>()->default_value(30), "a backend that gives no "
                          "answer this long is marked down; the request goes to another")
    ("probe-interval-s", po::value<double>()->default_value(1), "a down backend's GET /health "
                         "is asked this often; 200 marks it up")
    ("max-body-bytes", po::value<size_t>()->default_value(size_t(256) << 20),
                       "larger request bodies are answered 413")
    ("backup-after-ms", po::value<double>(), "backup requests: a request neither answered nor "
                        "started this long after it was sent goes again to another host of "
                        "its model (docs/cluster.md)")
    ("backup-percentile", po::value<double>(), "backup requests after this percentile (0, 100) "
                          "of the model's latency over the front end's last answers "
                          "(--backup-after-ms, or none, until 20 are in)")
    ("cancel-copies", po::value<bool>()->default_value(true), "with backups: the first copy "
                      "to start has the other cancelled on its server (true|false)");
  // clang-format on
  return d;
}

PolicySpec router_spec(const po::variables_map& vm) {
  PolicySpec spec{vm["router"].as<std::string>(), {}};
  if (vm.count("router-param")) {
    for (const std::string& kv : vm["router-param"].as<std::vector<std::string>>()) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw ConfigError("--router-param must be key=value (got '" + kv.substr(0, 64) + "')");
      spec.params.set(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  return spec;
}

// --hosts MODEL=I,J,...: the static placement of engine/route/placement.h, so its checks (a
// server out of range, an empty entry) and messages are the simulator's.
std::map<std::string, std::vector<uint32_t>> hosts_from(const po::variables_map& vm,
                                                        size_t backends) {
  std::map<std::string, std::vector<uint32_t>> hosts;
  if (!vm.count("hosts")) return hosts;
  PolicySpec spec{"static", {}};
  std::vector<route::PlacedModel> models;
  for (const std::string& entry : vm["hosts"].as<std::vector<std::string>>()) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("--hosts must be MODEL=I,J,... (got '" + entry.substr(0, 64) + "')");
    const std::string model = entry.substr(0, eq);
    if (spec.params.has(model)) throw ConfigError("--hosts names model '" + model + "' twice");
    spec.params.set(model, entry.substr(eq + 1));
    models.push_back({model});
  }
  const route::Placement p = route::make_placement(spec, models, uint32_t(backends));
  for (size_t i = 0; i < models.size(); ++i) hosts[models[i].name] = p.hosts[i];
  return hosts;
}

route::RouteServerOptions options_from(const po::variables_map& vm) {
  if (!vm.count("backends")) throw ConfigError("--backends is required (host:port,...)");
  route::RouteServerOptions o;
  o.bind = vm["bind"].as<std::string>();
  const unsigned port = vm["port"].as<unsigned>();
  check_range<unsigned>("port", port, 0, 65535);
  o.port = uint16_t(port);
  o.io_threads = vm["io-threads"].as<unsigned>();
  check_range<unsigned>("io-threads", o.io_threads, 1, 64);
  o.max_body_bytes = vm["max-body-bytes"].as<size_t>();
  check_range<size_t>("max-body-bytes", o.max_body_bytes, 1, size_t(4) << 30);
  route::ForwarderOptions& f = o.forwarder;
  f.backends = route::parse_backends(vm["backends"].as<std::string>());
  f.hosts = hosts_from(vm, f.backends.size());
  f.router = router_spec(vm);
  (void)route::make_router(f.router, 1);  // an unknown name or bad parameter: a usage error
  f.seed = vm["seed"].as<uint64_t>();
  f.max_held = vm["max-held"].as<size_t>();
  check_range<size_t>("max-held", f.max_held, 1, 1u << 20);
  f.backend_timeout_s = vm["backend-timeout-s"].as<double>();
  check_range<double>("backend-timeout-s", f.backend_timeout_s, 0.001, 86400);
  f.probe_interval_s = vm["probe-interval-s"].as<double>();
  check_range<double>("probe-interval-s", f.probe_interval_s, 0.001, 3600);
  if (vm.count("backup-after-ms")) {
    const double ms = vm["backup-after-ms"].as<double>();
    check_range<double>("backup-after-ms", ms, 0, 86400000);
    f.backup_after_s = ms / 1e3;
  }
  if (vm.count("backup-percentile")) {
    f.backup_percentile = vm["backup-percentile"].as<double>();
    if (!(f.backup_percentile > 0 && f.backup_percentile < 100))
      throw ConfigError("--backup-percentile must be in (0, 100) (got " +
                        std::to_string(f.backup_percentile) + ")");
  }
  f.cancel_copies = vm["cancel-copies"].as<bool>();
  f.log = [](const std::string& line) {
    std::fprintf(stderr, "servelab route: %s\n", line.c_str());
  };
  return o;
}

}  // namespace

int route_main(int argc, char** argv) {
  const po::options_description desc = route_options();
  po::variables_map vm;
  route::RouteServerOptions options;
  try {
    const auto parsed = po::parse_command_line(argc, argv, desc);
    po::store(parsed, vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    refuse_negative_unsigned(parsed);
    options = options_from(vm);
  } catch (const std::exception& e) {  // ConfigError, std::invalid_argument, po errors
    std::cerr << "servelab route: " << e.what() << "\n(see servelab route --help)\n";
    return 2;
  }
  // Block the stop signals before any thread starts, so that only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    route::RouteServer srv(options);
    for (const auto& [backend, why] : srv.start())
      std::fprintf(stderr, "servelab route: backend %s is down (%s); asked again every %g s\n",
                   backend.c_str(), why.c_str(), options.forwarder.probe_interval_s);
    std::printf("listening on %s:%u\n", options.bind.c_str(), unsigned(srv.port()));
    std::fflush(stdout);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "servelab route: %s received, shutting down\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv.stop();
  } catch (const std::bad_alloc&) {
    std::cerr << "servelab route: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "servelab route: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace servelab::cli
