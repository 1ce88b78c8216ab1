// A fresh, uniquely named folder under the system's temporary directory for one test,
// removed with everything in it when the TempDir goes out of scope. Unique per process and
// per instance (mkdtemp), so tests may run in parallel and leftovers of a crashed run never
// collide with a new one.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace servelab::testutil {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "servelab-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace servelab::testutil
