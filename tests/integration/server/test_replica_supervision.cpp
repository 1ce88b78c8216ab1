// `serve --processes`' supervision (cli/serve_processes.h) without a server: the preparation
// runs in a process of its own, which forks the replicas and exits; the replicas are then the
// supervisor's children, and the supervisor's status follows theirs.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <stdexcept>
#include <string>

#include "cli/serve_processes.h"
#include "tests/support/temp_dir.h"

using servelab::cli::Replica;
using servelab::cli::run_replicas;

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// Runs 3 replicas that record their parent; replica `failing` (if any) exits with 3.
int run_three(const servelab::testutil::TempDir& dir, int failing, bool prepare_throws) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &stop, &before);
  const pid_t me = ::getpid();
  const int rc = run_replicas(
      3, stop,
      [&] {
        if (prepare_throws) throw std::runtime_error("no weights today");
        std::ofstream(dir / "prepared") << ::getpid();
      },
      [&](const Replica& r) {
        std::ofstream(dir / ("replica-" + std::to_string(r.index)))
            << (::getppid() == me ? "child of the supervisor" : "not the supervisor's child");
        return int(r.index) == failing ? 3 : 0;
      });
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  return rc;
}

}  // namespace

TEST_CASE("replicas are prepared in a process of their own and end as the supervisor's children",
          "[server][processes]") {
  servelab::testutil::TempDir dir;
  CHECK(run_three(dir, -1, false) == 0);
  const std::string prepared = read_text(dir / "prepared");
  REQUIRE_FALSE(prepared.empty());
  CHECK(std::stol(prepared) != long(::getpid()));  // not in the supervisor
  for (int k = 0; k < 3; ++k)
    CHECK(read_text(dir / ("replica-" + std::to_string(k))) == "child of the supervisor");
}

TEST_CASE("a replica that fails, or a preparation that throws, fails the group",
          "[server][processes]") {
  servelab::testutil::TempDir dir;
  SECTION("a replica ends with status 3") {
    CHECK(run_three(dir, 1, false) == 1);
    for (int k = 0; k < 3; ++k)  // the others ran to their end
      CHECK(std::filesystem::exists(dir / ("replica-" + std::to_string(k))));
  }
  SECTION("the preparation throws: no replica starts") {
    CHECK(run_three(dir, -1, true) == 1);
    for (int k = 0; k < 3; ++k)
      CHECK_FALSE(std::filesystem::exists(dir / ("replica-" + std::to_string(k))));
  }
}
