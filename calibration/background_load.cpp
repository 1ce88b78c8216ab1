#include "calibration/background_load.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace servelab::experiments {

BackgroundLoad::BackgroundLoad() : start_(sample()), started_(std::chrono::steady_clock::now()) {}

BackgroundLoad::Sample BackgroundLoad::sample() {
  Sample s;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu")
    return s;
  s.machine_busy = user + nice + system + irq + softirq + steal;
  // /proc/self/stat: the command name (field 2) may hold spaces; fields 14 and 15 (utime,
  // stime) follow its closing parenthesis.
  std::ifstream self("/proc/self/stat");
  std::string line;
  if (!std::getline(self, line)) return s;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int i = 3; i < 14; ++i) rest >> field;  // state .. cmajflt
  uint64_t utime = 0, stime = 0;
  if (!(rest >> utime >> stime)) return s;
  s.own = utime + stime;
  s.ok = true;
  return s;
}

double BackgroundLoad::cores() const {
  const Sample end = sample();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const long hz = sysconf(_SC_CLK_TCK);
  if (!start_.ok || !end.ok || hz <= 0 || seconds <= 0) return -1;
  const double busy = double(end.machine_busy - start_.machine_busy);
  const double own = double(end.own - start_.own);
  return std::max(0.0, busy - own) / double(hz) / seconds;
}

}  // namespace servelab::experiments
