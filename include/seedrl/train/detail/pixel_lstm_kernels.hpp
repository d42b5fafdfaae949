#pragma once
/// \file
/// The per-element bodies that `backend_pixel_torso` (seedrl/train/pixel_torso.hpp) and its
/// convolutional torsos add to those of `backend_agent_trainer` (mlp_lstm_kernels.hpp): rebuilding
/// frame stacks and an in-place ReLU (the convolutions are the backend's primitives). Like
/// those, each is a trivially copyable functor holding only sizes, scalars and backend
/// pointers, whose `operator()` is `SEEDRL_HOST_DEVICE` and device-safe, run by a
/// ComputeBackend's `for_each(n, f)`.

#include <cstddef>
#include <cstdint>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// The torso's input for every step of an unroll, as `frame_stacked::forward_unroll` and then
/// `pixel_lstm_agent` (scale, HWC to CHW) build it: x [N, Cin*Ha*Wa] (CHW, times `scale`) from
/// the unroll's single frames obs [N, F] and the start state's depth-1 history frames (columns
/// [0, (D-1)*F) of a start state row, oldest first). Frame slot k of step t's stack holds the
/// frame of step s = t - (D-1) + k: the unroll's if s >= 0, the start state's slot s + D - 1
/// otherwise, and zero when a step in (s, t] (from step 0 on) starts an episode, since the
/// history is zeroed there. i = r * (D*F) + e, e the index in the agent's CHW input.
template <class S>
struct frame_stack_input_kernel {
  S* x;
  const S* obs;
  const S* start_state;
  std::size_t state_width;
  const std::uint8_t* dones;
  std::size_t B;
  std::size_t D;               ///< frames per stack
  std::size_t frame_channels;  ///< channels of one frame
  std::size_t frame_pixels;    ///< height * width of one frame
  bool stack_channels_last;    ///< frame_stack_config::channels_last
  std::size_t input_channels;  ///< the agent's channels
  std::size_t input_pixels;    ///< the agent's height * width
  bool input_channels_last;    ///< pixel_lstm_agent_config::channels_last
  S scale;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t F = frame_channels * frame_pixels, row_size = D * F;
    const std::size_t r = i / row_size, e = i % row_size;
    // The element of the stack (as frame_stacked lays it out) that lands at CHW index e.
    std::size_t j = e;
    if (input_channels_last && input_channels > 1)
      j = (e % input_pixels) * input_channels + e / input_pixels;
    // Its frame slot k and index fe inside that frame (in the frame's own layout).
    std::size_t k = 0, fe = 0;
    if (stack_channels_last && frame_channels > 1) {
      const std::size_t p = j / (D * frame_channels), rem = j % (D * frame_channels);
      k = rem / frame_channels;
      fe = p * frame_channels + rem % frame_channels;
    } else {
      k = j / F;
      fe = j % F;
    }
    const std::size_t t = r / B, b = r % B;
    S v = S(0);
    if (k + 1 == D) {
      v = obs[r * F + fe];
    } else {
      // Step s = t + k + 1 - D, as a signed offset: back = D - 1 - k steps before t.
      const std::size_t back = D - 1 - k;
      const std::size_t first = t >= back ? t - back + 1 : 0;  // first step that could reset
      bool visible = true;
      for (std::size_t u = first; u <= t; ++u)
        visible = visible && dones[u * B + b] == 0;
      if (visible) {
        v = t >= back ? obs[((t - back) * B + b) * F + fe]
                      : start_state[b * state_width + (D - 1 - (back - t)) * F + fe];
      }
    }
    x[i] = v * scale;
  }
};

}  // namespace seedrl::detail
