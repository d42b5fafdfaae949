#pragma once
/// \file
/// `worker_pool`: W lanes, lane 0 on the calling thread and lanes 1..W-1 on persistent threads,
/// that run one job at a time (`run(f)` calls f(w) for every lane w and returns when all are
/// done). The hand-off is one mutex and two condition variables, as in cpu_inference_engine:
/// no thread is created and nothing is allocated per job.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace seedrl::detail {

/// See the file comment. Not movable: the threads hold `this`.
class worker_pool {
 public:
  explicit worker_pool(std::size_t lanes) : lanes_(lanes) {
    if (lanes == 0)
      throw std::invalid_argument("seedrl::detail::worker_pool: 0 lanes; at least 1");
    threads_.reserve(lanes - 1);
    for (std::size_t w = 1; w < lanes; ++w)
      threads_.emplace_back([this, w] { work(w); });
  }

  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  ~worker_pool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    start_.notify_all();
    for (auto& t : threads_)
      t.join();
  }

  std::size_t lanes() const noexcept { return lanes_; }

  /// Calls f(w) for w in [0, lanes()), lane 0 here; rethrows the first exception (this
  /// thread's first) once every lane has finished.
  template <class F>
  void run(F&& f) {
    if (lanes_ == 1) {
      f(std::size_t{0});
      return;
    }
    {
      std::lock_guard lock(mutex_);
      job_ = &f;
      call_ = [](void* job, std::size_t w) { (*static_cast<std::remove_reference_t<F>*>(job))(w); };
      ++generation_;
      pending_ = lanes_ - 1;
      error_ = nullptr;
    }
    start_.notify_all();
    std::exception_ptr mine;
    try {
      f(std::size_t{0});
    } catch (...) {
      mine = std::current_exception();
    }
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    if (mine)
      std::rethrow_exception(mine);
    if (error_)
      std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void work(std::size_t w) {
    std::uint64_t seen = 0;
    for (;;) {
      void* job = nullptr;
      void (*call)(void*, std::size_t) = nullptr;
      {
        std::unique_lock lock(mutex_);
        start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_)
          return;
        seen = generation_;
        job = job_;
        call = call_;
      }
      std::exception_ptr e;
      try {
        call(job, w);
      } catch (...) {
        e = std::current_exception();
      }
      std::lock_guard lock(mutex_);
      if (e && !error_)
        error_ = e;
      if (--pending_ == 0)
        done_.notify_one();
    }
  }

  std::size_t lanes_;
  std::mutex mutex_;  // guards everything below; the job is published through it
  std::condition_variable start_, done_;
  void* job_ = nullptr;
  void (*call_)(void*, std::size_t) = nullptr;
  std::uint64_t generation_ = 0;
  std::size_t pending_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace seedrl::detail
