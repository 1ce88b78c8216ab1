// The control lock (see engine_impl.h): who runs the controller's events, and the control
// thread that runs its timers.
//
// The thread that brings an event (an HTTP thread's arrival, a worker's completion) runs it
// itself when the lock is free, so an arrival costs no thread hand-off; the control thread
// wakes for the controller's timers, for events that met a taken lock, and for answers that
// must reach an engine thread.
#include "engine/runtime/engine_impl.h"

namespace servelab::runtime {
namespace {

thread_local const void* t_holding = nullptr;       // the Impl whose ctl_mu this thread holds
thread_local const void* t_engine_thread = nullptr;  // the Impl this thread belongs to

// Marks this thread as the holder of `impl`'s ctl_mu for its lifetime (the lock itself is
// taken by the caller); nests across engines.
class HoldControl {
 public:
  explicit HoldControl(const void* impl) : previous_(t_holding) { t_holding = impl; }
  ~HoldControl() { t_holding = previous_; }
  HoldControl(const HoldControl&) = delete;
  HoldControl& operator=(const HoldControl&) = delete;

 private:
  const void* previous_;
};

}  // namespace

bool Engine::Impl::holds_control() const { return t_holding == this; }
bool Engine::Impl::is_engine_thread() const { return t_engine_thread == this; }
void Engine::Impl::mark_engine_thread() const { t_engine_thread = this; }

void Engine::Impl::post(std::function<void(Time)> f) {
  const bool nested = holds_control();  // from inside an event: runs after it, on this thread
  std::unique_lock<std::mutex> lock;
  if (!nested) lock = std::unique_lock(ctl_mu, std::try_to_lock);
  const bool engine_thread = is_engine_thread();
  bool run_own = false;
  {
    std::lock_guard inbox_lock(inbox_mu);
    if (stopping) return;
    // A caller's thread runs its own event only when nothing waits before it: events keep
    // their order, and answers held back may only be given on an engine thread.
    run_own = lock.owns_lock() && !engine_thread && held_answers.empty() && inbox.empty();
    if (!run_own) inbox.push_back(std::move(f));
  }
  if (nested) return;
  if (!lock.owns_lock() || (!run_own && !engine_thread)) {
    inbox_cv.notify_one();  // the control thread (or the holder, if it still looks) runs it
    return;
  }
  if (!run_own) {  // an engine thread: everything waiting, in order; then its answers
    std::vector<Answer> answers;
    {
      HoldControl hold(this);
      run_held();
      answers.swap(ready_answers);
    }
    lock.unlock();
    return give_answers(answers);
  }
  HoldControl hold(this);
  f(clock.now());
  carry_out();
  publish_held();
}

void Engine::Impl::run_held() {
  for (;;) {
    for (const RequestOutcome& o : std::exchange(held_answers, {})) finish(o);
    {
      std::lock_guard lock(inbox_mu);
      if (stopping) return;
      running.swap(inbox);
    }
    for (auto& f : running) {
      f(clock.now());
      carry_out();
    }
    running.clear();
    const Time now = clock.now();
    if (now >= ctl->next_wakeup()) {
      ctl->on_timer(now, actions.out());
      carry_out();
    }
    if (publish_held()) return;
  }
}

bool Engine::Impl::publish_held() {
  const Time next = ctl->next_wakeup();
  const bool engine_thread = is_engine_thread();
  bool wake = false, done = true;
  {
    std::lock_guard lock(inbox_mu);
    // Answers held back wait for an engine thread: an empty event in the inbox makes the
    // control thread come, and keeps callers from running events ahead of them.
    if (!held_answers.empty()) inbox.push_back([](Time) {});
    if (!inbox.empty()) {
      done = !engine_thread;  // an engine thread goes on; a caller's thread hands over
      wake = wake || done;
    }
    if (next < wake_at) wake = true;
    wake_at = next;
  }
  if (wake) inbox_cv.notify_one();
  return done;
}

void Engine::Impl::control_main() {
  mark_engine_thread();
  std::vector<Answer> answers;
  for (;;) {
    {
      std::lock_guard lock(ctl_mu);
      HoldControl hold(this);
      run_held();
      answers.swap(ready_answers);
    }
    give_answers(answers);
    std::unique_lock lock(inbox_mu);
    for (;;) {
      if (stopping) return;
      if (!inbox.empty()) break;
      const Time w = wake_at;
      if (w == kNever)
        inbox_cv.wait(lock);
      else if (clock.now() >= w)
        break;
      else
        inbox_cv.wait_until(lock, clock.at(w));
    }
  }
}

}  // namespace servelab::runtime
