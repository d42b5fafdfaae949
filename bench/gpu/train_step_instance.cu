// The GPU side of cuda::mlp_lstm_trainer<float> for seedrl_bench_gpu's training-step benchmark
// (bench_train_step.cpp): the program's one explicit instantiation. Compiled by nvcc; no Eigen.

#include "seedrl/cuda/mlp_lstm_trainer.cuh"

template class seedrl::cuda::mlp_lstm_trainer<float>;
