#pragma once
/// \file
/// The GPU side of `cuda::pixel_lstm_trainer` (seedrl/cuda/pixel_lstm_trainer.hpp): its members
/// that touch the device, over `backend_pixel_lstm_trainer<cuda_backend, S, TorsoConfig>`. Include
/// it from exactly one .cu file of a program, compiled by nvcc, next to one explicit instantiation
/// per scalar type the program uses:
///
///   #include "seedrl/cuda/pixel_lstm_trainer.cuh"
///   template class seedrl::cuda::pixel_lstm_trainer<float>;  // Nature CNN
///   template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;
///
/// Includes no Eigen (only the network's config headers), so nvcc never compiles the CPU
/// network. Its helpers have names of their own, so a program may include this file and
/// mlp_lstm_trainer.cuh in the same .cu file.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/cuda/cuda_backend.cuh"
#include "seedrl/cuda/device.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/cuda/pixel_lstm_trainer.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/train/pixel_lstm_trainer.hpp"

namespace seedrl::cuda {

namespace detail {

/// Throws std::runtime_error with what to do when CUDA device `device` cannot be used by a
/// pixel trainer.
inline void require_pixel_trainer_device(int device) {
  const std::string who =
      "seedrl::cuda::pixel_lstm_trainer (device " + std::to_string(device) + ")";
  require_device(who);
  const device_presence p = query_devices();
  if (device < 0 || device >= p.count) {
    throw std::runtime_error("seedrl: " + who + " asks for CUDA device " + std::to_string(device) +
                             ", but this machine has " + std::to_string(p.count) +
                             " usable device(s), numbered from 0; pick one of them (or set "
                             "CUDA_VISIBLE_DEVICES)");
  }
}

/// Makes `device` current on the calling thread (the learner may train on another thread than
/// the one that made the trainer).
inline void use_pixel_trainer_device(int device) {
  SEEDRL_CUDA_CHECK(cudaSetDevice(device));
}

}  // namespace detail

template <std::floating_point S, class TorsoConfig>
struct pixel_lstm_trainer<S, TorsoConfig>::impl {
  cuda_backend backend;
  std::unique_ptr<backend_pixel_lstm_trainer<cuda_backend, S, TorsoConfig>> trainer;
  std::string shape;  ///< the stacking and describe(agent config) of `trainer`'s network

