// Runs every seed-corpus file (fuzz/corpus/<target>/*) through its target's entry function,
// so that CI covers the corpora (and any crash input added to them) without clang. A crash
// fails the test by crashing; an empty corpus folder fails it too.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz/targets.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  fs::path root = argc > 1 ? fs::path(argv[1]) : fs::path(SERVELAB_SOURCE_DIR) / "fuzz" / "corpus";
  int failures = 0;
  for (const auto& target : servelab::fuzz::kTargets) {
    fs::path dir = root / target.name;
    int inputs = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      target.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++inputs;
    }
    std::printf("%-18s %d input(s)\n", target.name, inputs);
    if (inputs == 0) {
      std::fprintf(stderr, "no seed inputs in %s\n", dir.string().c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
