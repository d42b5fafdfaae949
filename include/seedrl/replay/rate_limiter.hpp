#pragma once
/// \file
/// `rate_limiter`: keeps a replay's ratio of samples trained to sequences inserted near a target,
/// both ways: insertion waits when actors outrun training, sampling waits when training
/// outruns actors. It is arithmetic only; the replay (seedrl/replay/sequence_replay.hpp) asks it
/// under its lock and waits on its condition variable.
///
/// With r samples per insert, m the minimum size and I, S the sequences inserted and sampled,
/// the samples owed are e = (I - m) r - S (inserts up to the minimum size owe nothing: the
/// replay fills first). Inserting is allowed while e + r <= tolerance and sampling n while
/// e - n >= -tolerance (and at least max(m, n) sequences are stored). Both wait at once only if
/// n - tolerance > tolerance - r, so a tolerance below (n + r) / 2 could deadlock and is refused
/// at construction. r = 0 turns the limit off: inserts never wait, sampling waits only for the
/// minimum size.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "seedrl/replay/replay_config.hpp"

namespace seedrl::replay {

/// See the file comment.
class rate_limiter {
 public:
  /// For samples of `batch` sequences. Throws std::invalid_argument for a negative or
  /// non-finite ratio or tolerance, min_size 0 or batch 0, or a tolerance that could deadlock.
  rate_limiter(replay_ratio ratio, std::size_t batch) : ratio_(ratio), batch_(batch) {
    const auto fail = [](const std::string& what) {
      throw std::invalid_argument("seedrl::replay::rate_limiter: " + what);
    };
    const double r = ratio_.samples_per_insert;
    if (!(r >= 0.0) || !std::isfinite(r))
      fail("samples_per_insert must be finite and >= 0, got " + std::to_string(r));
    if (!(ratio_.tolerance >= 0.0) || !std::isfinite(ratio_.tolerance))
      fail("tolerance must be finite and >= 0, got " + std::to_string(ratio_.tolerance));
    if (ratio_.min_size == 0 || batch_ == 0)
      fail("min_size and the batch must be at least 1");
    const auto n = static_cast<double>(batch_);
    if (ratio_.tolerance == 0.0)
      ratio_.tolerance = n + r;
    if (r > 0.0 && ratio_.tolerance < (n + r) / 2.0)
      fail("a tolerance of " + std::to_string(ratio_.tolerance) + " samples could stop both " +
           "insertion and sampling for good with batches of " + std::to_string(batch_) + " at " +
           std::to_string(r) + " samples per insert; it must be at least (batch + ratio) / 2 = " +
           std::to_string((n + r) / 2.0));
  }

  const replay_ratio& ratio() const noexcept { return ratio_; }

  /// Whether one more sequence may be inserted now.
  bool can_insert() const noexcept {
    return ratio_.samples_per_insert == 0.0 || inserted_ < ratio_.min_size ||
           owed() + ratio_.samples_per_insert <= ratio_.tolerance;
  }

  /// Whether a batch may be sampled from `stored` sequences now.
  bool can_sample(std::size_t stored) const noexcept {
    if (stored < ratio_.min_size || stored < batch_)
      return false;
    return ratio_.samples_per_insert == 0.0 ||
           owed() - static_cast<double>(batch_) >= -ratio_.tolerance;
  }

  void inserted() noexcept { ++inserted_; }
  void sampled() noexcept { sampled_ += batch_; }

  /// Counters, also what a restored replay continues from.
  std::uint64_t inserts() const noexcept { return inserted_; }
  std::uint64_t samples() const noexcept { return sampled_; }
  void restore(std::uint64_t inserts, std::uint64_t samples) noexcept {
    inserted_ = inserts;
    sampled_ = samples;
  }

 private:
  /// e of the file comment.
  double owed() const noexcept {
    const double counted =
        inserted_ > ratio_.min_size ? static_cast<double>(inserted_ - ratio_.min_size) : 0.0;
    return counted * ratio_.samples_per_insert - static_cast<double>(sampled_);
  }

  replay_ratio ratio_;
  std::size_t batch_;
  std::uint64_t inserted_ = 0;
  std::uint64_t sampled_ = 0;
};

}  // namespace seedrl::replay
