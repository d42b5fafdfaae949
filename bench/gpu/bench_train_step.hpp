#pragma once
// The "training step" benchmark of seedrl_bench_gpu: samples/s (T*B per step) of one
// mlp_lstm_agent training step on the GPU (cuda::mlp_lstm_trainer, what the learner runs with
// --device cuda) against the same step on the CPU in the same run: host_trainer +
// mlp_lstm_agent (the learner's default) and backend_mlp_lstm_trainer on host_backend (the GPU
// trainer's own code on the CPU); then the Atari pixel networks (Nature CNN and IMPALA ResNet,
// cuda::pixel_lstm_trainer with cuDNN convolutions) against host_trainer. Defined in
// bench_train_step.cpp, a C++ unit with Eigen; the GPU trainers' kernels are instantiated in
// train_step_instance.cu.

namespace seedrl::bench_gpu {

/// Prints one table row per network and trainer; `quick` runs fewer steps.
void bench_train_step(bool quick);

}  // namespace seedrl::bench_gpu
