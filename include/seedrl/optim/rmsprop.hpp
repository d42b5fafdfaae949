#pragma once
/// \file
/// RMSProp exactly as `torch.optim.RMSprop` computes it (centered = False, weight_decay = 0),
/// which is also what TorchBeast's IMPALA trains with. For each step, with gradient g and the
/// scheduled learning rate lr:
///   v   = decay*v + (1-decay)*g^2                (v starts at 0)
///   avg = sqrt(v) + eps                          (eps outside the root)
///   momentum > 0:  buf = momentum*buf + g/avg;  p -= lr*buf
///   momentum = 0:  p -= lr*g/avg
///
/// This is NOT the RMSProp the original IMPALA (DeepMind's scalable_agent) trained with, TF1's
/// `tf.train.RMSPropOptimizer`, which puts eps inside the root, sqrt(v + eps), initialises the
/// mean square to 1 rather than 0, and applies lr inside the momentum buffer
/// (buf = momentum*buf + lr*g/sqrt(v + eps); p -= buf). Starting from v = 1 makes TF's first
/// updates far smaller than PyTorch's, so the two need different eps and learning rates for the
/// same behaviour. We follow PyTorch because our reference trajectories and TorchBeast's
/// hyperparameters (eps 0.01) come from it.
///
/// The per-element arithmetic is `seedrl::detail::rmsprop_update` /
/// `rmsprop_momentum_update` (seedrl/detail/optimizer_math.hpp), shared with CUDA. State is the
/// step count, v and, when momentum > 0, the momentum buffer; see `save_state`.

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/detail/optimizer_math.hpp"
#include "seedrl/optim/lr_schedule.hpp"
#include "seedrl/optim/optimizer.hpp"

namespace seedrl {

/// RMSProp's hyperparameters; defaults are TorchBeast's (lr 0.00048, alpha 0.99, momentum 0,
/// eps 0.01). Not a template, for the reason given at `adam_config`.
struct rmsprop_config {
  double learning_rate = 0.00048;  ///< lr of step 0; see `lr_decay_steps`
  double decay = 0.99;             ///< PyTorch's alpha: mean-square decay, in [0, 1]
  double momentum = 0.0;           ///< >= 0; 0 keeps no momentum buffer
  double epsilon = 0.01;           ///< >= 0, added to sqrt(v)
  /// None: constant learning rate. n: decays linearly to 0 over n steps (`seedrl::lr_schedule`).
  /// TorchBeast decays over frames: use total_frames / (T * B).
  std::optional<std::int64_t> lr_decay_steps;

  /// The learning-rate schedule this config describes.
  [[nodiscard]] lr_schedule schedule() const { return {learning_rate, lr_decay_steps}; }
};

/// RMSProp over a flat buffer of `S` (float or double); models `seedrl::Optimizer`. See the
/// file comment for the update rule and how it differs from TensorFlow's.
template <std::floating_point S = float>
class rmsprop {
  static_assert(detail::serialisable_scalar<S>,
                "seedrl: rmsprop supports float and double parameters; convert other types first");

 public:
  using scalar_type = S;               ///< the parameter and gradient type
  using config_type = rmsprop_config;  ///< the hyperparameters

  /// Checks `config`; throws `std::invalid_argument` naming the bad field.
  explicit rmsprop(const rmsprop_config& config = {})
      : config_(config), schedule_(config.schedule()) {
    schedule_.validate();
    if (!(config.decay >= 0.0 && config.decay <= 1.0)) {
      throw std::invalid_argument("seedrl: rmsprop decay (alpha) must be in [0, 1], got " +
                                  std::to_string(config.decay));
    }
    if (!(std::isfinite(config.momentum) && config.momentum >= 0.0)) {
      throw std::invalid_argument("seedrl: rmsprop momentum must be finite and >= 0, got " +
                                  std::to_string(config.momentum));
    }
    if (!(std::isfinite(config.epsilon) && config.epsilon >= 0.0)) {
      throw std::invalid_argument("seedrl: rmsprop epsilon must be finite and >= 0, got " +
                                  std::to_string(config.epsilon));
    }
  }

