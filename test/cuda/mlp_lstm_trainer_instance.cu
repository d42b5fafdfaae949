// The GPU side of cuda::mlp_lstm_trainer<float> for the tests: the one explicit instantiation a
// program needs (see seedrl/cuda/mlp_lstm_trainer.hpp). Compiled by nvcc; includes no Eigen.

#include "seedrl/cuda/mlp_lstm_trainer.cuh"

template class seedrl::cuda::mlp_lstm_trainer<float>;
