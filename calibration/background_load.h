// How much CPU the rest of the machine used while a measurement ran: a profile measured beside
// another tenant's build carries that build in its costs, and the simulator then predicts a
// slower machine than the next quiet run meets. Reads /proc (Linux): the machine's busy time
// (user, nice, system, irq, softirq and steal: a VM's neighbours count) less this process's own.
#pragma once

#include <chrono>
#include <cstdint>

namespace servelab::experiments {

class BackgroundLoad {
 public:
  BackgroundLoad();  // starts the window now
  // Cores' worth of CPU that other processes (and the hypervisor's other guests) took since
  // construction, averaged over the window; negative when /proc cannot be read.
  double cores() const;

 private:
  struct Sample {
    uint64_t machine_busy = 0;  // clock ticks
    uint64_t own = 0;           // clock ticks, this process (all its threads)
    bool ok = false;
  };
  static Sample sample();
  Sample start_;
  std::chrono::steady_clock::time_point started_;
};

// The machine is too busy for a measurement to stand for it alone above this many cores.
inline constexpr double kBusyMachineCores = 0.25;

}  // namespace servelab::experiments
