#include "cli/supervisor_pages.h"

#include <sys/mman.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace servelab::cli {
namespace {

struct Mapping {
  uintptr_t start = 0, end = 0;
  bool file = false;       // backed by a file (a path in the header line)
  bool writable = false;   // 'w' in its permissions
  uint64_t rss_kb = 0;
  uint64_t anonymous_kb = 0;  // private copies of its pages (relocations, writes)

  bool unmappable() const { return file && !writable && rss_kb > 0 && anonymous_kb == 0; }
};

// A header line: "start-end perms offset dev inode [path]".
bool parse_header(const std::string& line, Mapping& m) {
  std::istringstream in(line);
  std::string range, perms, offset, dev, inode, path;
  if (!(in >> range >> perms >> offset >> dev >> inode)) return false;
  const size_t dash = range.find('-');
  if (dash == std::string::npos || perms.size() < 4) return false;
  try {
    m.start = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
  } catch (const std::exception&) {
    return false;
  }
  in >> path;
  m.file = !path.empty() && path.front() == '/';
  m.writable = perms[1] == 'w';
  return m.end > m.start;
}

// A field line "Name:   N kB" of the current mapping.
void parse_field(const std::string& line, Mapping& m) {
  std::istringstream in(line);
  std::string name;
  uint64_t kb = 0;
  if (!(in >> name >> kb)) return;
  if (name == "Rss:") m.rss_kb = kb;
  if (name == "Anonymous:") m.anonymous_kb = kb;
}

std::vector<Mapping> read_mappings() {
  std::vector<Mapping> out;
  std::ifstream smaps("/proc/self/smaps");
  for (std::string line; std::getline(smaps, line);) {
    Mapping m;
    if (parse_header(line, m)) {
      out.push_back(m);
    } else if (!out.empty()) {
      parse_field(line, out.back());
    }
  }
  return out;
}

}  // namespace

uint64_t unmap_unwritten_file_pages() {
#if defined(__linux__)
  uint64_t released = 0;
  for (const Mapping& m : read_mappings()) {
    if (!m.unmappable()) continue;
    // MADV_DONTNEED on a file mapping with no private page only drops page-table entries.
    if (::madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED) == 0)
      released += m.rss_kb * 1024;
  }
  return released;
#else
  return 0;
#endif
}

}  // namespace servelab::cli
