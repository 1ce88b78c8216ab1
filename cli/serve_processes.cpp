#include "cli/serve_processes.h"

#include "cli/supervisor_pages.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <vector>

namespace servelab::cli {

namespace {

struct Child {
  pid_t pid = -1;
  bool running = false;
};

// In a fresh replica: wait until the kernel has made the supervisor its parent (the forking
// process exits once every replica is forked; the supervisor is a subreaper), then end with
// SIGTERM when the supervisor dies, however it dies, and hear only the stop signals, as a
// single server does. The parent-death signal is tied only then: the kernel sends it at every
// parent's death, the forking process's included.
void become_replica(pid_t supervisor, pid_t forker, const sigset_t& stop_signals) {
  while (::getppid() == forker) ::usleep(200);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != supervisor) ::raise(SIGTERM);  // the supervisor died first
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

// Until every replica has ended: passes SIGINT and SIGTERM on, reports each replica's end.
int supervise(std::vector<Child>& children, const sigset_t& signals) {
  bool failed = false;
  while (any_running(children)) {
    int sig = 0;
    sigwait(&signals, &sig);
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

// fork copies only the calling thread: another one's locks would stay held in the child.
// False (and says so) when another thread runs.
bool alone_before_fork() {
  const size_t threads = thread_count();
  if (threads <= 1) return true;
  std::fprintf(stderr, "servelab serve: cannot start replicas: %zu threads run before the "
               "fork (only one may)\n", threads);
  return false;
}

}  // namespace

std::string Replica::store_dir(const std::string& store) const {
  return (std::filesystem::path(store) / ("replica-" + std::to_string(index))).string();
}

namespace {

// Reads the replicas' pids the forking process writes to `from` until it closes it.
std::vector<pid_t> read_replica_pids(int from, unsigned count) {
  std::vector<pid_t> pids;
  pid_t pid = 0;
  size_t got = 0;
  while (pids.size() < count) {
    const ssize_t n = ::read(from, reinterpret_cast<char*>(&pid) + got, sizeof pid - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += size_t(n);
    if (got == sizeof pid) {
      pids.push_back(pid);
      got = 0;
    }
  }
  return pids;
}

// The forking process: prepares what the replicas share, forks them, tells the supervisor
// their pids through `to`, and exits; its own memory (what only the preparation touched)
// goes with it. Returns its exit status.
int fork_replicas(unsigned count, pid_t supervisor, int to, const sigset_t& stop_signals,
                  const std::function<void()>& prepare,
                  const std::function<int(const Replica&)>& serve) {
  try {
    prepare();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "servelab serve: cannot prepare the replicas: %s\n", e.what());
    return 1;
  }
  std::fflush(stdout);  // nothing buffered is written twice
  std::fflush(stderr);
  if (!alone_before_fork()) return 1;
  const pid_t forker = ::getpid();
  for (unsigned k = 0; k < count; ++k) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(to);
      become_replica(supervisor, forker, stop_signals);
      const int rc = serve(Replica{k, count});
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(rc);
    }
    if (pid < 0) {
      std::fprintf(stderr, "servelab serve: cannot start replica %u: %s\n", k,
                   std::strerror(errno));
      return 1;
    }
    if (::write(to, &pid, sizeof pid) != ssize_t(sizeof pid)) return 1;
  }
  return 0;
}

}  // namespace

int run_replicas(unsigned count, const sigset_t& stop_signals, const std::function<void()>& prepare,
                 const std::function<int(const Replica&)>& serve) {
  // The supervisor waits for the stop signals and for its replicas' ends in one sigwait.
  sigset_t parent_signals = stop_signals;
  sigaddset(&parent_signals, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &parent_signals, nullptr);
  if (!alone_before_fork()) return 1;
  // Replicas whose forking process exits become the supervisor's children.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int pids_pipe[2];
  if (::pipe2(pids_pipe, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "servelab serve: cannot start replicas: %s\n", std::strerror(errno));
    return 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t supervisor = ::getpid();
  const pid_t forker = ::fork();
  if (forker == 0) {
    ::close(pids_pipe[0]);
    ::_exit(fork_replicas(count, supervisor, pids_pipe[1], stop_signals, prepare, serve));
  }
  ::close(pids_pipe[1]);
  if (forker < 0) {
    std::fprintf(stderr, "servelab serve: cannot start replicas: %s\n", std::strerror(errno));
    ::close(pids_pipe[0]);
    return 1;
  }
  const std::vector<pid_t> pids = read_replica_pids(pids_pipe[0], count);
  ::close(pids_pipe[0]);
  int forker_status = 0;
  while (::waitpid(forker, &forker_status, 0) < 0 && errno == EINTR) {}
  std::vector<Child> children;
  for (const pid_t pid : pids) children.push_back({pid, true});
  if (!WIFEXITED(forker_status) || WEXITSTATUS(forker_status) != 0 || pids.size() < count) {
    std::fprintf(stderr, "servelab serve: the process forking the replicas %s\n",
                 describe_end(forker_status).c_str());
    signal_all(children, SIGTERM);
    while (::wait(nullptr) > 0) {}
    return 1;
  }
  unmap_unwritten_file_pages();  // the start-up's pages, which only this process maps
  return supervise(children, parent_signals);
}

}  // namespace servelab::cli
