// A watchdog for tests of inputs that once never finished (config bombs): runs a call on a
// thread of its own and gives the message of what it threw, "(no error)" when it returned,
// or "(did not finish)" when it ran past `limit`. The limit only keeps a regression from
// hanging the suite: tests assert the message, never the time. A call that does not finish
// is left running on its detached thread until the process ends.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace servelab::testutil {

inline std::string error_within(std::function<void()> call,
                                std::chrono::seconds limit = std::chrono::seconds(60)) {
  auto done = std::make_shared<std::promise<std::string>>();
  std::future<std::string> message = done->get_future();
  std::thread([call = std::move(call), done]() mutable {
    std::string what;
    try {
      call();
      what = "(no error)";
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "(a non-standard exception)";
    }
    call = nullptr;  // its captures (a temporary folder) go before the caller hears
    done->set_value(what);
  }).detach();
  if (message.wait_for(limit) != std::future_status::ready) return "(did not finish)";
  return message.get();
}

}  // namespace servelab::testutil
