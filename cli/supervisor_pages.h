// What the supervisor of `serve --processes` keeps mapped while it waits. Its start-up ran the
// libraries' static initializers (LibTorch registers its thousands of operators then), which
// touched tens of megabytes of their code and read-only data; no replica maps those pages
// (a fork copies no page tables of file mappings), so the supervisor alone held them for the
// group's life, and they counted whole in its PSS. It never runs that code again.
#pragma once

#include <cstdint>

namespace servelab::cli {

// Unmaps this process's resident pages of file mappings that it never wrote (read-only or
// executable, no private copy of any page): the kernel keeps them in the page cache, and a
// page used again is mapped again on its fault. Returns the bytes that were resident there.
// Linux only (/proc/self/smaps, madvise); 0 elsewhere or when smaps cannot be read.
uint64_t unmap_unwritten_file_pages();

}  // namespace servelab::cli
