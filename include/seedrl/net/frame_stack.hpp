#pragma once
/// \file
/// Learner-side frame stacking as a Network adapter: `frame_stacked<Net>` takes ONE frame per
/// environment and step, and feeds `Net` the stack of the last `depth` frames. Actors send
/// single uint8 frames (a quarter of the bytes of a 4-stack), and unrolls store single frames.
///
/// The previous `depth - 1` frames are part of each environment's recurrent state, so the
/// learner keeps, gathers and stores them like an LSTM state without knowing about stacking:
/// a state row is [frame t-depth+1, ..., frame t-1 (oldest first), then Net's own state]. Where
/// `done` is set (an episode starts with this frame) the history is zeroed before the step, as
/// Net resets its own state there. `forward_unroll` rebuilds every step's stack from the start
/// state's frames and the unroll's single frames, so it computes exactly what step-by-step
/// `infer` computed; the frames in the state get no gradient (they are observations).
///
/// Stack layout seen by Net: with `channels_last` false, frames are C x H x W and the stack is
/// the frames one after the other, i.e. CHW with depth*C channels, oldest first (for C = 1, the
/// usual Atari grayscale, both layouts coincide). With `channels_last` true, frames are
/// H x W x C and the stack is H x W x (depth*C), channel index = k*C + c for frame k (oldest
/// first), which is what Atari wrappers that stack on the last axis produce.
///
/// The stacking itself is the backend kernels of seedrl/backend/detail/frame_stack_kernels.hpp,
/// which the GPU pixel torso runs too; the host runs them as row copies.
///
/// Net must model Network over the agent_io.hpp types and provide `state_size()`; it must be
/// copy-constructible (the learner copies the network it is given). Only the stacking
/// buffers are added; they are grown to the largest batch seen and reused.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/network.hpp"

namespace seedrl {

/// A network over the agent_io.hpp types whose state is one row of `state_size()` per env,
/// constructible from a copy (agents pin their layers to their buffers, so they are not movable).
template <class N>
concept AgentNetwork = Network<N> && std::is_constructible_v<N, const N&> &&
    std::same_as<typename N::inference_input, agent_step_input<typename N::scalar_type>> &&
    std::same_as<typename N::unroll_input, agent_unroll_input<typename N::scalar_type>> &&
    std::same_as<typename N::state_type, recurrent_state<typename N::scalar_type>> &&
    requires(const N& n) {
  { n.state_size() } -> std::convertible_to<std::ptrdiff_t>;
};

/// `Net` fed stacks of the last `depth` frames; see the file comment. Models Network.
template <AgentNetwork Net>
class frame_stacked {
 public:
  using inner_type = Net;
  using scalar_type = typename Net::scalar_type;
  using state_type = recurrent_state<scalar_type>;
  using inference_input = typename Net::inference_input;
  using inference_output = typename Net::inference_output;
  using unroll_input = typename Net::unroll_input;
  using unroll_output = typename Net::unroll_output;
  using output_gradient = typename Net::output_gradient;

  /// Builds the inner network in place from `inner_args`.
  template <class... Args>
  explicit frame_stacked(const frame_stack_config& config, Args&&... inner_args)
      : config_(config), net_(std::forward<Args>(inner_args)...) {
    if (config_.height <= 0 || config_.width <= 0 || config_.channels <= 0 || config_.depth <= 0)
      throw std::invalid_argument(
          "seedrl::frame_stacked: height, width, channels and depth must be positive");
    if constexpr (requires { net_.observation_size(); }) {
      if (static_cast<std::ptrdiff_t>(net_.observation_size()) != config_.depth * frame_size()) {
        throw std::invalid_argument(
            "seedrl::frame_stacked: the inner network reads " +
            std::to_string(net_.observation_size()) + " elements per observation, but a stack of " +
            std::to_string(config_.depth) + " frames of " + std::to_string(frame_size()) + " is " +
            std::to_string(config_.depth * frame_size()));
      }
    }
  }

  frame_stacked(const frame_stacked& other) : config_(other.config_), net_(other.net_) {}
  frame_stacked& operator=(const frame_stacked&) = delete;

  const frame_stack_config& stack_config() const noexcept { return config_; }
  Net& inner() noexcept { return net_; }
  const Net& inner() const noexcept { return net_; }

  /// Elements of one frame, the observation size the learner sees.
  std::ptrdiff_t frame_size() const noexcept {
    return config_.height * config_.width * config_.channels;
  }
  std::ptrdiff_t observation_size() const noexcept { return frame_size(); }
  /// Elements of the frame history at the front of a state row.
  std::ptrdiff_t history_size() const noexcept { return (config_.depth - 1) * frame_size(); }
  /// Width of one environment's state: the frame history, then the inner network's state.
  std::ptrdiff_t state_size() const noexcept {
    return history_size() + static_cast<std::ptrdiff_t>(net_.state_size());
  }

  state_type initial_state(std::size_t batch_size) const {
    return state_type(static_cast<std::ptrdiff_t>(batch_size), state_size());
  }

  auto parameters() noexcept { return net_.parameters(); }
  auto gradients() noexcept { return net_.gradients(); }
  void zero_gradients() noexcept {
    auto g = net_.gradients();
    std::fill(g.begin(), g.end(), scalar_type(0));
  }

