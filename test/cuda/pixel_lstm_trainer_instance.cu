// The GPU side of cuda::pixel_lstm_trainer<float> for the tests: the one explicit instantiation a
// program needs (see seedrl/cuda/pixel_lstm_trainer.hpp). Compiled by nvcc; includes no Eigen.

#include "seedrl/cuda/pixel_lstm_trainer.cuh"

template class seedrl::cuda::pixel_lstm_trainer<float>;
