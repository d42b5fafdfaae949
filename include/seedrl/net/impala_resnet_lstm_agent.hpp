#pragma once
/// \file
/// The IMPALA ResNet + LSTM agent: `impala_resnet` (stacks of 16, 32, 32 channels with two
/// residual blocks each) on frame stacks scaled by 1/255, dense 256 with ReLU, an LSTM 256 fed
/// the dense output, the clipped reward and the one-hot previous action, then policy logits
/// and a value. Models seedrl::Network; see pixel_lstm_agent.hpp for the shared parts and
/// frame_stack.hpp for stacking single frames on the learner.

#include "seedrl/net/impala_resnet.hpp"
#include "seedrl/net/impala_resnet_lstm_agent_config.hpp"
#include "seedrl/net/pixel_lstm_agent.hpp"

namespace seedrl {

/// IMPALA ResNet + LSTM actor-critic; see the file comment.
template <std::floating_point S = float>
using impala_resnet_lstm_agent = pixel_lstm_agent<S, impala_resnet<S>>;

static_assert(Network<impala_resnet_lstm_agent<float>>);
static_assert(Network<impala_resnet_lstm_agent<double>>);

}  // namespace seedrl
