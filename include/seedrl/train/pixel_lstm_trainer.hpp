#pragma once
/// \file
/// `backend_pixel_lstm_trainer<Backend, S, TorsoConfig>`: the training step of the pixel agents
/// the Atari example trains, `frame_stacked<pixel_lstm_agent<Torso, S>>` over the Nature CNN
/// (`nature_cnn_config`, the default) or the IMPALA ResNet (`impala_resnet_config`), on a
/// ComputeBackend. It is the one backend trainer, `backend_agent_trainer`
/// (seedrl/train/agent_trainer.hpp), with the pixel torso (`backend_pixel_torso`,
/// seedrl/train/pixel_torso.hpp: frame stacking, convolutions, dense layer): constructed as
/// `(backend, frame_stack_config, pixel_lstm_agent_config<TorsoConfig>)`, with the CPU network's
/// `parameters()` layout and frame_stacked's state (frame history, then the LSTM's h and c).
/// A batch's observations are single frames (`observation_size()`).

#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/train/agent_trainer.hpp"
#include "seedrl/train/pixel_torso.hpp"

namespace seedrl {

/// Trains a `frame_stacked<pixel_lstm_agent<Torso, S>>`'s parameters on a ComputeBackend, the
/// torso given by its config type; see the file comment.
template <ComputeBackend Backend, std::floating_point S, class TorsoConfig = nature_cnn_config>
using backend_pixel_lstm_trainer =
    backend_agent_trainer<Backend, S, backend_pixel_torso<Backend, S, TorsoConfig>>;

}  // namespace seedrl
