#pragma once
/// \file
/// The Nature CNN + LSTM agent for Atari-like pixel observations: `nature_cnn` (conv 32x8x8/4,
/// 64x4x4/2, 64x3x3/1, ReLU) on 84x84 frame stacks scaled by 1/255, dense 512 with ReLU, an LSTM
/// (512 by default) fed the dense output, the clipped reward and the one-hot previous action,
/// then policy logits and a value. Models seedrl::Network; see pixel_lstm_agent.hpp for the
/// shared parts and frame_stack.hpp for stacking single frames on the learner.
///
/// With the learner, for actors that send single 84x84 uint8 frames:
///
///     seedrl::nature_cnn_lstm_agent_config c;   // channels = 4: the stack depth
///     c.num_actions = 6;
///     using net_t = seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>;
///     net_t net(seedrl::frame_stack_config{.height = 84, .width = 84, .channels = 1,
///                                          .depth = 4}, c);
///     // observation_spec: uint8 [84, 84] (or [84, 84, 1]); the learner keeps 3 frames per env.

#include <string_view>
#include <vector>

#include "seedrl/net/nature_cnn.hpp"
#include "seedrl/net/nature_cnn_lstm_agent_config.hpp"
#include "seedrl/net/pixel_lstm_agent.hpp"

namespace seedrl {

/// Nature CNN + LSTM actor-critic; see the file comment.
template <std::floating_point S = float>
using nature_cnn_lstm_agent = pixel_lstm_agent<S, nature_cnn<S>>;

static_assert(Network<nature_cnn_lstm_agent<float>>);
static_assert(Network<nature_cnn_lstm_agent<double>>);

}  // namespace seedrl
