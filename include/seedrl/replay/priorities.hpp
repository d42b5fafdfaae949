#pragma once
/// \file
/// R2D2's priorities and importance weights (Kapturowski et al. 2019; Schaul et al. 2016):
/// a sequence's priority mixes the largest and the mean absolute TD error over its steps,
///   p = eta * max_t |delta_t| + (1 - eta) * mean_t |delta_t|   (eta = 0.9),
/// a sequence is drawn with probability P(i) = p_i^alpha / sum_j p_j^alpha (the sum tree holds
/// p^alpha), and its loss is weighted by w_i = (N P(i))^-beta / max_j w_j over the batch, so that
/// the sampling's bias is corrected and the largest weight is 1.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace seedrl::replay {

/// R2D2's priority of one sequence from its steps' TD errors. Throws std::invalid_argument for
/// an empty sequence, eta outside [0, 1], or a TD error that is not finite (naming the step):
/// a NaN priority would poison the sum tree.
template <class S>
double sequence_priority(std::span<const S> td_errors, double eta = 0.9) {
  if (td_errors.empty())
    throw std::invalid_argument("seedrl::replay::sequence_priority: no TD errors");
  if (!(eta >= 0.0 && eta <= 1.0))
    throw std::invalid_argument("seedrl::replay::sequence_priority: eta must be in [0, 1], got " +
                                std::to_string(eta));
  double largest = 0.0, sum = 0.0;
  for (std::size_t t = 0; t < td_errors.size(); ++t) {
    const double a = std::abs(static_cast<double>(td_errors[t]));
    if (!std::isfinite(a))
      throw std::invalid_argument("seedrl::replay::sequence_priority: TD error of step " +
                                  std::to_string(t) + " is " +
                                  std::to_string(static_cast<double>(td_errors[t])));
    largest = std::max(largest, a);
    sum += a;
  }
  return eta * largest + (1.0 - eta) * sum / static_cast<double>(td_errors.size());
}

/// The importance weights of a sampled batch: `probabilities` are the sampled items' P(i)
/// (their tree priority over the tree's total), `stored` the items the replay holds (N).
/// Returns w_i = (N P(i))^-beta divided by the batch's largest. Throws std::invalid_argument for
/// a probability outside (0, 1], N = 0 or beta < 0.
inline std::vector<double> importance_weights(std::span<const double> probabilities,
                                              std::size_t stored, double beta = 0.6) {
  if (stored == 0 || !(beta >= 0.0))
    throw std::invalid_argument("seedrl::replay::importance_weights: needs N > 0 and beta >= 0");
  std::vector<double> w(probabilities.size());
  double largest = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double p = probabilities[i];
    if (!(p > 0.0 && p <= 1.0))
      throw std::invalid_argument("seedrl::replay::importance_weights: item " + std::to_string(i) +
                                  " has probability " + std::to_string(p));
    w[i] = std::pow(static_cast<double>(stored) * p, -beta);
    largest = std::max(largest, w[i]);
  }
  for (double& x : w)
    x /= largest;
  return w;
}

}  // namespace seedrl::replay