  /// One step: stacks each env's history with its new frame (history zeroed where done),
  /// shifts the frame into the history, and runs the inner network on the stacks.
  void infer(const inference_input& in, state_type& state, inference_output& out) {
    const auto B = static_cast<std::ptrdiff_t>(in.rewards.size());
    const auto F = frame_size(), S = state_size(), Hs = history_size();
    const auto Wi = S - Hs;
    detail::check_extent("frame_stacked::infer: observations", in.observations.size(),
                         static_cast<std::size_t>(B * F));
    detail::check_extent("frame_stacked::infer: dones", in.dones.size(),
                         static_cast<std::size_t>(B));
    if (state.batch != B || state.width != S) {
      throw std::invalid_argument("seedrl::frame_stacked::infer: state is [" +
                                  std::to_string(state.batch) + ", " + std::to_string(state.width) +
                                  "], expected [" + std::to_string(B) + ", " + std::to_string(S) +
                                  "]");
    }
    grow(step_stacks_, static_cast<std::size_t>(B * config_.depth * F));
    inner_state_.batch = B;
    inner_state_.width = Wi;
    grow(inner_state_.data, static_cast<std::size_t>(B * Wi));
    // Each row's stack from its history (zero where done) and the new frame, then the history
    // shifted in place: the kernels the backend pixel torso runs (frame_stack_kernels.hpp).
    scalar_type* rows = state.data.data();
    host_.for_each(static_cast<std::size_t>(B * config_.depth * F),
                   stack_kernel(step_stacks_.data(), in.observations.data(), rows, in.dones.data(),
                                static_cast<std::size_t>(B)));
    if (Hs > 0)
      host_.for_each(static_cast<std::size_t>(B * Hs),
                     detail::frame_history_step_kernel<scalar_type>{
                         rows, static_cast<std::size_t>(S), in.dones.data(), in.observations.data(),
                         static_cast<std::size_t>(F), static_cast<std::size_t>(config_.depth - 1),
                         rows, static_cast<std::size_t>(S)});
    for (std::ptrdiff_t b = 0; b < B; ++b)
      std::copy(rows + b * S + Hs, rows + (b + 1) * S, inner_state_.data.data() + b * Wi);
    net_.infer({std::span<const scalar_type>(step_stacks_)
                    .first(static_cast<std::size_t>(B * config_.depth * F)),
                in.rewards, in.dones, in.prev_actions, in.prev_continuous_actions},
               inner_state_, out);
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      std::copy(inner_state_.data.data() + b * Wi, inner_state_.data.data() + (b + 1) * Wi,
                state.data.data() + b * S + Hs);
    }
  }

  /// Rebuilds each step's stack from the start state's frames and the unroll's frames, then
  /// runs the inner network's unroll from the start state's inner part.
  void forward_unroll(const unroll_input& in, unroll_output& out) {
    const auto T1 = static_cast<std::ptrdiff_t>(in.steps),
               B = static_cast<std::ptrdiff_t>(in.batch);
    const auto F = frame_size(), S = state_size(), Hs = history_size(), D = config_.depth;
    const auto Wi = S - Hs;
    detail::check_extent("frame_stacked::forward_unroll: observations", in.observations.size(),
                         static_cast<std::size_t>(T1 * B * F));
    detail::check_extent("frame_stacked::forward_unroll: dones", in.dones.size(),
                         static_cast<std::size_t>(T1 * B));
    detail::check_extent("frame_stacked::forward_unroll: start_state", in.start_state.size(),
                         static_cast<std::size_t>(B * S));
    grow(train_stacks_, static_cast<std::size_t>(T1 * B * D * F));
    grow(start_inner_, static_cast<std::size_t>(B * Wi));
    host_.for_each(static_cast<std::size_t>(T1 * B * D * F),
                   stack_kernel(train_stacks_.data(), in.observations.data(), in.start_state.data(),
                                in.dones.data(), static_cast<std::size_t>(B)));
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      const scalar_type* start = in.start_state.data() + b * S;
      std::copy(start + Hs, start + S, start_inner_.data() + b * Wi);
    }
    net_.forward_unroll(
        {in.steps, in.batch,
         std::span<const scalar_type>(train_stacks_)
             .first(static_cast<std::size_t>(T1 * B * D * F)),
         in.rewards, in.dones, in.prev_actions,
         std::span<const scalar_type>(start_inner_).first(static_cast<std::size_t>(B * Wi)),
         in.prev_continuous_actions},
        out);
  }

  /// Back-propagates into the inner network's gradients (frames have no parameters).
  void backward_unroll(const output_gradient& grad) { net_.backward_unroll(grad); }

 private:
  /// The stacking kernel over rows of B environments: stacks in frame_stacked's layout (no
  /// scale, no transpose), histories at the front of state rows of state_size().
  detail::frame_stack_input_kernel<scalar_type> stack_kernel(scalar_type* stacks,
                                                             const scalar_type* frames,
                                                             const scalar_type* states,
                                                             const std::uint8_t* dones,
                                                             std::size_t B) const {
    return {stacks,
            frames,
            states,
            static_cast<std::size_t>(state_size()),
            dones,
            B,
            static_cast<std::size_t>(config_.depth),
            static_cast<std::size_t>(config_.channels),
            static_cast<std::size_t>(config_.height * config_.width),
            config_.channels_last,
            0,
            0,
            false,
            scalar_type(1)};
  }

  static void grow(std::vector<scalar_type>& v, std::size_t n) {
    if (v.size() < n)
      v.resize(n);
  }

  frame_stack_config config_;
  Net net_;
  detail::host_primitives host_;  ///< runs the stacking kernels (row copies)
  std::vector<scalar_type> step_stacks_, train_stacks_, start_inner_;
  state_type inner_state_;
};

}  // namespace seedrl
