// One thread that runs tasks in FIFO order. The engine uses one per worker (the controller
// gives each batch a WorkerId, so a worker's queue holds at most one batch) and one for the
// loader (loads and evictions in the order the controller emitted them).
// Thread-safety: post() and stop() may be called from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace servelab::runtime {

class TaskThread {
 public:
  // `init` runs first on the new thread (e.g. per-thread LibTorch settings); may be empty.
  explicit TaskThread(std::function<void()> init = {});
  ~TaskThread();  // stop()
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Queues a task; ignored after stop(). Tasks must not throw (exceptions are swallowed).
  void post(std::function<void()> task);
  // Finishes the running task, drops queued ones, joins. Idempotent; not from the thread itself.
  void stop();
  size_t queued() const;

 private:
  void main(std::function<void()> init);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace servelab::runtime
