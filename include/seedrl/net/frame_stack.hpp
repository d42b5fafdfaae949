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
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      scalar_type* row = state.data.data() + b * S;
      const scalar_type* frame = in.observations.data() + b * F;
      if (in.dones[static_cast<std::size_t>(b)])
        std::fill(row, row + Hs, scalar_type(0));
      stack_history_then(row, frame, step_stacks_.data() + b * config_.depth * F);
      // Shift: drop the oldest frame, append the new one.
      if (Hs > 0) {
        std::copy(row + F, row + Hs, row);
        std::copy(frame, frame + F, row + Hs - F);
      }
      std::copy(row + Hs, row + S, inner_state_.data.data() + b * Wi);
    }
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
    grow(train_history_, static_cast<std::size_t>(Hs));
    grow(start_inner_, static_cast<std::size_t>(B * Wi));
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      const scalar_type* start = in.start_state.data() + b * S;
      std::copy(start + Hs, start + S, start_inner_.data() + b * Wi);
      // The previous step's stack holds this step's history in its last depth-1 frames.
      const scalar_type* history = start;
      for (std::ptrdiff_t t = 0; t < T1; ++t) {
        const std::ptrdiff_t r = t * B + b;
        const scalar_type* h = history;
        if (in.dones[static_cast<std::size_t>(r)]) {
          std::fill(train_history_.begin(), train_history_.begin() + Hs, scalar_type(0));
          h = train_history_.data();
        }
        scalar_type* stack = train_stacks_.data() + r * D * F;
        stack_history_then(h, in.observations.data() + r * F, stack);
        history = stack + F;  // frames 1..D-1 of this stack, in the concatenated layout
        if (config_.channels_last && config_.channels > 1 && D > 1) {
          // Interleaved stacks do not hold the next history contiguously: keep it aside.
          history = next_history(stack);
        }
      }
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
  /// Writes the stack of depth-1 history frames (contiguous, oldest first, each in frame
  /// layout) and the new frame, in the layout Net reads.
  void stack_history_then(const scalar_type* history, const scalar_type* frame,
                          scalar_type* stack) const {
    const auto F = frame_size(), D = config_.depth, C = config_.channels;
    if (!config_.channels_last || C == 1) {
      std::copy(history, history + (D - 1) * F, stack);
      std::copy(frame, frame + F, stack + (D - 1) * F);
      return;
    }
    const std::ptrdiff_t pixels = config_.height * config_.width;
    for (std::ptrdiff_t k = 0; k < D; ++k) {
      const scalar_type* src = k + 1 < D ? history + k * F : frame;
      for (std::ptrdiff_t p = 0; p < pixels; ++p)
        std::copy(src + p * C, src + (p + 1) * C, stack + p * D * C + k * C);
    }
  }

  /// For interleaved (channels-last) stacks: de-interleaves frames 1..D-1 of `stack` into a
  /// scratch history (read before the next stack is written) and returns it.
  const scalar_type* next_history(const scalar_type* stack) {
    const auto F = frame_size(), D = config_.depth, C = config_.channels;
    const std::ptrdiff_t pixels = config_.height * config_.width;
    grow(deinterleaved_, static_cast<std::size_t>((D - 1) * F));
    for (std::ptrdiff_t k = 1; k < D; ++k) {
      scalar_type* dst = deinterleaved_.data() + (k - 1) * F;
      for (std::ptrdiff_t p = 0; p < pixels; ++p)
        std::copy(stack + p * D * C + k * C, stack + p * D * C + (k + 1) * C, dst + p * C);
    }
    return deinterleaved_.data();
  }

  static void grow(std::vector<scalar_type>& v, std::size_t n) {
    if (v.size() < n)
      v.resize(n);
  }

  frame_stack_config config_;
  Net net_;
  std::vector<scalar_type> step_stacks_, train_stacks_, train_history_, start_inner_,
      deinterleaved_;
  state_type inner_state_;
};

}  // namespace seedrl
