// ProxyFront: nginx or HAProxy configured as the cluster's front end, started, probed, stopped.
#include "experiments/proxy_front.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "experiments/child_process.h"
#include "experiments/experiment.h"

namespace servelab::experiments {
namespace {
namespace fs = std::filesystem;

// The path a proxy answers itself with its run's token, so the probe knows that what answers
// on the port is this proxy and not a process that took the port in between.
constexpr const char* kProbePath = "/servelab-front";

// What a proxy's config needs: where it listens, the servers, its folder and the probe token.
struct Setup {
  uint16_t port;
  std::vector<uint16_t> servers;
  fs::path dir;
  std::string token;
};

// nginx in one process (master_process off: the kernel's kill at the run's end then reaches
// the process that serves, which a master's workers would outlive), least_conn over
// keep-alive connections, request bodies kept in memory, temporary files in its folder
// (Debian's defaults are under /var/lib/nginx).
std::string nginx_config(const Setup& s) {
  const std::string d = s.dir.string();
  std::ostringstream c;
  c << "daemon off; master_process off; worker_processes 1;\n"
    << "pid " << d << "/nginx.pid; error_log stderr warn;\n"
    << "events { worker_connections 4096; }\n"
    << "http {\n  access_log off;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    c << "  " << t << "_temp_path " << d << "/" << t << ";\n";
  c << "  client_max_body_size 64m; client_body_buffer_size 1m;\n"
    << "  upstream servers {\n    least_conn;\n    keepalive 64;\n";
  for (uint16_t p : s.servers) c << "    server 127.0.0.1:" << p << ";\n";
  c << "  }\n  server {\n    listen 127.0.0.1:" << s.port << ";\n"
    << "    location = " << kProbePath << " { return 200 \"" << s.token << "\"; }\n";
  for (const char* path : {"/classify/", "/v2/"})
    c << "    location " << path << " { proxy_pass http://servers; proxy_http_version 1.1;\n"
      << "      proxy_set_header Connection \"\"; proxy_read_timeout 300s; }\n";
  c << "    location / { return 404; }\n  }\n}\n";
  return c.str();
}

// HAProxy in the foreground, leastconn, connections to the servers reused.
std::string haproxy_config(const Setup& s) {
  std::ostringstream c;
  c << "global\n  maxconn 4096\n"
    << "defaults\n  mode http\n  option http-keep-alive\n  timeout connect 5s\n"
    << "  timeout client 300s\n  timeout server 300s\n"
    << "frontend front\n  bind 127.0.0.1:" << s.port << "\n"
    << "  http-request return status 200 content-type text/plain string " << s.token
    << " if { path " << kProbePath << " }\n"
    << "  http-request deny deny_status 404 unless { path_beg /classify/ /v2/ }\n"
    << "  default_backend servers\n"
    << "backend servers\n  balance leastconn\n  http-reuse always\n";
  for (size_t k = 0; k < s.servers.size(); ++k)
    c << "  server s" << k << " 127.0.0.1:" << s.servers[k] << "\n";
  return c.str();
}

// A proxy program: its Debian package, its config and its command line.
struct ProxyKind {
  const char* name;
  const char* package;
  std::string (*config)(const Setup&);
  std::vector<std::string> (*args)(const fs::path& config, const fs::path& dir);
};

const ProxyKind kKinds[] = {
    {"nginx", "nginx-light (or nginx)", nginx_config,
     [](const fs::path& conf, const fs::path& dir) -> std::vector<std::string> {
       return {"-p", dir.string() + "/", "-c", conf.string()};
     }},
    {"haproxy", "haproxy", haproxy_config,
     [](const fs::path& conf, const fs::path&) -> std::vector<std::string> {
       return {"-db", "-f", conf.string()};
     }},
};

const ProxyKind& kind_of(const std::string& name) {
  for (const ProxyKind& k : kKinds)
    if (name == k.name) return k;
  throw ExperimentError("real mode: no front end '" + name + "' (nginx or haproxy)");
}

// A loopback port free now: bound to port 0 and released.
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw ExperimentError("real mode: cannot find a free loopback port for the front end");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

// Whether 127.0.0.1:port answers the probe path with `token` (1 s at most).
bool answers_probe(uint16_t port, const std::string& token) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = std::string("GET ") + kProbePath +
                            " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size())) {
      char buf[1024];
      for (ssize_t n; got.size() < 8192 && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
        got.append(buf, size_t(n));
    }
  }
  ::close(fd);
  return got.find(token) != std::string::npos;
}

std::string random_token() {
  std::random_device rd;
  std::ostringstream t;
  t << "servelab-front-" << std::hex << rd() << rd();
  return t.str();
}

}  // namespace

std::string default_proxy_search_path() {
  const char* path = std::getenv("PATH");
  return std::string(path ? path : "") + ":/usr/sbin:/sbin";
}

std::string find_proxy(const std::string& kind, const std::string& search_path) {
  const ProxyKind& k = kind_of(kind);
  const std::string program = find_program(k.name, search_path);
  if (program.empty())
    throw ExperimentError(std::string("real mode: cluster.front ") + k.name + ": " + k.name +
                          " is not installed (apt-get install " + k.package + ")");
  return program;
}

struct ProxyFront::Impl {
  ChildProcess process;
};

ProxyFront::ProxyFront(const ProxyFrontOptions& o) : impl_(std::make_unique<Impl>()) {
  const ProxyKind& k = kind_of(o.kind);
  const std::string program = find_proxy(o.kind, o.search_path);
  Setup s{0, o.servers, fs::absolute(fs::path(o.run_dir) / ("front-" + o.kind)), random_token()};
  fs::create_directories(s.dir);
  const fs::path conf = s.dir / (o.kind + ".conf");
  std::string why;
  for (int attempt = 0; attempt < 5; ++attempt) {
    s.port = free_port();
    std::ofstream(conf) << k.config(s);
    impl_->process.spawn(program, k.args(conf, s.dir), (s.dir / o.kind).string());
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (impl_->process.running() && std::chrono::steady_clock::now() < until) {
      if (answers_probe(s.port, s.token)) {
        port_ = s.port;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    impl_->process.stop();
    why = impl_->process.err_text();
    if (why.find("ddress already in use") == std::string::npos) break;  // not a port clash
  }
  if (why.size() > 2000) why = why.substr(why.size() - 2000);
  throw ExperimentError("real mode: the " + o.kind + " front end did not start (config " +
                        conf.string() + "): " + (why.empty() ? "no answer within 60 s" : why));
}

ProxyFront::~ProxyFront() = default;

}  // namespace servelab::experiments
