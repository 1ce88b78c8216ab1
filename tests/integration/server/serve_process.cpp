#include "tests/integration/server/serve_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace servelab::testing {
namespace {

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

ServeProcess::ServeProcess(const std::string& subcommand, const std::vector<std::string>& args,
                           const std::filesystem::path& log_prefix)
    : out_(log_prefix.string() + ".out"), err_(log_prefix.string() + ".err") {
  const std::string binary = std::string(SERVELAB_BINARY_DIR) + "/servelab";
  std::vector<std::string> all = {binary, subcommand};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = out_.string(), err = err_.string();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {  // the child: only async-signal-safe calls until exec
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(127);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
}

ServeProcess::~ServeProcess() {
  if (!reaped_) kill9();
}

std::optional<int> ServeProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reaped_) {
    pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  return std::nullopt;
}

uint16_t ServeProcess::wait_port(std::chrono::milliseconds timeout) {
  static const std::regex line(R"(listening on 127\.0\.0\.1:(\d+))");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::smatch m;
    const std::string text = out();
    if (std::regex_search(text, m, line)) return static_cast<uint16_t>(std::stoi(m[1]));
    if (wait_exit(std::chrono::milliseconds(0)) || reaped_) return 0;
    if (std::chrono::steady_clock::now() >= deadline) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void ServeProcess::kill9() {
  if (reaped_) return;
  ::kill(pid_, SIGKILL);
  if (::waitpid(pid_, &status_, 0) == pid_) reaped_ = true;
}

bool ServeProcess::stop(std::chrono::milliseconds timeout) {
  if (!reaped_) ::kill(pid_, SIGTERM);
  auto rc = wait_exit(timeout);
  return rc && *rc == 0;
}

std::string ServeProcess::out() const { return slurp(out_); }
std::string ServeProcess::err() const { return slurp(err_); }

}  // namespace servelab::testing
