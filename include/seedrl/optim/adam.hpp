#pragma once
/// \file
/// Adam (Kingma & Ba, 2015) exactly as `torch.optim.Adam` computes it (weight_decay = 0,
/// amsgrad = False), on one flat parameter buffer. For step t = 1, 2, ... with gradient g and
/// the scheduled learning rate lr:
///   m = beta1*m + (1-beta1)*g
///   v = beta2*v + (1-beta2)*g^2
///   p -= lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)
/// Note that eps is added after the second-moment bias correction (PyTorch), not before it as
/// in the "eps-hat" form of TF/optax; the two differ while t is small. beta1 = 0 (SEED RL's
/// DMLab setting) is supported: m is then the current gradient.
///
/// The per-element arithmetic is `seedrl::detail::adam_update` (seedrl/detail/optimizer_math.hpp),
/// which a CUDA kernel shares. State is the step count and the moments m and v; `save_state`
/// writes it in the format described there, `load_state` checks every field and a checksum.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
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

/// Adam's hyperparameters. Not a template: hyperparameters are doubles whatever the scalar type
/// of the parameters (as PyTorch's are Python floats), so one config serves `adam<float>` and
/// `adam<double>`. Defaults are SEED RL's (lr 0.00048) and PyTorch's (betas, eps).
struct adam_config {
  double learning_rate = 0.00048;  ///< lr of step 0; see `lr_decay_steps`
  double beta1 = 0.9;              ///< first-moment decay, in [0, 1); 0 disables momentum
  double beta2 = 0.999;            ///< second-moment decay, in [0, 1)
  double epsilon = 1e-8;           ///< >= 0, added to the bias-corrected sqrt(v)
  /// None: constant learning rate. n: decays linearly to 0 over n steps (`seedrl::lr_schedule`).
  std::optional<std::int64_t> lr_decay_steps;

  /// The learning-rate schedule this config describes.
  [[nodiscard]] lr_schedule schedule() const { return {learning_rate, lr_decay_steps}; }
};

/// Adam over a flat buffer of `S` (float or double); models `seedrl::Optimizer`. See the file
/// comment for the update rule.
template <std::floating_point S = float>
class adam {
  static_assert(detail::serialisable_scalar<S>,
                "seedrl: adam supports float and double parameters; convert other types first");

 public:
  using scalar_type = S;            ///< the parameter and gradient type
  using config_type = adam_config;  ///< the hyperparameters

  /// Checks `config`; throws `std::invalid_argument` naming the bad field.
  explicit adam(const adam_config& config = {}) : config_(config), schedule_(config.schedule()) {
    schedule_.validate();
    if (!(config.beta1 >= 0.0 && config.beta1 < 1.0)) {
      throw std::invalid_argument("seedrl: adam beta1 must be in [0, 1), got " +
                                  std::to_string(config.beta1));
    }
    if (!(config.beta2 >= 0.0 && config.beta2 < 1.0)) {
      throw std::invalid_argument("seedrl: adam beta2 must be in [0, 1), got " +
                                  std::to_string(config.beta2));
    }
    if (!(config.epsilon >= 0.0 && config.epsilon < std::numeric_limits<double>::infinity())) {
      throw std::invalid_argument("seedrl: adam epsilon must be finite and >= 0, got " +
                                  std::to_string(config.epsilon));
    }
  }

  /// One update of `params` from `grads`. The first call fixes the number of elements; a later
  /// call with another size, or `params` and `grads` of different sizes, throws
  /// `std::invalid_argument` and changes nothing.
  void step(std::span<S> params, std::span<const S> grads) {
    if (params.size() != grads.size()) {
      throw std::invalid_argument("seedrl: adam::step got " + std::to_string(params.size()) +
                                  " parameters but " + std::to_string(grads.size()) +
                                  " gradients; they must match");
    }
    if (step_count_ == 0) {
      std::vector<S> m(params.size(), S(0));
      std::vector<S> v(params.size(), S(0));
      m_ = std::move(m);
      v_ = std::move(v);
    } else if (params.size() != m_.size()) {
      throw std::invalid_argument(
          "seedrl: adam::step got " + std::to_string(params.size()) +
          " parameters but its state was sized for " + std::to_string(m_.size()) +
          " by the first step (or load_state); use one optimizer per parameter buffer");
    }
    const auto k = detail::make_adam_coefficients<S>(config_.beta1, config_.beta2, config_.epsilon,
                                                     schedule_.at(step_count_), step_count_ + 1);
    for (std::size_t i = 0; i < params.size(); ++i) {
      detail::adam_update(k, params[i], m_[i], v_[i], grads[i]);
    }
    ++step_count_;
  }

  /// Updates done so far; also the position in the learning-rate schedule.
  [[nodiscard]] std::int64_t step_count() const noexcept { return step_count_; }

  /// The learning rate the next `step` will use.
  [[nodiscard]] double learning_rate() const { return schedule_.at(step_count_); }

  /// Elements in the state (0 until the first step).
  [[nodiscard]] std::size_t size() const noexcept { return m_.size(); }

  /// The hyperparameters.
  [[nodiscard]] const adam_config& config() const noexcept { return config_; }

  /// The first moment m (PyTorch's exp_avg).
  [[nodiscard]] std::span<const S> first_moment() const noexcept { return m_; }

  /// The second moment v (PyTorch's exp_avg_sq).
  [[nodiscard]] std::span<const S> second_moment() const noexcept { return v_; }

  /// Step count, m and v, in the format of seedrl/detail/optimizer_math.hpp. The config is not
  /// included: a resumed run passes its own.
  [[nodiscard]] std::vector<std::byte> save_state() const {
    const std::span<const S> arrays[] = {m_, v_};
    return detail::save_optimizer_state<S>(detail::optimizer_kind::adam, step_count_, arrays);
  }

  /// Restores what `save_state` wrote, including the element count. Throws
  /// `std::invalid_argument` saying what is wrong (not an optimizer state, another optimizer,
  /// another scalar type, another format version, truncated, trailing bytes, corrupted) and then
  /// changes nothing.
  void load_state(std::span<const std::byte> state) {
    auto parsed =
        detail::parse_optimizer_state<S>(state, detail::optimizer_kind::adam, 2, "m and v");
    m_ = std::move(parsed.arrays[0]);
    v_ = std::move(parsed.arrays[1]);
    step_count_ = parsed.step_count;
  }

 private:
  adam_config config_;
  lr_schedule schedule_;
  std::int64_t step_count_ = 0;
  std::vector<S> m_;  ///< first moment
  std::vector<S> v_;  ///< second moment
};

static_assert(Optimizer<adam<float>>);
static_assert(Optimizer<adam<double>>);

}  // namespace seedrl
