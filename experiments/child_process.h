// A child process of a real cluster run: a `servelab serve` server or a proxy front end
// (experiments/real_cluster.h). Its output goes to LOG.out and LOG.err; the kernel kills it
// when the thread that started it ends (PR_SET_PDEATHSIG), so an interrupted or crashed run
// leaves none behind. stop(), also from the destructor, ends it: SIGTERM, then SIGKILL after
// 10 s. Not thread-safe: one owner, on the thread that spawned it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace servelab::experiments {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { stop(); }
  ChildProcess(ChildProcess&& o) noexcept : pid_(o.pid_), log_(std::move(o.log_)) { o.pid_ = -1; }
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;

  // Starts `program` (a path) with `args`; its output into `log`.out and `log`.err.
  // Throws ExperimentError when it cannot fork; a program that cannot be executed exits 127.
  void spawn(const std::string& program, const std::vector<std::string>& args,
             const std::string& log);
  // Whether it still runs; reaps it when it has exited.
  bool running();
  // The port of its `listening on 127.0.0.1:PORT` line (servelab serve's) within `limit`;
  // throws ExperimentError naming `what` with its stderr's start when it exits or is late.
  uint16_t wait_port(const std::string& what, std::chrono::seconds limit);
  // Ends it (SIGTERM, then SIGKILL after 10 s) and reaps it. Idempotent.
  void stop();

  std::string out_text() const;  // what it wrote to stdout so far
  std::string err_text() const;  // ... and to stderr
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

// The path of `name` in the colon-separated folders of `search_path`, or "" when none holds
// an executable of that name.
std::string find_program(const std::string& name, const std::string& search_path);

}  // namespace servelab::experiments
