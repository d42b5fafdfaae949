#pragma once
/// \file
/// The GPU trainer a pixel program offers with `--device cuda`, chosen once for every pixel
/// program: `cuda::pixel_lstm_trainer<float, TorsoConfig>` in a program built with CUDA
/// (SEEDRL_HAS_CUDA; the program instantiates it in a .cu file of its own, as
/// examples/catch/cuda_trainer.cu does), otherwise `no_gpu_trainer`, with which `--device cuda`
/// says how to build with CUDA. Use it as `pixel_recipe<pixel_gpu_trainer>`, or as
/// `pixel_gpu_recipe` with `app::program::run`: without CUDA that is exactly `pixel_recipe<>`,
/// the program compiled into seedrl::app (clang does not take an alias template for the
/// template it names, so `pixel_recipe<pixel_gpu_trainer>` would be another type there).

#include "seedrl/app/pixel_recipe.hpp"
#if defined(SEEDRL_HAS_CUDA)
#include "seedrl/cuda/pixel_lstm_trainer.hpp"
#endif

namespace seedrl::app {

#if defined(SEEDRL_HAS_CUDA)
template <class TorsoConfig>
using pixel_gpu_trainer = cuda::pixel_lstm_trainer<float, TorsoConfig>;
using pixel_gpu_recipe = pixel_recipe<pixel_gpu_trainer>;
#else
template <class TorsoConfig>
using pixel_gpu_trainer = no_gpu_trainer<TorsoConfig>;
using pixel_gpu_recipe = pixel_recipe<>;
#endif

}  // namespace seedrl::app
