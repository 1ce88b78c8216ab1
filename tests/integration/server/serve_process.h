// `servelab serve` (or another long-running subcommand: `servelab route`) as a child process,
// for tests that need the real binary: its exit status and messages for bad options, or a
// real kill -9. One object per child; not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace servelab::testing {

class ServeProcess {
 public:
  // Starts `<build>/servelab serve ARGS...`, its stdout and stderr going to files named
  // `<log_prefix>.out` and `<log_prefix>.err`. Throws std::runtime_error when fork fails.
  ServeProcess(const std::vector<std::string>& args, const std::filesystem::path& log_prefix)
      : ServeProcess("serve", args, log_prefix) {}
  // Starts `<build>/servelab SUBCOMMAND ARGS...` likewise.
  ServeProcess(const std::string& subcommand, const std::vector<std::string>& args,
               const std::filesystem::path& log_prefix);
  // Kills (SIGKILL) and reaps the child if it still runs.
  ~ServeProcess();
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // The exit status once the child exited within `timeout`; nothing if it still runs (then it
  // is left running) or if a signal ended it.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  // The port of its `listening on 127.0.0.1:PORT` line, waiting up to `timeout`; 0 when the
  // child exited first or the time passed.
  uint16_t wait_port(std::chrono::milliseconds timeout);
  // SIGKILL, as a crash or an OOM kill would: no handler, no cleanup. Reaps the child.
  void kill9();
  // SIGTERM, then waits up to `timeout`; true when it exited with status 0.
  bool stop(std::chrono::milliseconds timeout);

  pid_t pid() const { return pid_; }  // the child's process id (its /proc entry)
  std::string out() const;  // everything it wrote to stdout so far
  std::string err() const;  // everything it wrote to stderr so far

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;  // waitpid's status once reaped_
  std::filesystem::path out_, err_;
};

}  // namespace servelab::testing
