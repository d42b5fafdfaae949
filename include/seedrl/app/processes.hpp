#pragma once
/// \file
/// Child processes for local mode: actor processes started with `spawn`, stopped together by
/// `child_processes` (SIGTERM, then wait), and `capture` for a command's output (e.g. asking
/// the Python actor for an environment's spec).

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace seedrl::app {

/// Starts `args` (looked up on PATH; "/proc/self/exe" re-runs this program) and returns its
/// pid. A command that cannot start exits 127 in the child, saying so on stderr. The child gets
/// SIGTERM when the thread that started it ends (PR_SET_PDEATHSIG; programs call this from
/// their main thread), so that actors do not outlive a learner that was killed (SIGKILL
/// leaves it no time to stop them; under mpirun, a rank that dies takes the others down so).
inline pid_t spawn(const std::vector<std::string>& args) {
  // Built before fork: only exec runs in the child of a multi-threaded process.
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)  // the parent died before prctl took effect
      std::_Exit(1);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot start %s\n", argv[0]);
    std::_Exit(127);
  }
  return pid;
}

/// Runs `args` and returns its stdout, or nullopt when it cannot start or exits non-zero.
inline std::optional<std::string> capture(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0)
    return std::nullopt;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execvp(argv[0], argv.data());
    std::_Exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return std::nullopt;
  return out;
}

/// The actor processes of a local run. `terminate()` sends each SIGTERM (a clean stop: the
/// actor says goodbye); `wait()` reaps them. The destructor does both, so none outlives us.
class child_processes {
 public:
  child_processes() = default;
  child_processes(const child_processes&) = delete;
  child_processes& operator=(const child_processes&) = delete;
  ~child_processes() {
    terminate();
    wait();
  }

  void add(pid_t pid) { pids_.push_back(pid); }
  bool empty() const noexcept { return pids_.empty(); }
  std::size_t size() const noexcept { return pids_.size(); }
  const std::vector<pid_t>& pids() const noexcept { return pids_; }

  void terminate() {
    for (pid_t pid : pids_)
      ::kill(pid, SIGTERM);
  }
  void wait() {
    for (pid_t pid : pids_)
      ::waitpid(pid, nullptr, 0);
    pids_.clear();
  }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace seedrl::app