  /// One update of `params` from `grads`. The first call fixes the number of elements; a later
  /// call with another size, or `params` and `grads` of different sizes, throws
  /// `std::invalid_argument` and changes nothing.
  void step(std::span<S> params, std::span<const S> grads) {
    if (params.size() != grads.size()) {
      throw std::invalid_argument("seedrl: rmsprop::step got " + std::to_string(params.size()) +
                                  " parameters but " + std::to_string(grads.size()) +
                                  " gradients; they must match");
    }
    if (step_count_ == 0) {
      std::vector<S> v(params.size(), S(0));
      std::vector<S> buf(has_momentum() ? params.size() : 0, S(0));
      v_ = std::move(v);
      buf_ = std::move(buf);
    } else if (params.size() != v_.size()) {
      throw std::invalid_argument(
          "seedrl: rmsprop::step got " + std::to_string(params.size()) +
          " parameters but its state was sized for " + std::to_string(v_.size()) +
          " by the first step (or load_state); use one optimizer per parameter buffer");
    }
    const auto k = detail::make_rmsprop_coefficients<S>(config_.decay, config_.momentum,
                                                        config_.epsilon, schedule_.at(step_count_));
    if (has_momentum()) {
      for (std::size_t i = 0; i < params.size(); ++i) {
        detail::rmsprop_momentum_update(k, params[i], v_[i], buf_[i], grads[i]);
      }
    } else {
      for (std::size_t i = 0; i < params.size(); ++i) {
        detail::rmsprop_update(k, params[i], v_[i], grads[i]);
      }
    }
    ++step_count_;
  }

  /// Updates done so far; also the position in the learning-rate schedule.
  [[nodiscard]] std::int64_t step_count() const noexcept { return step_count_; }

  /// The learning rate the next `step` will use.
  [[nodiscard]] double learning_rate() const { return schedule_.at(step_count_); }

  /// Elements in the state (0 until the first step).
  [[nodiscard]] std::size_t size() const noexcept { return v_.size(); }

  /// The hyperparameters.
  [[nodiscard]] const rmsprop_config& config() const noexcept { return config_; }

  /// The running mean of g^2 (PyTorch's square_avg).
  [[nodiscard]] std::span<const S> mean_square() const noexcept { return v_; }

  /// The momentum buffer; empty when momentum is 0.
  [[nodiscard]] std::span<const S> momentum_buffer() const noexcept { return buf_; }

  /// Step count, v and (momentum > 0 only) the momentum buffer, in the format of
  /// seedrl/detail/optimizer_math.hpp. The config is not included: a resumed run passes its own,
  /// but it must agree on whether momentum is used.
  [[nodiscard]] std::vector<std::byte> save_state() const {
    if (has_momentum()) {
      const std::span<const S> arrays[] = {v_, buf_};
      return detail::save_optimizer_state<S>(detail::optimizer_kind::rmsprop, step_count_, arrays);
    }
    const std::span<const S> arrays[] = {v_};
    return detail::save_optimizer_state<S>(detail::optimizer_kind::rmsprop, step_count_, arrays);
  }

  /// Restores what `save_state` wrote, including the element count. Throws
  /// `std::invalid_argument` saying what is wrong (not an optimizer state, another optimizer,
  /// another scalar type, saved with(out) momentum while this one is configured otherwise,
  /// another format version, truncated, trailing bytes, corrupted) and then changes nothing.
  void load_state(std::span<const std::byte> state) {
    auto parsed = detail::parse_optimizer_state<S>(
        state, detail::optimizer_kind::rmsprop, has_momentum() ? 2 : 1,
        has_momentum() ? "mean square and momentum buffer, since momentum > 0"
                       : "the mean square only, since momentum = 0");
    v_ = std::move(parsed.arrays[0]);
    buf_ = has_momentum() ? std::move(parsed.arrays[1]) : std::vector<S>{};
    step_count_ = parsed.step_count;
  }

 private:
  [[nodiscard]] bool has_momentum() const noexcept { return config_.momentum > 0.0; }

  rmsprop_config config_;
  lr_schedule schedule_;
  std::int64_t step_count_ = 0;
  std::vector<S> v_;    ///< mean square
  std::vector<S> buf_;  ///< momentum buffer (empty without momentum)
};

static_assert(Optimizer<rmsprop<float>>);
static_assert(Optimizer<rmsprop<double>>);

}  // namespace seedrl
