#pragma once
// Polling a condition that another thread makes true, for the tests of threaded parts.
#include <chrono>
#include <functional>
#include <thread>

namespace seedrl_test {

/// Whether `condition` holds within `limit`, checked every millisecond (and once at the end).
inline bool wait_for(const std::function<bool()>& condition,
                     std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (condition())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

}  // namespace seedrl_test
