// The GPU side of `--device cuda`: the one nvcc translation unit of seedrl_atari, where the CUDA
// trainer's kernels are instantiated (seedrl/cuda/pixel_lstm_trainer.hpp says why).
#include "seedrl/cuda/pixel_lstm_trainer.cuh"

template class seedrl::cuda::pixel_lstm_trainer<float>;
