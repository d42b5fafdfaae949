#pragma once
/// \file
/// The GPU side of `cuda::mlp_lstm_trainer` (seedrl/cuda/mlp_lstm_trainer.hpp): its
/// constructor, which makes the `cuda::agent_trainer` engine. Include it from exactly one .cu
/// file of a program, compiled by nvcc, next to one explicit instantiation per scalar type the
/// program uses:
///
///   #include "seedrl/cuda/mlp_lstm_trainer.cuh"
///   template class seedrl::cuda::mlp_lstm_trainer<float>;
///
/// Includes no Eigen, so nvcc never compiles the CPU network.

#include <concepts>

#include "seedrl/cuda/agent_trainer.cuh"
#include "seedrl/cuda/mlp_lstm_trainer.hpp"

namespace seedrl::cuda {

template <std::floating_point S>
mlp_lstm_trainer<S>::mlp_lstm_trainer(int device)
    : agent_trainer<S, mlp_lstm_recipe>(
          device, detail::make_agent_trainer_engine<S, mlp_lstm_recipe>(device)) {}

}  // namespace seedrl::cuda
