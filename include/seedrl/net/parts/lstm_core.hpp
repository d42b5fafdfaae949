#pragma once
/// \file
/// `lstm_core<S>`: an n-layer LSTM (seedrl/net/lstm.hpp) as an agent's core, or none when its
/// hidden size is 0 (the output is then the input, with no state: a choice made at run time, as
/// `mlp_lstm_agent_config::lstm_size` = 0 does). Models seedrl::Core
/// (seedrl/net/parts/core.hpp). Parameters and state layout are `lstm`'s; initialisation is
/// `lstm::init` (PyTorch's bounds, forget biases shifted by `forget_bias`).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/net/parts/core.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Sizes of an `lstm_core`.
struct lstm_core_options {
  std::ptrdiff_t hidden_size = 64;  ///< 0: no LSTM, the input passes through
  std::ptrdiff_t num_layers = 1;
  double forget_bias = 1.0;  ///< added to the forget-gate biases at initialisation
};

/// The LSTM core; see the file comment.
template <std::floating_point S>
class lstm_core {
 public:
  using options_type = lstm_core_options;

  lstm_core(const options_type& options, std::ptrdiff_t input_size) : input_size_(input_size) {
    if (options.hidden_size < 0 || options.num_layers <= 0) {
      throw std::invalid_argument(
          "seedrl::lstm_core: hidden_size must be >= 0 and num_layers positive");
    }
    if (options.hidden_size > 0) {
      lstm_.emplace(
          lstm_config{input_size, options.hidden_size, options.num_layers, options.forget_bias});
    }
  }

  bool has_lstm() const noexcept { return lstm_.has_value(); }
  std::ptrdiff_t output_size() const noexcept { return lstm_ ? lstm_->hidden_size() : input_size_; }
  std::ptrdiff_t state_size() const noexcept { return lstm_ ? lstm_->state_size() : 0; }
  std::size_t num_parameters() const noexcept { return lstm_ ? lstm_->num_parameters() : 0; }
  void bind(S* params, S* grads) noexcept {
    if (lstm_)
      lstm_->bind(params, grads);
  }
  void init(random_generator& rng) {
    if (lstm_)
      lstm_->init(rng);
  }

  const_matrix_view<S> step(const_matrix_view<S> x, std::span<const std::uint8_t> dones,
                            matrix_view<S> state) {
    if (!lstm_)
      return x;
    const std::ptrdiff_t B = x.rows(), H = lstm_->hidden_size();
    grow(step_out_, B * H);
    auto y = view(step_out_.data(), B, H);
    lstm_->step(x, dones, state, y);
    return cview(y);
  }

  const_matrix_view<S> forward_unroll(std::ptrdiff_t T, std::ptrdiff_t B, const_matrix_view<S> x,
                                      std::span<const std::uint8_t> dones,
                                      const_matrix_view<S> start_state) {
    if (!lstm_)
      return x;
    const std::ptrdiff_t H = lstm_->hidden_size();
    grow(train_out_, T * B * H);
    auto y = view(train_out_.data(), T * B, H);
    lstm_->forward_unroll(T, B, x, dones, start_state, y);
    return cview(y);
  }

  matrix_view<S> backward_unroll(matrix_view<S> dy) {
    if (!lstm_)
      return dy;
    const std::ptrdiff_t N = dy.rows();
    grow(d_in_, N * input_size_);
    auto dx = view(d_in_.data(), N, input_size_);
    lstm_->backward_unroll(cview(dy), nullptr, &dx);
    return dx;
  }

 private:
  static void grow(std::vector<S>& v, std::ptrdiff_t n) {
    if (v.size() < static_cast<std::size_t>(n))
      v.resize(static_cast<std::size_t>(n));
  }

  std::ptrdiff_t input_size_ = 0;
  std::optional<lstm<S>> lstm_;
  std::vector<S> step_out_, train_out_, d_in_;
};

static_assert(Core<lstm_core<float>, float>);

}  // namespace seedrl
