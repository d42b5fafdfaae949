// The GPU side of cuda::mlp_lstm_trainer<float> for the tests: the one explicit instantiation a
// program needs (see seedrl/cuda/mlp_lstm_trainer.hpp). Compiled by nvcc; includes no Eigen.

#include "seedrl/cuda/mlp_lstm_trainer.cuh"

template class seedrl::cuda::mlp_lstm_trainer<float>;

// The CUDA inference engine for the same network, in the same unit (each nvcc unit costs CI
// minutes).
#include "seedrl/cuda/inference_engine.cuh"

template class seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe>;

// A user's torso written once over the backend (test/softsign_torso.hpp) on the GPU trainer and
// engine, through the generic recipe of actor_critic_agent.
#include "../softsign_torso.hpp"
#include "seedrl/cuda/agent_trainer.cuh"
#include "seedrl/train/actor_critic_recipe.hpp"

template class seedrl::cuda::agent_trainer<
    float, seedrl::actor_critic_recipe<seedrl_test::softsign_torso, seedrl_test::softsign_config>>;
template class seedrl::cuda::inference_engine<
    float, seedrl::actor_critic_recipe<seedrl_test::softsign_torso, seedrl_test::softsign_config>>;
