// The threads a process runs now (/proc/PID/task): for tests of what starts threads.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace servelab::testutil {

inline size_t thread_count(pid_t pid = ::getpid()) {
  size_t n = 0;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  for ([[maybe_unused]] const auto& t : std::filesystem::directory_iterator(task)) ++n;
  return n;
}

}  // namespace servelab::testutil
