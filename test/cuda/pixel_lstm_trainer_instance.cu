// The GPU side of cuda::pixel_lstm_trainer<float> over every torso for the tests: the explicit
// instantiations a program needs (see seedrl/cuda/pixel_lstm_trainer.hpp). Compiled by nvcc;
// includes no Eigen.

#include "seedrl/cuda/pixel_lstm_trainer.cuh"

template class seedrl::cuda::pixel_lstm_trainer<float>;
template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;
template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::small_conv_torso_config>;

// A user's own conv stack (test/tiny_conv_stack.hpp), named only through backend_conv_stack.
#include "../tiny_conv_stack.hpp"

template class seedrl::cuda::pixel_lstm_trainer<float, seedrl_test::tiny_conv_config>;

// The CUDA inference engine for the same networks, in the same unit.
#include "seedrl/cuda/inference_engine.cuh"

template class seedrl::cuda::inference_engine<
    float, seedrl::cuda::pixel_lstm_recipe<seedrl::nature_cnn_config>>;
template class seedrl::cuda::inference_engine<
    float, seedrl::cuda::pixel_lstm_recipe<seedrl::impala_resnet_config>>;
template class seedrl::cuda::inference_engine<
    float, seedrl::cuda::pixel_lstm_recipe<seedrl::small_conv_torso_config>>;
template class seedrl::cuda::inference_engine<
    float, seedrl::cuda::pixel_lstm_recipe<seedrl_test::tiny_conv_config>>;
