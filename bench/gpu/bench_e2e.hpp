#pragma once
// The "end to end" benchmark of seedrl_bench_gpu (`seedrl_bench_gpu --e2e SECONDS`): the SEED
// learner with the Atari network (frame_stacked<nature_cnn_lstm_agent<float>>: 84x84 frames,
// 4-frame stacks, Nature CNN 32-64-64, dense 512, LSTM 512) and Catch actors as threads of the
// same process on the in-process transport (no sockets, no Asio, so the device machine builds
// it), once with inference and training on the GPU (cuda::inference_engine and
// cuda::pixel_lstm_trainer) and once on the CPU (cpu_inference_engine and host_trainer, the
// thread counts the programs pick for this machine's cores), with the same actors and settings
// (seedrl_catch's pixel defaults: 8 envs per actor, inference batch 32, T = 20, B = 32, Adam
// 4.8e-4). Prints frames/s per run and the GPU/CPU ratio as table rows. Defined in
// bench_e2e.cpp (a C++ unit with Eigen); the GPU engine and trainer are instantiated in
// train_step_instance.cu.

namespace seedrl::bench_gpu {

/// Runs the CPU learner, then the GPU one (skipped, saying so, without a usable device), each
/// for about `seconds` of wall clock, with `actors` actor threads (0: one per hardware thread).
/// Returns 0 when every run that could start ran, 1 when one failed.
int bench_e2e(double seconds, int actors);

}  // namespace seedrl::bench_gpu
