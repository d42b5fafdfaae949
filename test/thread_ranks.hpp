#pragma once
// Learner ranks as threads of one test process: a gradient_reducer whose collectives wait for
// all K ranks like MPI's do, so that the learner's rank logic (agreement, state checks, stop)
// runs in unit tests and under the sanitizers, which build without MPI. Test support only: a
// real run's ranks meet over MPI (seedrl/distributed/mpi_reducer.hpp).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/distributed/gradient_reducer.hpp"

namespace seedrl_test {

/// Where K thread ranks meet: each collective is one exchange of a vector per rank.
class thread_rank_hub {
 public:
  explicit thread_rank_hub(int ranks) : ranks_(ranks), slots_(static_cast<std::size_t>(ranks)) {}

  int ranks() const noexcept { return ranks_; }

  /// Every rank's `mine`, by rank, once all K ranks called it; throws after `limit` so that a
  /// test whose ranks disagree fails instead of hanging.
  std::vector<std::vector<double>> exchange(int rank, std::vector<double> mine,
                                            std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock lock(mutex_);
    const auto late = [&] {
      return std::runtime_error("thread_rank_hub: rank " + std::to_string(rank) +
                                " waited too long for the other ranks");
    };
    if (!changed_.wait_for(lock, limit, [&] { return !reading_; }))
      throw late();
    slots_[static_cast<std::size_t>(rank)] = std::move(mine);
    if (++arrived_ == ranks_) {
      result_ = slots_;
      reading_ = true;
      readers_ = 0;
      ++round_;
      changed_.notify_all();
    } else {
      const std::uint64_t round = round_;
      if (!changed_.wait_for(lock, limit, [&] { return round_ != round; }))
        throw late();
    }
    std::vector<std::vector<double>> out = result_;
    if (++readers_ == ranks_) {
      reading_ = false;
      arrived_ = 0;
      changed_.notify_all();
    }
    return out;
  }

 private:
  int ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<double>> slots_, result_;
  int arrived_ = 0, readers_ = 0;
  bool reading_ = false;
  std::uint64_t round_ = 0;
};

/// One rank of a thread_rank_hub. Means sum in rank order, so every rank gets the same bits.
class thread_rank final : public seedrl::distributed::gradient_reducer {
 public:
  thread_rank(std::shared_ptr<thread_rank_hub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}

  int rank() const override { return rank_; }
  int ranks() const override { return hub_->ranks(); }
  void mean(std::span<float> v) override { mean_of(v); }
  void mean(std::span<double> v) override { mean_of(v); }
  std::vector<std::uint64_t> gather(std::uint64_t value) override {
    double bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    std::vector<std::uint64_t> all;
    for (const auto& r : hub_->exchange(rank_, {bits})) {
      std::uint64_t v = 0;
      std::memcpy(&v, r.data(), sizeof v);
      all.push_back(v);
    }
    return all;
  }
  std::vector<double> gather(std::span<const double> values) override {
    std::vector<double> all;
    for (const auto& r : hub_->exchange(rank_, {values.begin(), values.end()}))
      all.insert(all.end(), r.begin(), r.end());
    return all;
  }
  [[noreturn]] void abort_all(int code) noexcept override { std::_Exit(code); }
  std::string describe() const override {
    return "thread ranks, " + std::to_string(hub_->ranks()) + " ranks";
  }

 private:
  template <class T>
  void mean_of(std::span<T> v) {
    const auto all = hub_->exchange(rank_, {v.begin(), v.end()});
    for (std::size_t i = 0; i < v.size(); ++i) {
      double sum = 0.0;
      for (const auto& r : all)
        sum += r[i];
      v[i] = static_cast<T>(sum / static_cast<double>(all.size()));
    }
  }

  std::shared_ptr<thread_rank_hub> hub_;
  int rank_;
};

}  // namespace seedrl_test
