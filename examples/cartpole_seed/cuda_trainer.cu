// The GPU side of `--device cuda`: the one nvcc translation unit of seedrl_cartpole_seed and
// seedrl_pendulum (an object library of examples/CMakeLists.txt), where
// the CUDA trainer's kernels (seedrl/cuda/mlp_lstm_trainer.hpp says why) and the CUDA inference
// engine's (--inference-device cuda; seedrl/cuda/inference_engine.hpp) are instantiated.
#include "seedrl/cuda/inference_engine.cuh"
#include "seedrl/cuda/mlp_lstm_trainer.cuh"

template class seedrl::cuda::mlp_lstm_trainer<float>;
template class seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe>;
