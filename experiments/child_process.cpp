// ChildProcess: fork and exec with PR_SET_PDEATHSIG, its output in files, a polite stop.
#include "experiments/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "experiments/experiment.h"

namespace servelab::experiments {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

void ChildProcess::spawn(const std::string& program, const std::vector<std::string>& args,
                         const std::string& log) {
  log_ = log;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string out = log + ".out", err = log + ".err";
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw ExperimentError("real mode: cannot start " + program + " (fork failed)");
  if (pid_ > 0) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent went already
  const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (o < 0 || e < 0) ::_exit(127);
  ::dup2(o, 1);
  ::dup2(e, 2);
  ::execv(program.c_str(), argv.data());
  ::_exit(127);
}

bool ChildProcess::running() {
  if (pid_ <= 0) return false;
  if (::waitpid(pid_, nullptr, WNOHANG) != pid_) return true;
  pid_ = -1;
  return false;
}

uint16_t ChildProcess::wait_port(const std::string& what, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  const std::string mark = "listening on 127.0.0.1:";
  while (std::chrono::steady_clock::now() < until) {
    const std::string text = out_text();
    const size_t at = text.find(mark);
    if (at != std::string::npos && text.find('\n', at) != std::string::npos)
      return uint16_t(std::stoul(text.substr(at + mark.size())));
    if (!running())
      throw ExperimentError("real mode: " + what + " exited: " + err_text().substr(0, 2000));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw ExperimentError("real mode: " + what + " printed no port within " +
                        std::to_string(limit.count()) + " s");
}

void ChildProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 200; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return void(pid_ = -1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string ChildProcess::out_text() const { return slurp(log_ + ".out"); }
std::string ChildProcess::err_text() const { return slurp(log_ + ".err"); }

std::string find_program(const std::string& name, const std::string& search_path) {
  for (size_t begin = 0; begin <= search_path.size();) {
    size_t end = search_path.find(':', begin);
    if (end == std::string::npos) end = search_path.size();
    const std::string dir = search_path.substr(begin, end - begin);
    begin = end + 1;
    if (dir.empty()) continue;
    const std::string path = (std::filesystem::path(dir) / name).string();
    if (::access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path)) return path;
  }
  return "";
}

}  // namespace servelab::experiments
