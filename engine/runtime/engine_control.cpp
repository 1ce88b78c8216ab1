// The control lock (see engine_impl.h): who runs the controller's events, and the control
// thread that runs its timers.
//
// Before, every event went through the control thread: an HTTP thread posted its arrival and
// the control thread woke up to queue it, one thread hand-off per request. Now the posting
// thread runs the event itself when the lock is free; the control thread wakes for the
// controller's timers, for events that met a taken lock, and for answers that must reach an
// engine thread.
#include "engine/runtime/engine_impl.h"

namespace servelab::runtime {
namespace {

thread_local const void* t_holding = nullptr;       // the Impl whose ctl_mu this thread holds
thread_local const void* t_engine_thread = nullptr;  // the Impl this thread belongs to

}  // namespace

HoldControl::HoldControl(const void* impl) : previous_(t_holding) { t_holding = impl; }
HoldControl::~HoldControl() { t_holding = previous_; }

bool Engine::Impl::holds_control() const { return t_holding == this; }
bool Engine::Impl::is_engine_thread() const { return t_engine_thread == this; }
void Engine::Impl::mark_engine_thread() const { t_engine_thread = this; }

void Engine::Impl::post(std::function<void(Time)> f) {
  {
    std::lock_guard lock(inbox_mu);
    if (stopping) return;
    inbox.push_back(std::move(f));
  }
  if (holds_control()) return;  // from inside an event: this thread runs it next
  std::unique_lock lock(ctl_mu, std::try_to_lock);
  if (!lock.owns_lock()) {
    inbox_cv.notify_one();  // the holder may be leaving: the control thread makes sure
    return;
  }
  HoldControl hold(this);
  run_held();
}

void Engine::Impl::run_held() {
  for (;;) {
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
      ctl->on_timer(now, out);
      carry_out();
    }
    if (publish_held()) return;
  }
}

bool Engine::Impl::publish_held() {
  const Time next = ctl->next_wakeup();
  bool wake = false, done = true;
  {
    std::lock_guard lock(inbox_mu);
    for (const RequestOutcome& o : held_answers)
      inbox.push_back([this, o](Time) { finish(o); });
    held_answers.clear();
    if (!inbox.empty()) {
      done = !is_engine_thread();  // an engine thread goes on; a caller's thread hands over
      wake = done;
    }
    if (next < wake_at) wake = true;
    wake_at = next;
  }
  if (wake) inbox_cv.notify_one();
  return done;
}

void Engine::Impl::control_main() {
  mark_engine_thread();
  for (;;) {
    {
      std::lock_guard lock(ctl_mu);
      HoldControl hold(this);
      run_held();
    }
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
