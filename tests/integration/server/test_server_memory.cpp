// Memory amplification and unbounded work against the real `servelab serve` (its allocator
// regime keeps freed memory, as in production): the server's resident set (VmRSS of the
// child) after each abuse must be back within 2x of before, and work for clients that are
// gone is dropped. Sizes are chosen so that the old behaviour lands far above the factor.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/server/serve_process.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;

namespace {

double rss_mb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  return 0;
}

// The child's RSS once it is at most `limit` MB, or after 20 s (then the last reading).
double settled_rss(pid_t pid, double limit) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  double mb = rss_mb(pid);
  while (mb > limit && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    mb = rss_mb(pid);
  }
  return mb;
}

// A connected socket to 127.0.0.1:port with a small receive buffer (a slow reader's).
int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

void send_all(int fd, const std::string& bytes) {
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    REQUIRE(n > 0);
    sent += static_cast<size_t>(n);
  }
}

// `servelab serve` on a fresh store with `extra` options, and its port.
struct Served {
  TempDir dir;
  std::unique_ptr<ServeProcess> process;
  uint16_t port = 0;

  explicit Served(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--store", (dir.path / "store").string(), "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    process = std::make_unique<ServeProcess>(args, dir.path / "serve");
    port = process->wait_port(std::chrono::seconds(60));
    INFO("stderr: " << process->err());
    REQUIRE(port != 0);
  }
  pid_t pid() const { return process->pid(); }
};

// A v2 JSON request for noop (one item) with a key of about `bytes` bytes of zeros, each a
// JSON number.
std::string padded_json(size_t bytes) {
  std::string s = R"({"inputs": [{"name": "INPUT__0", "datatype": "FP32", "shape": [1, 3, 32, 32], "data": [0)";
  for (int i = 1; i < 3 * 32 * 32; ++i) s += ",0";
  s += R"(]}], "pad": [0)";
  while (s.size() + 4 < bytes) s += ",0";
  return s + "]}";
}

// The bytes of one binary-tensor v2 request of `n` zero items for `model`.
std::string binary_batch(const std::string& model, int n) {
  const size_t bytes = size_t(n) * 3 * 32 * 32 * sizeof(float);
  const std::string head =
      json({{"inputs", {{{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {n, 3, 32, 32}},
                         {"parameters", {{"binary_data_size", bytes}}}}}}}).dump();
  return "POST /v2/models/" + model + "/infer HTTP/1.1\r\nHost: x\r\n"
         "Inference-Header-Content-Length: " + std::to_string(head.size()) +
         "\r\nContent-Length: " + std::to_string(head.size() + bytes) + "\r\n\r\n" + head +
         std::string(bytes, '\0');
}

double metric(uint16_t port, const std::string& prefix) {
  return metric_sum(HttpClient(port).get("/metrics").body, prefix);
}

}  // namespace

TEST_CASE("a v2 JSON body costs about its size, not a tree of every number",
          "[server][memory]") {
  Served s({});
  HttpClient c(s.port);
  REQUIRE(c.post_form("/register", register_form("noop", "noop")).status == 201);
  const double before = rss_mb(s.pid());
  const std::string body = padded_json((16u << 20) - 1024);  // 8 million numbers
  int status[2] = {0, 0};
  std::thread other([&] { status[1] = HttpClient(s.port).post_json("/v2/models/noop/infer", body).status; });
  auto r = c.post_json("/v2/models/noop/infer", body);
  other.join();
  status[0] = r.status;
  CHECK(status[0] == 400);
  CHECK(status[1] == 400);
  CHECK_THAT(r.body, Catch::Contains("4096 JSON values"));
  const double after = settled_rss(s.pid(), 2 * before);
  INFO("RSS before " << before << " MB, after " << after << " MB");
  CHECK(after <= 2 * before);

  // Over --max-json-body-bytes: 413 from the header, naming the option.
  r = HttpClient(s.port).post_json("/v2/models/noop/infer", std::string(17u << 20, ' '));
  CHECK(r.status == 413);
  CHECK_THAT(r.body, Catch::Contains("--max-json-body-bytes"));
  CHECK(c.get("/health").status == 200);
}

