#pragma once
// The "inference" benchmark of seedrl_bench_gpu: latency (one infer() call, from host inputs to
// host outputs, as the learner's inference loop sees it) and throughput (rows/s) per batch size
// of cuda::inference_engine against cpu_inference_engine (one worker per hardware thread) on
// the same network: the Atari net (frame-stacked Nature CNN on 84x84x4, dense 512, LSTM 512,
// 6 actions) and a CartPole-sized MLP + LSTM. Defined in bench_inference.cpp (a C++ unit with
// Eigen); the engines are instantiated in train_step_instance.cu.

namespace seedrl::bench_gpu {

/// Prints one table row per network, engine and batch size; `quick` runs fewer calls.
void bench_inference(bool quick);

}  // namespace seedrl::bench_gpu
