#include "cli/serve_processes.h"

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace servelab::cli {

namespace {

struct Child {
  pid_t pid = -1;
  bool running = false;
};

// In a fresh replica: end with SIGTERM (a clean shutdown through its sigwait) when the
// parent dies, and hear only the stop signals, as a single server does.
void become_replica(pid_t parent, const sigset_t& stop_signals) {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::raise(SIGTERM);  // the parent died before prctl took effect
  pthread_sigmask(SIG_SETMASK, &stop_signals, nullptr);
}

std::string describe_end(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

// Reaps every replica that ended; true when one ended other than with status 0.
bool reap(std::vector<Child>& children) {
  bool failed = false;
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return failed;
    for (size_t k = 0; k < children.size(); ++k) {
      if (children[k].pid != pid) continue;
      children[k].running = false;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      failed = failed || !ok;
      std::fprintf(stderr, "servelab serve: replica %zu (pid %d) %s\n", k, int(pid),
                   describe_end(status).c_str());
    }
  }
}

void signal_all(const std::vector<Child>& children, int sig) {
  for (const Child& c : children)
    if (c.running) ::kill(c.pid, sig);
}

bool any_running(const std::vector<Child>& children) {
  for (const Child& c : children)
    if (c.running) return true;
  return false;
}

// Threads of this process (/proc/self/task); 0 when it cannot be read.
size_t thread_count() {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

}  // namespace

std::string Replica::store_dir(const std::string& store) const {
  return (std::filesystem::path(store) / ("replica-" + std::to_string(index))).string();
}

int run_replicas(unsigned count, const sigset_t& stop_signals,
                 const std::function<int(const Replica&)>& serve) {
  // The parent waits for the stop signals and for its replicas' ends in one sigwait.
  sigset_t parent_signals = stop_signals;
  sigaddset(&parent_signals, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &parent_signals, nullptr);
  std::fflush(stdout);  // nothing buffered is written twice
  std::fflush(stderr);
  // fork copies only the calling thread: another one's locks would stay held in the replicas.
  if (const size_t threads = thread_count(); threads > 1) {
    std::fprintf(stderr, "servelab serve: cannot start replicas: %zu threads run before the "
                 "fork (only one may)\n", threads);
    return 1;
  }
  const pid_t parent = ::getpid();
  std::vector<Child> children(count);
  for (unsigned k = 0; k < count; ++k) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      become_replica(parent, stop_signals);
      const int rc = serve(Replica{k, count});
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(rc);
    }
    if (pid < 0) {
      std::fprintf(stderr, "servelab serve: cannot start replica %u: %s\n", k,
                   std::strerror(errno));
      signal_all(children, SIGTERM);
      while (::wait(nullptr) > 0) {}
      return 1;
    }
    children[k] = {pid, true};
  }
  bool failed = false;
  while (any_running(children)) {
    int sig = 0;
    sigwait(&parent_signals, &sig);
    if (sig == SIGCHLD) {
      failed = reap(children) || failed;
      continue;
    }
    std::fprintf(stderr, "servelab serve: %s received, stopping the replicas\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM");
    signal_all(children, SIGTERM);
  }
  return failed ? 1 : 0;
}

}  // namespace servelab::cli
