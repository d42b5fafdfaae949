#pragma once
/// \file
/// `backend_mlp_lstm_trainer<Backend, S>`: the training step of `seedrl::mlp_lstm_agent` on a
/// ComputeBackend. It is the one backend trainer, `backend_agent_trainer`
/// (seedrl/train/agent_trainer.hpp), with the agent's ReLU MLP torso (`backend_mlp_torso`,
/// seedrl/train/mlp_torso.hpp): constructed as `(backend, mlp_lstm_agent_config)`, with
/// `mlp_lstm_agent`'s parameter layout and state (h, c) per LSTM layer.

#include "seedrl/train/agent_trainer.hpp"
#include "seedrl/train/mlp_torso.hpp"

namespace seedrl {

/// Trains an `mlp_lstm_agent`'s parameters on a ComputeBackend; see the file comment.
template <ComputeBackend Backend, std::floating_point S>
using backend_mlp_lstm_trainer = backend_agent_trainer<Backend, S, backend_mlp_torso<Backend, S>>;

}  // namespace seedrl
