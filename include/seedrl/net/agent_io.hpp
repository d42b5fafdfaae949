#pragma once
/// \file
/// What a SEED-style agent network reads and writes: the types behind the Network concept's
/// `inference_input`, `unroll_input` and friends for networks over observations of scalars.
/// All arrays are row-major and time-major where there is time: element (t, b) of an unroll is
/// row t*B + b. Every struct is a set of views; callers own the memory.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/net/agent_step_io.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// The recurrent state of a batch of environments: one row of `width` elements per
/// environment, so the learner can gather and scatter environments by row.
template <std::floating_point S>
struct recurrent_state {
  std::ptrdiff_t batch = 0;
  std::ptrdiff_t width = 0;
  std::vector<S> data;

  recurrent_state() = default;
  recurrent_state(std::ptrdiff_t batch_size, std::ptrdiff_t row_width)
      : batch(batch_size),
        width(row_width),
        data(static_cast<std::size_t>(batch_size * row_width), S(0)) {}

  matrix_view<S> rows() { return view(data.data(), batch, width); }
  const_matrix_view<S> rows() const { return cview(data.data(), batch, width); }
  std::span<S> row(std::ptrdiff_t b) {
    return {data.data() + b * width, static_cast<std::size_t>(width)};
  }
};

/// A training unroll of `steps` = T + 1 steps for `batch` environments.
template <std::floating_point S>
struct agent_unroll_input {
  std::size_t steps = 0;
  std::size_t batch = 0;
  std::span<const S> observations;             ///< [steps * batch, observation_size]
  std::span<const S> rewards;                  ///< [steps * batch]
  std::span<const std::uint8_t> dones;         ///< [steps * batch]
  std::span<const std::int32_t> prev_actions;  ///< [steps * batch]
  std::span<const S> start_state;              ///< [batch, state width] at step 0
  /// [steps * batch, D] continuous action spaces: the action the env got before each step
  /// (for networks built for them; empty otherwise).
  std::span<const S> prev_continuous_actions = {};
};

/// Where an unroll forward writes.
template <std::floating_point S>
struct agent_unroll_output {
  std::span<S> logits;  ///< [steps * batch, num_actions]
  std::span<S> values;  ///< [steps * batch]
};

/// The loss's gradient w.r.t. an unroll's outputs.
template <std::floating_point S>
struct agent_output_gradient {
  std::span<const S> logits;  ///< [steps * batch, num_actions]
  std::span<const S> values;  ///< [steps * batch]
};

namespace detail {
inline void check_extent(const char* what, std::size_t got, std::size_t want) {
  if (got != want) {
    throw std::invalid_argument(std::string("seedrl: ") + what + " has " + std::to_string(got) +
                                " elements, expected " + std::to_string(want));
  }
}
}  // namespace detail

}  // namespace seedrl
