#pragma once
/// \file
/// The GPU side of `cuda::pixel_lstm_trainer` (seedrl/cuda/pixel_lstm_trainer.hpp): its
/// constructor, which makes the `cuda::agent_trainer` engine. Include it from exactly one .cu
/// file of a program, compiled by nvcc, next to one explicit instantiation per scalar type and
/// torso the program uses:
///
///   #include "seedrl/cuda/pixel_lstm_trainer.cuh"
///   template class seedrl::cuda::pixel_lstm_trainer<float>;  // Nature CNN
///   template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;
///
/// Includes no Eigen (only the network's config headers), so nvcc never compiles the CPU
/// network. A program may include this file and mlp_lstm_trainer.cuh in the same .cu file.

#include <concepts>

#include "seedrl/cuda/agent_trainer.cuh"
#include "seedrl/cuda/pixel_lstm_trainer.hpp"

namespace seedrl::cuda {

template <std::floating_point S, class TorsoConfig>
pixel_lstm_trainer<S, TorsoConfig>::pixel_lstm_trainer(int device)
    : agent_trainer<S, pixel_lstm_recipe<TorsoConfig>>(
          device, detail::make_agent_trainer_engine<S, pixel_lstm_recipe<TorsoConfig>>(device)) {}

}  // namespace seedrl::cuda
