// The GPU side of `--device cuda`: the one nvcc translation unit of seedrl_catch, where the CUDA
// trainers' kernels are instantiated (seedrl/cuda/pixel_lstm_trainer.hpp says why), one per
// network --network offers, and the CUDA inference engine of each (--inference-device cuda;
// seedrl/cuda/inference_engine.hpp).
#include "seedrl/cuda/inference_engine.cuh"
#include "seedrl/cuda/pixel_lstm_trainer.cuh"

template class seedrl::cuda::pixel_lstm_trainer<float>;
template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;
template class seedrl::cuda::inference_engine<
    float, seedrl::cuda::pixel_lstm_recipe<seedrl::nature_cnn_config>>;
template class seedrl::cuda::inference_engine<
    float, seedrl::cuda::pixel_lstm_recipe<seedrl::impala_resnet_config>>;
