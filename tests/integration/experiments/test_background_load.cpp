// BackgroundLoad counts other processes' CPU, not this one's: a child process that spins for
// 0.4 s while this one sleeps shows as about one core of background load. Serial (integration):
// it reads the machine's CPU counters.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "experiments/background_load.h"

using servelab::experiments::BackgroundLoad;

namespace {

// Busy for `seconds` of wall time on this thread.
void spin(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

}  // namespace

TEST_CASE("background load counts another process spinning, not this one",
          "[experiments][profile]") {
  const BackgroundLoad other;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    spin(0.4);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);  // this process sleeps meanwhile
  const double with_child = other.cores();
  INFO("background cores with a spinning child: " << with_child);
  CHECK(with_child >= 0.3);  // a whole core when the child got one to itself
  CHECK(with_child <= std::thread::hardware_concurrency() + 0.05);

  // This process spinning is not background: about 0 on a quiet machine. Counted, it would
  // read as much as the child did; the margin leaves room for other tenants' load changing.
  const BackgroundLoad own;
  spin(0.4);
  INFO("background cores while this process spins: " << own.cores());
  CHECK(own.cores() < with_child - 0.5);
}
