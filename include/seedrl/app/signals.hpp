#pragma once
/// \file
/// Clean stops on SIGINT and SIGTERM for seedrl programs: the first signal sets a flag that the
/// actor loop and the learner's progress loop watch; a second one, if the stop hangs, exits at
/// once with status 130. SIGPIPE is ignored, so that a vanished peer shows up as a write error.

#include <signal.h>

#include <atomic>
#include <cstdlib>

namespace seedrl::app {

namespace detail {
inline std::atomic<bool> stop_flag{false};
extern "C" inline void seedrl_app_on_stop_signal(int) {
  if (stop_flag.exchange(true))
    std::_Exit(130);
}
}  // namespace detail

/// The flag the handlers set; pass it to `actor::run` and poll it in long loops.
inline std::atomic<bool>& stop_requested() noexcept {
  return detail::stop_flag;
}

/// Installs the handlers. SA_RESTART restarts interrupted socket calls: an actor then finishes
/// its round trip and says goodbye instead of seeing its link fail.
inline void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = detail::seedrl_app_on_stop_signal;
  sa.sa_flags = SA_RESTART;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace seedrl::app