TEST_CASE("serve bounds queues by default and drops the queued items of clients gone",
          "[server][memory]") {
  // One worker whose every batch takes 3 s (the profiled executor): nothing drains while
  // 17 batches of 64 (1088 items) arrive from clients that then go.
  TempDir profile_dir;
  const auto profile = profile_dir.path / "slow.yaml";
  std::ofstream(profile) << "models:\n  noop:\n    size_bytes: 1\n"
                            "    batch_latency_ms: [{batch: 1, mean: 3000}]\n"
                            "    load_ms: {disk->host: 0}\n";
  Served s({"--executor", "profiled", "--profile", profile.string()});
  REQUIRE(HttpClient(s.port).post_form("/register", register_form("noop", "noop")).status == 201);
  const std::string rejected = "servelab_request_failures_total{model=\"noop\",reason=\"rejected\"";
  const std::string cancelled = "servelab_request_failures_total{model=\"noop\",reason=\"cancelled\"";
  std::vector<int> clients;
  const std::string batch = binary_batch("noop", 64);
  for (int i = 0; i < 17; ++i) {
    clients.push_back(connect_to(s.port));
    send_all(clients.back(), batch);
  }
  for (int i = 0; i < 100 && metric(s.port, rejected) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(metric(s.port, rejected) > 0);  // the default bound (1024) refused the rest
  CHECK(metric(s.port, "servelab_queued_requests{model=\"noop\"") <= 1024);

  for (int fd : clients) ::close(fd);
  for (int i = 0; i < 100 && metric(s.port, cancelled) < 1000; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(metric(s.port, cancelled) >= 1000);  // dropped before they ran
  CHECK(metric(s.port, "servelab_batches_total{model=\"noop\"") <= 3);

  // The same for /classify.
  const double before = metric(s.port, cancelled);
  const std::string image = read_file(image_file("digit_7.png"));
  const int fd = connect_to(s.port);
  send_all(fd, "POST /classify/noop HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                   std::to_string(image.size()) + "\r\n\r\n" + image);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::close(fd);
  for (int i = 0; i < 100 && metric(s.port, cancelled) == before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(metric(s.port, cancelled) == before + 1);
}

TEST_CASE("slow readers of large answers leave no memory behind", "[server][memory]") {
  Served s({});
  std::string labels;  // 10 labels of 2 MiB: GET /models/big answers about 20 MB
  for (int k = 0; k < 10; ++k) labels += std::to_string(k) + std::string(2u << 20, 'x') + "\n";
  auto form = register_form("big", "noop");
  for (auto& f : form)
    if (f.name == "labels") f.data = labels;
  REQUIRE(HttpClient(s.port).post_form("/register", form).status == 201);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the registration settles
  const double before = rss_mb(s.pid());
  std::vector<int> readers;
  for (int i = 0; i < 40; ++i) {
    readers.push_back(connect_to(s.port));
    send_all(readers.back(), "GET /models/big HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  // Each reads a byte once its answer comes, so that every answer is in flight at once, and
  // then a byte a second for two seconds before it goes.
  timeval wait{30, 0};
  for (int fd : readers) {
    char c;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    CHECK(::recv(fd, &c, 1, 0) == 1);
  }
  for (int second = 0; second < 2; ++second) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (int fd : readers) {
      char c;
      ::recv(fd, &c, 1, MSG_DONTWAIT);
    }
  }
  for (int fd : readers) ::close(fd);
  const double after = settled_rss(s.pid(), 2 * before);
  INFO("RSS before " << before << " MB, after " << after << " MB");
  CHECK(after <= 2 * before);
  CHECK(HttpClient(s.port).get("/health").status == 200);
}

TEST_CASE("an idle server gives its kept memory back and counts it in /metrics",
          "[server][memory]") {
  const std::string idle_trims = "servelab_heap_trims_total{reason=\"idle\"}";
  const std::string image = read_file(image_file("digit_7.png"));
  auto serve_one = [&](const Served& s) {
    HttpClient c(s.port);
    REQUIRE(c.post_form("/register", register_form("noop", "noop")).status == 201);
    REQUIRE(c.request("POST", "/classify/noop", image, "image/png").status == 200);
  };
  Served trimming({"--idle-trim-ms", "300"});
  serve_one(trimming);
  double trims = 0;  // each reading is a request: read less often than the delay
  for (int i = 0; i < 20 && trims == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    trims = metric(trimming.port, idle_trims);
  }
  CHECK(trims >= 1);

  // A server that has served nothing gives back what its start-up freed: the first reading,
  // three seconds in (thirty delays), finds the trim of the check the start scheduled (and no
  // other: no request came before it).
  Served unused({"--idle-trim-ms", "100"});
  std::this_thread::sleep_for(std::chrono::seconds(3));
  CHECK(metric(unused.port, idle_trims) == 1);

  Served keeping({"--idle-trim-ms", "0"});
  serve_one(keeping);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK(metric(keeping.port, idle_trims) == 0);
  CHECK_THAT(HttpClient(keeping.port).get("/metrics").body,
             Catch::Contains("servelab_heap_trims_total{reason=\"large_frees\"}"));
}
