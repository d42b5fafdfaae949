// The GPU side of cuda::pixel_lstm_trainer<float> over every torso for the tests: the explicit
// instantiations a program needs (see seedrl/cuda/pixel_lstm_trainer.hpp). Compiled by nvcc;
// includes no Eigen.

#include "seedrl/cuda/pixel_lstm_trainer.cuh"

template class seedrl::cuda::pixel_lstm_trainer<float>;
template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;
template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::small_conv_torso_config>;
