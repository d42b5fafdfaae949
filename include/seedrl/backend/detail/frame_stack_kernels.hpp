#pragma once
/// \file
/// Learner-side frame stacking as backend kernels, the one implementation of it: the CPU
/// adapter `frame_stacked` (seedrl/net/frame_stack.hpp) runs them on the host, the backend
/// pixel torso (seedrl/train/pixel_torso.hpp) on any ComputeBackend. Each is a trivially
/// copyable functor of sizes, scalars and backend pointers whose `operator()` is
/// `SEEDRL_HOST_DEVICE`; `detail::host_primitives` runs them as row copies (the element bodies
/// divide every index, and a stack is a few whole frames).
///
/// A stack is the last D frames of an environment, oldest first: with `stack_channels_last`
/// false (or one channel), the frames one after the other (CHW with D*C channels); with it,
/// H x W x (D*C), channel k*C + c for frame k. The frame history in a state row is the D-1
/// previous frames, oldest first, each in the frame's own layout, zeroed where an episode starts.

#include <cstddef>
#include <cstdint>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// Every step's stack for an unroll (or one inference step, steps = 1) and, for the pixel
/// torso, `pixel_lstm_agent`'s preprocessing (scale, HWC to CHW): x [N, Cin*Ha*Wa] (CHW, times
/// `scale`) from the unroll's single frames obs [N, F] and the start state's depth-1 history frames
/// (columns [0, (D-1)*F) of a start state row, oldest first). Frame slot k of step t's stack holds
/// the frame of step s = t - (D-1) + k: the unroll's if s >= 0, the start state's slot s + D - 1
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
    const S* src = frame_source(r / B, r % B, k);
    x[i] = (src != nullptr ? src[fe] : S(0)) * scale;
  }

  /// The frame that slot k of step t's stack of environment b shows (F elements in the frame's
  /// own layout): the unroll's frame of step s = t - (D-1-k) if s >= 0, the start state's
  /// history slot s + D - 1 otherwise; null (zeros) when a step in (s, t] starts an episode.
  SEEDRL_HOST_DEVICE const S* frame_source(std::size_t t, std::size_t b, std::size_t k) const {
    const std::size_t F = frame_channels * frame_pixels;
    if (k + 1 == D)
      return obs + (t * B + b) * F;
    const std::size_t back = D - 1 - k;
    for (std::size_t u = t >= back ? t - back + 1 : 0; u <= t; ++u)
      if (dones[u * B + b] != 0)
        return nullptr;
    return t >= back ? obs + ((t - back) * B + b) * F
                     : start_state + b * state_width + (D - 1 - (back - t)) * F;
  }
};

/// The frame history after one step, as frame_stacked keeps it: the depth-1 previous frames,
/// oldest first, each of F elements in the frame's own layout. Row r's new history is its old
/// one (columns [0, (D-1)*F) of `before` [B, state_width], zero where resets[r]) shifted by one
/// frame, with the step's observation obs [B, F] last; i = r * (D-1) * F + e. `next` may be
/// `before` itself (ld_next = state_width) only where rows are walked in order, as the host's
/// row copies do; a GPU needs them apart.
template <class S>
struct frame_history_step_kernel {
  const S* before;
  std::size_t state_width;
  const std::uint8_t* resets;
  const S* obs;
  std::size_t F;
  std::size_t slots;  ///< D - 1 (> 0)
  S* next;
  std::size_t ld_next;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = slots * F;
    const std::size_t r = i / n, e = i % n;
    const std::size_t k = e / F, fe = e % F;
    S v = S(0);
    if (k + 1 == slots)
      v = obs[r * F + fe];
    else if (resets == nullptr || resets[r] == 0)
      v = before[r * state_width + (k + 1) * F + fe];
    next[r * ld_next + e] = v;
  }
};

}  // namespace seedrl::detail
