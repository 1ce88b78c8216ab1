#include "engine/runtime/task_thread.h"

namespace servelab::runtime {

TaskThread::TaskThread(std::function<void()> init)
    : thread_([this, init = std::move(init)]() mutable { main(std::move(init)); }) {}

TaskThread::~TaskThread() { stop(); }

void TaskThread::post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void TaskThread::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    tasks_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t TaskThread::queued() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

void TaskThread::main(std::function<void()> init) {
  if (init) init();
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (stopping_) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    try {
      task();
    } catch (...) {
    }
    task = nullptr;  // destroy captures outside the lock
    lock.lock();
  }
}

}  // namespace servelab::runtime
