// The anchor of scripts/bench-server's image path: OpenCV decoding one image file in a loop on
// T threads (the server's IO thread count: the server decodes on its IO threads), as fast as
// it can, for S seconds. Prints `decodes_per_s=X`.
//   opencv_decode_loop --image FILE [--threads T] [--seconds S]
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  std::string file;
  int threads = 2;
  double seconds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--image") file = v;
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--seconds") seconds = std::stod(v);
    else { std::fprintf(stderr, "opencv_decode_loop: unknown option %s\n", k.c_str()); return 2; }
  }
  std::ifstream in(file, std::ios::binary);
  const std::vector<uchar> bytes((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
  if (bytes.empty() || threads < 1) {
    std::fprintf(stderr, "usage: opencv_decode_loop --image FILE [--threads T] [--seconds S]\n");
    return 2;
  }
  cv::setNumThreads(0);  // no OpenCV-internal threads: one decode per thread, like the server
  if (cv::imdecode(bytes, cv::IMREAD_COLOR).empty()) {
    std::fprintf(stderr, "opencv_decode_loop: cannot decode %s\n", file.c_str());
    return 1;
  }
  std::atomic<long> decodes{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      long n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        cv::Mat m = cv::imdecode(bytes, cv::IMREAD_COLOR);
        if (m.empty()) std::abort();
        ++n;
      }
      decodes += n;
    });
  }
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : pool) t.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("decodes_per_s=%.1f threads=%d image=%s bytes=%zu\n", decodes / elapsed, threads,
              file.c_str(), bytes.size());
  return 0;
}
