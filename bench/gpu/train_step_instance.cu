// The GPU side of cuda::mlp_lstm_trainer<float> and cuda::pixel_lstm_trainer<float, *> for
// seedrl_bench_gpu's training-step benchmark (bench_train_step.cpp): the program's explicit
// instantiations. Compiled by nvcc; no Eigen.

#include "seedrl/cuda/mlp_lstm_trainer.cuh"
#include "seedrl/cuda/pixel_lstm_trainer.cuh"

template class seedrl::cuda::mlp_lstm_trainer<float>;
template class seedrl::cuda::pixel_lstm_trainer<float>;
template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;

// The inference engines bench_inference.cpp times, in the same unit.
#include "seedrl/cuda/inference_engine.cuh"

template class seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe>;
template class seedrl::cuda::inference_engine<
    float, seedrl::cuda::pixel_lstm_recipe<seedrl::nature_cnn_config>>;
