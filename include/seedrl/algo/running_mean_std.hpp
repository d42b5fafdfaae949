#pragma once
/// \file
/// `running_mean_std`: per-element mean and (population) variance of every row seen so far,
/// updated a batch of rows at a time with the parallel merge of Chan, Golub and LeVeque: the
/// batch's own mean and variance (two passes over it) are merged into the running ones, which
/// is exact in real arithmetic and stable in floating point, unlike a running sum of squares.
/// Kept in double whatever the rows' type. `normalize` maps x to
/// clip((x - mean) / sqrt(var + epsilon), -clip, clip), as Stable-Baselines3's VecNormalize
/// does for observations. Not thread-safe.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace seedrl {

/// See the file comment.
class running_mean_std {
 public:
  /// Statistics of rows of `size` elements; before any update, mean 0 and variance 1 (so that
  /// normalize leaves values as they are, clipped).
  explicit running_mean_std(std::size_t size = 0) : mean_(size, 0.0), var_(size, 1.0) {}

  std::size_t size() const noexcept { return mean_.size(); }
  /// Rows merged so far (a double, as a checkpoint stores it).
  double count() const noexcept { return count_; }
  std::span<const double> mean() const noexcept { return mean_; }
  std::span<const double> var() const noexcept { return var_; }

  /// Merges `rows` rows of size() elements, row-major in `batch`.
  template <std::floating_point S>
  void update(std::span<const S> batch, std::size_t rows) {
    if (batch.size() != rows * size())
      throw std::invalid_argument(
          "seedrl::running_mean_std::update: " + std::to_string(batch.size()) + " values are not " +
          std::to_string(rows) + " rows of " + std::to_string(size()));
    if (rows == 0)
      return;
    const std::size_t n = size();
    const double nb = static_cast<double>(rows), total = count_ + nb;
    for (std::size_t i = 0; i < n; ++i) {
      double m = 0.0;
      for (std::size_t r = 0; r < rows; ++r)
        m += static_cast<double>(batch[r * n + i]);
      m /= nb;
      double m2 = 0.0;
      for (std::size_t r = 0; r < rows; ++r) {
        const double d = static_cast<double>(batch[r * n + i]) - m;
        m2 += d * d;
      }
      // Chan et al.: M2 = M2_a + M2_b + delta^2 n_a n_b / n.
      const double delta = m - mean_[i];
      mean_[i] += delta * nb / total;
      var_[i] = (var_[i] * count_ + m2 + delta * delta * count_ * nb / total) / total;
    }
    count_ = total;
  }

  /// Merges statistics of other rows (`other`, of the same size), as if their rows had been
  /// updated here: Chan et al.'s merge, as `update` does with a batch's own statistics.
  void merge(const running_mean_std& other) {
    if (other.size() != size())
      throw std::invalid_argument("seedrl::running_mean_std::merge: statistics of " +
                                  std::to_string(other.size()) + " elements into " +
                                  std::to_string(size()));
    if (other.count_ == 0.0)
      return;
    const double total = count_ + other.count_;
    for (std::size_t i = 0; i < size(); ++i) {
      const double delta = other.mean_[i] - mean_[i];
      mean_[i] += delta * other.count_ / total;
      var_[i] = (var_[i] * count_ + other.var_[i] * other.count_ +
                 delta * delta * count_ * other.count_ / total) /
                total;
    }
    count_ = total;
  }

  /// Normalizes `rows` rows in place: clip((x - mean) / sqrt(var + epsilon), -clip, clip).
  template <std::floating_point S>
  void normalize(std::span<S> x, std::size_t rows, double clip, double epsilon) const {
    const std::size_t n = size();
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < n; ++i) {
        const double z =
            (static_cast<double>(x[r * n + i]) - mean_[i]) / std::sqrt(var_[i] + epsilon);
        x[r * n + i] = static_cast<S>(std::clamp(z, -clip, clip));
      }
  }

  /// Replaces the statistics (e.g. from a checkpoint). Throws std::invalid_argument, changing
  /// nothing, when the sizes differ from size(), the count is negative or not finite, or a
  /// variance is negative.
  void assign(double count, std::span<const double> mean, std::span<const double> var) {
    if (mean.size() != size() || var.size() != size())
      throw std::invalid_argument(
          "seedrl::running_mean_std: statistics of " + std::to_string(mean.size()) + " and " +
          std::to_string(var.size()) + " elements for rows of " + std::to_string(size()));
    if (!(count >= 0.0) || !std::isfinite(count))
      throw std::invalid_argument("seedrl::running_mean_std: count " + std::to_string(count) +
                                  " is not a finite count");
    for (std::size_t i = 0; i < size(); ++i)
      if (!std::isfinite(mean[i]) || !(var[i] >= 0.0) || !std::isfinite(var[i]))
        throw std::invalid_argument("seedrl::running_mean_std: element " + std::to_string(i) +
                                    " has mean " + std::to_string(mean[i]) + " and variance " +
                                    std::to_string(var[i]));
    count_ = count;
    std::copy(mean.begin(), mean.end(), mean_.begin());
    std::copy(var.begin(), var.end(), var_.begin());
  }

 private:
  double count_ = 0.0;
  std::vector<double> mean_, var_;
};

}  // namespace seedrl
