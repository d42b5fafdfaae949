// The GPU side of `--device cuda`: the one nvcc translation unit of seedrl_cartpole_seed, where
// the CUDA trainer's kernels are instantiated (seedrl/cuda/mlp_lstm_trainer.hpp says why).
#include "seedrl/cuda/mlp_lstm_trainer.cuh"

template class seedrl::cuda::mlp_lstm_trainer<float>;
