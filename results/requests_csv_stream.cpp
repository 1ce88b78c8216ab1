// RequestsCsvStream: requests.csv written while a run goes on. The caller fills one chunk of
// records while a writer thread formats and writes the previous one (two chunks in memory).
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "results/records.h"
#include "results/row_format.h"

namespace servelab::results {

namespace {
constexpr size_t kChunk = 8192;  // records per hand-off (512 KiB)
}  // namespace

// Threading: `filling` belongs to the caller; `handed`, `has_chunk`, `closing` and `error`
// are guarded by `mu`; the writer thread owns the file while it runs.
struct RequestsCsvStream::Writer {
  std::unique_ptr<FILE, detail::FileCloser> file;
  std::string path;
  std::vector<std::string> names;
  detail::Columns columns;  // the optional columns
  std::vector<RequestRecord> filling, handed;
  std::mutex mu;
  std::condition_variable cv;
  bool has_chunk = false, closing = false;
  std::string error;
  std::thread thread;

  void run() {
    auto out = std::make_unique<detail::RowWriter>(file.get());
    out->text(detail::header(columns));
    out->ch('\n');
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return has_chunk || closing; });
      if (!has_chunk) break;
      lock.unlock();
      for (const RequestRecord& r : handed) detail::write_row(*out, r, names, columns);
      const bool failed = std::ferror(file.get());
      lock.lock();
      handed.clear();
      has_chunk = false;
      if (failed && error.empty()) error = "error writing " + path + ": " + std::strerror(errno);
      cv.notify_all();
    }
    lock.unlock();
    out.reset();  // flushes its buffer
  }

  // Waits for the writer to take the previous chunk, then hands it `filling`.
  void hand_off() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !has_chunk; });
    if (!error.empty()) throw std::runtime_error(error);
    filling.swap(handed);
    has_chunk = true;
    cv.notify_all();
  }
};

RequestsCsvStream::RequestsCsvStream(const std::string& path, std::vector<std::string> names,
                                     bool accuracy_column, bool deadline_column,
                                     bool backup_columns)
    : writer_(std::make_unique<Writer>()) {
  Writer& w = *writer_;
  w.file.reset(std::fopen(path.c_str(), "wb"));
  if (!w.file) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  w.path = path;
  w.names = std::move(names);
  w.columns = {deadline_column, accuracy_column, backup_columns};
  w.filling.reserve(kChunk);
  w.handed.reserve(kChunk);
  w.thread = std::thread([&w] { w.run(); });
}

RequestsCsvStream::~RequestsCsvStream() {
  try {
    close();
  } catch (const std::exception&) {
    // Documented: a destructor cannot report; close() does.
  }
}

void RequestsCsvStream::add(const RequestRecord& r) {
  Writer& w = *writer_;
  w.filling.push_back(r);
  if (w.filling.size() == kChunk) w.hand_off();
}

void RequestsCsvStream::close() {
  Writer& w = *writer_;
  if (!w.thread.joinable()) return;
  if (!w.filling.empty()) {
    try {
      w.hand_off();
    } catch (const std::exception&) {
      // The error is reported below, once the writer has stopped.
    }
  }
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.closing = true;
  }
  w.cv.notify_all();
  w.thread.join();
  const bool failed = std::ferror(w.file.get()) || std::fflush(w.file.get()) != 0;
  if (failed && w.error.empty()) w.error = "error writing " + w.path + ": " + std::strerror(errno);
  w.file.reset();
  if (!w.error.empty()) throw std::runtime_error(w.error);
}

}  // namespace servelab::results
