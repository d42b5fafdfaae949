#pragma once
/// \file
/// What one inference step of a SEED-style agent reads and writes (`agent_step_input`,
/// `agent_step_output`), apart from seedrl/net/agent_io.hpp so that code compiled without Eigen
/// (the CUDA inference engine's nvcc units) can name them. agent_io.hpp includes it.

#include <concepts>
#include <cstdint>
#include <span>

namespace seedrl {

/// One inference step for B environments.
template <std::floating_point S>
struct agent_step_input {
  std::span<const S> observations;             ///< [B, observation_size]
  std::span<const S> rewards;                  ///< [B] reward that came with the observation
  std::span<const std::uint8_t> dones;         ///< [B] 1 where this observation starts an episode
  std::span<const std::int32_t> prev_actions;  ///< [B] action taken before this observation
  /// [B, D] continuous action spaces: the action the env got before this observation (for
  /// networks built for them; empty otherwise).
  std::span<const S> prev_continuous_actions = {};
  /// [B, observation_size] uint8 frames as the actors sent them, for an inference engine
  /// (seedrl/runtime/inference_engine.hpp): when non-empty, `observations` is empty and the
  /// engine widens these to S at its first layer, so frames cross to an accelerator as bytes.
  /// Networks (Net::infer) never get them.
  std::span<const std::uint8_t> observations_u8 = {};
  /// [B] or empty, for an inference engine: 1 where the caller will read state_before(row)
  /// after the step (the unroll builder's start states); empty asks for every row. An engine
  /// may leave the other rows' state_before unspecified (the CUDA engine downloads only these).
  std::span<const std::uint8_t> keep_state = {};
};

/// Where one inference step writes.
template <std::floating_point S>
struct agent_step_output {
  std::span<S> logits;  ///< [B, num_actions]
  std::span<S> values;  ///< [B]
};

}  // namespace seedrl
