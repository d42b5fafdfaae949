// The GPU side of `--device cuda`: the one nvcc translation unit of seedrl_catch, where the CUDA
// trainers' kernels are instantiated (seedrl/cuda/pixel_lstm_trainer.hpp says why), one per
// network --network offers.
#include "seedrl/cuda/pixel_lstm_trainer.cuh"

template class seedrl::cuda::pixel_lstm_trainer<float>;
template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;
