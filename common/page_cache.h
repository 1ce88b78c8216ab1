// Dropping files from the kernel's page cache, so that the next read of them comes from the
// disk: cold-load measurements (the profiler's load sources, the store benchmark). Written
// pages are flushed first (a dirty page stays cached). Best effort: a file that cannot be
// opened is left alone. Header-only, no state; Linux (posix_fadvise).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

namespace servelab {

inline void drop_file_from_page_cache(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// A file, or every regular file under a directory.
inline void drop_from_page_cache(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return drop_file_from_page_cache(path);
  for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec))
    if (e.is_regular_file(ec)) drop_file_from_page_cache(e.path());
}

}  // namespace servelab
