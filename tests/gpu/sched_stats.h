// Where a process's threads spent a stretch of wall time, from the kernel's scheduler
// statistics (P5b paired, bench_gpu_paired.cpp): the CPU time all its threads ran, the time
// they were runnable but waited for a CPU, and the machine's steal time (a VM's vCPUs held
// by the host). A variant that runs slower with the same CPU time per second waited (for the
// GPU, a lock, a CPU); one with more run-queue wait or steal was short of CPUs. Linux only;
// fields that cannot be read stay 0. No LibTorch.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace servelab::gpu {

struct SchedSample {
  double run_s = 0;    // CPU time of all the process's threads
  double wait_s = 0;   // their time runnable, waiting for a CPU
  double steal_s = 0;  // the machine's steal time, all CPUs
};

// The process's and the machine's counters now (monotonic; take differences).
inline SchedSample sched_sample() {
  SchedSample s;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream f(task.path() / "schedstat");  // run ns, wait ns, timeslices
    double run_ns = 0, wait_ns = 0;
    if (f >> run_ns >> wait_ns) {
      s.run_s += run_ns * 1e-9;
      s.wait_s += wait_ns * 1e-9;
    }
  }
  std::ifstream stat("/proc/stat");  // cpu user nice system idle iowait irq softirq steal
  std::string cpu;
  double field[8] = {};
  if (stat >> cpu && cpu == "cpu") {
    for (double& v : field)
      if (!(stat >> v)) v = 0;
    s.steal_s = field[7] / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return s;
}

// Per second of `wall`: how many threads ran, waited for a CPU, and CPUs were stolen.
inline SchedSample sched_rates(const SchedSample& before, const SchedSample& after,
                               double wall) {
  if (wall <= 0) return {};
  return {(after.run_s - before.run_s) / wall, (after.wait_s - before.wait_s) / wall,
          (after.steal_s - before.steal_s) / wall};
}

}  // namespace servelab::gpu
