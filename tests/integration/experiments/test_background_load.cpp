// BackgroundLoad counts other processes' CPU, not this one's. Ground truth from the kernel,
// not from timings this machine happens to show: a child that burns 0.4 s of CPU time
// (its own CPU clock, however long the machine takes to give it) is background (0.3 s at
// least, allowing for the kernel's sampling by ticks), and this process burning 0.4 s is left out of what the machine as a whole
// (/proc/stat) was busy with. Other tenants only add to both sides. Serial (integration):
// it reads the machine's CPU counters.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>

#include "calibration/background_load.h"

using servelab::experiments::BackgroundLoad;

namespace {

using Clock = std::chrono::steady_clock;

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Burns `seconds` of this process's CPU time, however much wall time that takes.
void burn_cpu(double seconds) {
  const double end = process_cpu_seconds() + seconds;
  volatile uint64_t x = 0;
  while (process_cpu_seconds() < end) x = x + 1;
}

// The whole machine's busy CPU seconds so far (the first line of /proc/stat).
double machine_busy_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  REQUIRE((stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal));
  return double(user + nice + system + irq + softirq + steal) / double(sysconf(_SC_CLK_TCK));
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

TEST_CASE("background load counts another process's CPU, not this one's",
          "[experiments][profile]") {
  const double tick = 1.0 / double(sysconf(_SC_CLK_TCK));
  const double cores = double(std::thread::hardware_concurrency());

  // The window runs from the object's construction into cores(); the wall time taken inside
  // those bounds is no longer than the window, so cores() times it is no more than the
  // background CPU seconds the object counted.
  const BackgroundLoad other;
  const Clock::time_point inside_start = Clock::now();
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    burn_cpu(0.4);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);  // this process sleeps meanwhile
  const double inside = seconds_between(inside_start, Clock::now());
  const double with_child = other.cores();
  INFO("background cores with a child burning 0.4 s of CPU: " << with_child);
  REQUIRE(std::isfinite(with_child));
  CHECK(with_child * inside >= 0.3);  // 0.4 s, less the kernel's tick sampling
  CHECK(with_child <= cores + 4 * tick / inside);

  // This process burning 0.4 s: the machine was busy at least that much more than the
  // background counted. Here the bounds lie outside the window, so cores() times them is no
  // less than the background CPU seconds counted.
  const double busy_before = machine_busy_seconds();
  const Clock::time_point outside_start = Clock::now();
  const BackgroundLoad own;
  burn_cpu(0.4);
  const double own_cores = own.cores();
  const double outside = seconds_between(outside_start, Clock::now());
  const double machine_busy = machine_busy_seconds() - busy_before;
  INFO("background cores while this process burns 0.4 s: " << own_cores
       << "; the machine's busy seconds: " << machine_busy);
  REQUIRE(std::isfinite(own_cores));
  CHECK(own_cores >= 0);
  CHECK(own_cores * outside <= machine_busy - 0.3);  // 0.4 s, less tick sampling
}
