// The transport's idle trim (engine/server/heap_trim.h) on real sockets: the freed heap memory
// a process keeps (as the engine's allocator regime keeps forward buffers) goes back to the
// system once no request has been in flight for the delay, never while one is, and not at
// all with the delay at zero. Read from this process's resident set and from the transport's
// `trimmed` callback (which /metrics counts).
#include <malloc.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/server/http_transport.h"
#include "tests/integration/server/http_client.h"

using namespace servelab::server;
using servelab::testing::HttpClient;
using namespace std::chrono_literals;

namespace {

double rss_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  return 0;
}

// Leaves `mb` MB of freed memory in the heap, kept: chunks below the mmap threshold, freed
// with the trim threshold raised (as engine/runtime/allocator.h raises it).
void leave_freed_heap(size_t mb) {
  mallopt(M_TRIM_THRESHOLD, 2000000000);
  constexpr size_t kChunk = 64 << 10;
  std::vector<char*> chunks;
  for (size_t i = 0; i < mb * (1 << 20) / kChunk; ++i) {
    chunks.push_back(static_cast<char*>(std::malloc(kChunk)));
    std::memset(chunks.back(), 1, kChunk);
  }
  for (char* p : chunks) std::free(p);
}

// RSS once it is at most `limit` MB, or after 10 s (then the last reading).
double settled_rss(double limit) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  double mb = rss_mb();
  while (mb > limit && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(50ms);
    mb = rss_mb();
  }
  return mb;
}

// "/hold" is answered when the test releases it; anything else at once.
struct HeldReply {
  std::mutex mu;
  Reply reply;
  std::promise<void> arrived;

  Handler handler() {
    return [this](HttpRequest req, Reply r) {
      if (req.path != "/hold") return r(json_response(200, "{}"));
      std::lock_guard<std::mutex> lock(mu);
      reply = std::move(r);
      arrived.set_value();
    };
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    reply(json_response(200, "{}"));
  }
};

}  // namespace

TEST_CASE("an idle transport gives the kept heap back, never while a request is in flight",
          "[server][transport][memory]") {
  HeldReply held;
  std::atomic<int> idle_trims{0};
  TransportOptions opt;
  opt.io_threads = 1;
  opt.idle_trim = 200ms;
  opt.trimmed = [&idle_trims](bool idle) { idle_trims += idle ? 1 : 0; };
  HttpTransport t(opt, held.handler());
  t.start();
  auto arrived = held.arrived.get_future();
  std::thread client([port = t.port()] { CHECK(HttpClient(port).get("/hold").status == 200); });
  REQUIRE(arrived.wait_for(10s) == std::future_status::ready);

  leave_freed_heap(64);
  const double high = rss_mb();
  std::this_thread::sleep_for(1s);  // five delays with the request in flight
  INFO("RSS with 64 MB freed " << high << " MB");
  CHECK(rss_mb() >= high - 16);
  CHECK(idle_trims == 0);

  held.release();
  client.join();
  const double after = settled_rss(high - 48);
  INFO("after the request and the delay " << after << " MB");
  CHECK(after <= high - 48);
  // The callback runs once the trim has returned, after the drop the loop above saw.
  for (int i = 0; i < 200 && idle_trims == 0; ++i) std::this_thread::sleep_for(50ms);
  CHECK(idle_trims >= 1);
  t.stop();
}

TEST_CASE("with the idle trim at zero the transport keeps the freed heap",
          "[server][transport][memory]") {
  HeldReply held;
  std::atomic<int> trims{0};
  TransportOptions opt;
  opt.io_threads = 1;  // idle_trim: zero by default
  opt.trimmed = [&trims](bool) { ++trims; };
  HttpTransport t(opt, held.handler());
  t.start();
  leave_freed_heap(64);
  const double high = rss_mb();
  CHECK(HttpClient(t.port()).get("/ok").status == 200);
  std::this_thread::sleep_for(1s);
  INFO("RSS with 64 MB freed " << high << " MB, a second after a request " << rss_mb());
  CHECK(rss_mb() >= high - 16);
  CHECK(trims == 0);
  t.stop();
}