  backend_pixel_lstm_trainer<cuda_backend, S, TorsoConfig>& model(const char* who) const {
    if (!trainer) {
      throw std::logic_error(std::string("seedrl::cuda::pixel_lstm_trainer::") + who +
                             ": no network on the GPU yet; call load_from_host or upload_model "
                             "first");
    }
    return *trainer;
  }
};

template <std::floating_point S, class TorsoConfig>
pixel_lstm_trainer<S, TorsoConfig>::pixel_lstm_trainer(int device) : device_(device) {
  detail::require_pixel_trainer_device(device);
  detail::use_pixel_trainer_device(device);
  impl_ = std::make_unique<impl>();
}

template <std::floating_point S, class TorsoConfig>
pixel_lstm_trainer<S, TorsoConfig>::~pixel_lstm_trainer() {
  if (impl_) {
    (void)cudaSetDevice(device_);  // free on the right device; a destructor cannot report
    impl_.reset();
  }
}

template <std::floating_point S, class TorsoConfig>
pixel_lstm_trainer<S, TorsoConfig>::pixel_lstm_trainer(pixel_lstm_trainer&&) noexcept = default;

template <std::floating_point S, class TorsoConfig>
pixel_lstm_trainer<S, TorsoConfig>& pixel_lstm_trainer<S, TorsoConfig>::operator=(
    pixel_lstm_trainer&& other) noexcept {
  if (this != &other) {
    if (impl_) {
      (void)cudaSetDevice(device_);
      impl_.reset();
    }
    device_ = other.device_;
    impl_ = std::move(other.impl_);
    loaded_ = std::exchange(other.loaded_, false);
    loaded_kind_ = other.loaded_kind_;
  }
  return *this;
}

template <std::floating_point S, class TorsoConfig>
void pixel_lstm_trainer<S, TorsoConfig>::upload_model(const frame_stack_config& stack,
                                                      const agent_config& agent,
                                                      std::span<const S> params) {
  detail::use_pixel_trainer_device(device_);
  std::string shape = "frames " + std::to_string(stack.height) + "x" + std::to_string(stack.width) +
                      "x" + std::to_string(stack.channels) + " depth " +
                      std::to_string(stack.depth) + (stack.channels_last ? " hwc " : " chw ") +
                      describe(agent);
  if (!impl_->trainer || impl_->shape != shape) {
    impl_->trainer.reset();  // free the old network's buffers before allocating the new one
    impl_->trainer = std::make_unique<backend_pixel_lstm_trainer<cuda_backend, S, TorsoConfig>>(
        impl_->backend, stack, agent);
    impl_->shape = std::move(shape);
  }
  impl_->trainer->set_parameters(params);
}

template <std::floating_point S, class TorsoConfig>
void pixel_lstm_trainer<S, TorsoConfig>::upload_optimizer(
    const adam_config& config, std::int64_t steps, std::span<const std::span<const S>> state) {
  detail::use_pixel_trainer_device(device_);
  impl_->model("upload_optimizer").set_optimizer(config, steps, state);
}

template <std::floating_point S, class TorsoConfig>
void pixel_lstm_trainer<S, TorsoConfig>::upload_optimizer(
    const rmsprop_config& config, std::int64_t steps, std::span<const std::span<const S>> state) {
  detail::use_pixel_trainer_device(device_);
  impl_->model("upload_optimizer").set_optimizer(config, steps, state);
}

template <std::floating_point S, class TorsoConfig>
train_step_result pixel_lstm_trainer<S, TorsoConfig>::step(const training_batch<S>& batch,
                                                           const impala_loss_config<S>& loss,
                                                           double max_grad_norm,
                                                           std::span<S> params_out) {
  detail::use_pixel_trainer_device(device_);
  auto& model = impl_->model("step");
  if (params_out.size() != model.num_parameters()) {
    throw std::invalid_argument("seedrl::cuda::pixel_lstm_trainer::step: params_out holds " +
                                std::to_string(params_out.size()) + " values, the network has " +
                                std::to_string(model.num_parameters()));
  }
  train_step_result r = model.train_step(batch, loss, max_grad_norm);
  model.get_parameters(params_out);  // waits for the step
  return r;
}

template <std::floating_point S, class TorsoConfig>
void pixel_lstm_trainer<S, TorsoConfig>::download_parameters(std::span<S> params_out) const {
  detail::use_pixel_trainer_device(device_);
  impl_->model("download_parameters").get_parameters(params_out);
}

template <std::floating_point S, class TorsoConfig>
std::int64_t pixel_lstm_trainer<S, TorsoConfig>::optimizer_steps() const {
  return impl_->model("optimizer_steps").optimizer_step_count();
}

template <std::floating_point S, class TorsoConfig>
std::vector<std::vector<S>> pixel_lstm_trainer<S, TorsoConfig>::optimizer_arrays() const {
  detail::use_pixel_trainer_device(device_);
  return impl_->model("optimizer_arrays").optimizer_state();
}

template <std::floating_point S, class TorsoConfig>
double pixel_lstm_trainer<S, TorsoConfig>::learning_rate() const {
  return impl_->model("learning_rate").learning_rate();
}

template <std::floating_point S, class TorsoConfig>
std::size_t pixel_lstm_trainer<S, TorsoConfig>::num_parameters() const {
  return impl_->trainer ? impl_->trainer->num_parameters() : 0;
}

}  // namespace seedrl::cuda
